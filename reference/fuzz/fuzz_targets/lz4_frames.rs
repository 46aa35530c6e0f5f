//! LZ4 frames with a valid header CRC24 and a valid payload checksum around a fuzzer-provided
//! block, so every input reaches the decompressor (RECV-1 and RECV-2 pass by construction).
//!
//! Input layout:
//! ```text
//! byte 0    bit 0: checksum (0 crc32, 1 crc32c)   bit 1: self-contained
//!           bit 2: feed the frame in two chunks, cut at byte 1 (bits 3-7 * 4 + 1)
//! bytes 1-3 declared uncompressed length, little-endian, low 17 bits (0 = stored)
//! rest      the block (cut to 131071 bytes)
//! ```
//! The frame must decode to content of exactly the declared length, equal to what an
//! independent LZ4 decoder (`cqlframe_fuzz::lz4_reference_decode`) makes of the block, or fail
//! with LZ4-1 / LZ4-4 exactly when that decoder rejects the block, and with LZ4-6 exactly when
//! it decodes the block but the last match starts less than 12 or ends less than 5 bytes before
//! the end (LZ4's end-of-block rules).
#![no_main]

use cqlframe::checksum::PayloadChecksum;
use cqlframe::encoder::write_raw;
use cqlframe::format::{Format, FrameSettings, MAX_PAYLOAD};
use cqlframe::frame_decoder::FrameDecoder;
use cqlframe::header::FrameHeader;
use cqlframe_fuzz::lz4_reference_decode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let flags = data[0];
    let declared = u32::from_le_bytes([data[1], data[2], data[3], 0]) & MAX_PAYLOAD as u32;
    let block = &data[4..data.len().min(4 + MAX_PAYLOAD)];
    let checksum = if flags & 1 == 0 {
        PayloadChecksum::Crc32
    } else {
        PayloadChecksum::Crc32c
    };
    let settings = FrameSettings::new(Format::Lz4, checksum);
    let header = FrameHeader::new(
        Format::Lz4,
        block.len() as u32,
        declared,
        flags & 2 != 0,
        settings.checksum_bit(),
    );
    let mut wire = Vec::with_capacity(header.frame_len());
    write_raw(&header, block, checksum.compute(block), &mut wire);
    assert_eq!(wire.len(), header.frame_len());

    let mut decoder = FrameDecoder::new(settings);
    let mut got: Option<Vec<u8>> = None;
    let mut on_frame = |frame: cqlframe::frame_decoder::Frame<'_>| {
        assert!(got.is_none(), "two frames from one");
        assert_eq!(frame.header, header);
        assert_eq!(frame.payload, block);
        got = Some(frame.content.to_vec());
        Ok(())
    };
    let cut = if flags & 4 != 0 {
        (usize::from(flags >> 3) * 4 + 1).min(wire.len())
    } else {
        wire.len()
    };
    let result = decoder
        .decode(&wire[..cut], &mut on_frame)
        .and_then(|()| decoder.decode(&wire[cut..], &mut on_frame))
        .and_then(|()| decoder.finish());

    if declared == 0 {
        // LZ4-2: stored, the payload is the content.
        result.expect("stored LZ4 frame with valid checksums fails");
        assert_eq!(got.as_deref(), Some(block), "stored content");
        return;
    }
    let declared = declared as usize;
    let reference = lz4_reference_decode(block, declared);
    let decodes = matches!(&reference, Ok((out, _)) if out.len() == declared);
    let keeps_end_of_block = match &reference {
        Ok((_, Some((start, end)))) => start + 12 <= declared && end + 5 <= declared,
        _ => true,
    };
    let valid = decodes && keeps_end_of_block;
    match result {
        Ok(()) => {
            let content = got.expect("Ok without a frame");
            assert_eq!(
                content.len(),
                declared,
                "LZ4-4: content length is not the declared length"
            );
            assert!(
                valid,
                "accepted a block the reference decoder rejects: {reference:?}"
            );
            assert_eq!(
                Ok(content),
                reference.map(|(out, _)| out),
                "content differs from the reference decoder"
            );
        }
        Err(e) => {
            let expected: &[&str] = if decodes {
                &["LZ4-6"]
            } else {
                &["LZ4-1", "LZ4-4"]
            };
            assert!(expected.contains(&e.rule()), "unexpected error {e}");
            assert_eq!(e.offset, 0);
            assert!(
                !valid,
                "rejected a valid block ({e}); reference gives {} bytes",
                declared
            );
        }
    }
});
