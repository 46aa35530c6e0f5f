//! The whole stream in one `decode` call, then `finish`, with invariants checked on every event.
//! Input layout: see `cqlframe_fuzz` (src/lib.rs).
#![no_main]

use cqlframe::decoder::{Decoder, Event};
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::format::Format;
use cqlframe::ErrorKind;
use cqlframe_fuzz::DecodeInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(input) = DecodeInput::parse(data) else {
        return;
    };
    let settings = input.settings;
    let mut decoder = Decoder::new(settings, input.max_body);
    let mut next_offset = 0u64;
    let mut contents = Vec::new();
    let mut envelopes: Vec<Vec<u8>> = Vec::new();
    let result = decoder.decode(input.stream, |event| {
        match event {
            Event::Frame(frame) => {
                let h = frame.header;
                // Frames are contiguous from offset 0 and carry exactly what their header says.
                assert_eq!(frame.offset, next_offset, "frame offset");
                next_offset += h.frame_len() as u64;
                assert_eq!(h.format, settings.format);
                assert_eq!(
                    h.checksum_bit,
                    settings.checksum_bit(),
                    "RECV-3 not enforced"
                );
                assert_eq!(frame.payload.len(), h.payload_length as usize);
                assert_eq!(frame.content.len(), h.content_len());
                assert_eq!(
                    frame.payload_checksum,
                    settings.checksum.compute(frame.payload),
                    "RECV-2 not enforced"
                );
                if settings.format == Format::Uncompressed || h.uncompressed_length == 0 {
                    assert_eq!(frame.content, frame.payload);
                }
                contents.extend_from_slice(frame.content);
            }
            Event::Envelope(envelope) => {
                // Every envelope body is exactly as long as its header says, within the limit.
                let len = envelope.header.length;
                assert!(len >= 0, "negative envelope length accepted (ENV-3)");
                assert_eq!(envelope.body.len(), len as usize, "envelope body length");
                assert!(len as u32 <= input.max_body, "RECV-12 not enforced");
                envelopes.push(envelope.to_bytes());
            }
            // The checks above cover every event; a new one must be added here.
            other => panic!("an event this target does not know: {other:?}"),
        }
        Ok(())
    });
    if let Err(e) = &result {
        assert_ne!(e.kind, ErrorKind::AfterError, "first error is AfterError");
        // RECV-11: nothing decodes after an error, whatever follows.
        for more in [&[][..], input.stream, &[0u8; 16][..]] {
            let again = decoder.decode(more, |_| panic!("event after an error"));
            assert!(
                matches!(again, Err(ref e) if e.kind == ErrorKind::AfterError),
                "RECV-11: {again:?}"
            );
        }
        let _ = decoder.finish();
        return;
    }
    if decoder.finish().is_err() {
        return;
    }
    // A clean stream: the envelopes are exactly the concatenated frame contents...
    assert_eq!(
        envelopes.concat(),
        contents,
        "envelopes do not tile the frame contents"
    );
    // ...and survive a re-encoding under the same settings with any split capacity.
    let policy = SplitPolicy::with_capacity(input.capacity).expect("capacity in range");
    let mut encoder = FrameEncoder::new(settings, policy);
    let mut wire = Vec::new();
    encoder.write_envelopes(envelopes.iter().map(Vec::as_slice), &mut wire);
    let mut decoder = Decoder::new(settings, input.max_body);
    let mut again = Vec::new();
    decoder
        .decode(&wire, |event| {
            if let Event::Envelope(envelope) = event {
                again.push(envelope.to_bytes());
            }
            Ok(())
        })
        .and_then(|()| decoder.finish())
        .expect("re-encoded envelopes decode");
    assert_eq!(again, envelopes, "re-encoding round trip");
});
