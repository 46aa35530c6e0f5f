//! Chunking invariance: the stream decoded in fuzzer-chosen chunks (empty ones included) gives
//! the same transcript (frames, envelopes, error and its offset) as the whole stream at once.
//! Input layout: see `cqlframe_fuzz` (src/lib.rs); the same as `decode_whole`.
#![no_main]

use cqlframe_fuzz::DecodeInput;
use cqlframe_harness::transcript::Transcript;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(input) = DecodeInput::parse(data) else {
        return;
    };
    let whole = Transcript::decode(input.settings, input.max_body, [input.stream]);
    let chunks = input.chunking.chunks(input.stream);
    let chunked = Transcript::decode(input.settings, input.max_body, chunks.iter().copied());
    assert_eq!(
        whole,
        chunked,
        "chunking changed the transcript (chunk sizes {:?})",
        chunks.iter().map(|c| c.len()).collect::<Vec<_>>()
    );
});
