//! The faults of the catalogue: a response's frames broken on purpose, each in the way a
//! receiver must detect (the rule is [`FaultKind::rule`]).

use super::cases::{Fault, FaultKind};
use super::layout::Layout;
use crate::fault_builder::{after_first, flip, reseal, serialise, OutFrame};
use crate::lz4_by_hand::{lz4_block_frame, one_match_block};
use cqlframe::connection::version_flags;
use cqlframe::envelope::RESPONSE_BIT;
use cqlframe::format::{Format, MAX_PAYLOAD};

/// The bytes of a faulty response, and what happened.
pub struct Faulted {
    pub bytes: Vec<u8>,
    /// Close the connection after writing (truncation faults).
    pub close: bool,
    pub note: String,
}

/// Why a fault could not be applied on this connection.
pub struct NotApplicable(pub String);

/// An envelope that answers no request: a Void RESULT on stream 0x7ff0, which drivers leave
/// unused. An overshooting sequence carries it, and so does the unpaired response before READY.
/// On v6-beta it has USE_BETA, so that a receiver has nothing to refuse it for but its stream.
pub fn stray_envelope(version_byte: u8) -> Vec<u8> {
    cqlframe::envelope::envelope_bytes(
        version_byte,
        version_flags(version_byte & !RESPONSE_BIT),
        0x7ff0,
        cqlframe::envelope::Opcode::Result,
        &1i32.to_be_bytes(),
    )
}

/// The header of an unframed READY on `stream` whose body length is -2: a receiver cannot tell
/// where the next envelope begins (ENV-3), so no body follows it.
pub fn negative_length_header(version_byte: u8, stream: i16) -> Vec<u8> {
    let mut header = cqlframe::envelope::envelope_bytes(
        version_byte,
        version_flags(version_byte & !RESPONSE_BIT),
        stream,
        cqlframe::envelope::Opcode::Ready,
        &[],
    );
    header[5..].copy_from_slice(&(-2i32).to_be_bytes());
    header
}

/// Row values repeat with this period (`database::row_value`: byte i is 7i + 31k + 1 mod 256).
const ROW_VALUE_PERIOD: usize = 256;

/// A self-contained LZ4 frame holding `block`, declared as `declared` content bytes, with a valid
/// CRC24 and trailer, followed by `frames`.
fn bad_block_first(layout: &Layout, block: &[u8], declared: u32, frames: Vec<OutFrame>) -> Vec<u8> {
    let mut out = lz4_block_frame(layout.settings, block, declared);
    out.extend(serialise(&frames));
    out
}

/// Applies `fault` to the response `envelope`, laid out by `layout`.
pub fn apply(fault: &Fault, layout: &Layout, envelope: &[u8]) -> Result<Faulted, NotApplicable> {
    let mut frames = layout.frames(std::slice::from_ref(&envelope.to_vec()));
    let is_sequence = frames.len() > 1 || !frames[0].header.self_contained;
    let need_sequence = |what: &str| {
        if is_sequence {
            Ok(())
        } else {
            Err(NotApplicable(format!(
                "{what} needs the response to be a sequence ({} bytes fit in one frame)",
                envelope.len()
            )))
        }
    };
    let need_lz4 = || {
        if layout.settings.format == Format::Lz4 {
            Ok(())
        } else {
            Err(NotApplicable(
                "the connection did not negotiate LZ4 (COMPRESSION=lz4)".into(),
            ))
        }
    };
    let ok = |bytes, note: String| {
        Ok(Faulted {
            bytes,
            close: false,
            note,
        })
    };
    match fault.kind {
        FaultKind::HeaderBitflip => {
            let hbits = frames[0].header_len() * 8;
            let bit = fault.bit.unwrap_or(3) % hbits;
            let mut bytes = serialise(&frames);
            flip(&mut bytes, bit);
            ok(
                bytes,
                format!("flipped bit {bit} of the first frame's header"),
            )
        }
        FaultKind::PayloadBitflip => {
            let len = frames[0].payload.len();
            if len == 0 {
                return Err(NotApplicable("empty payload".into()));
            }
            let bit = fault.bit.unwrap_or(len * 4) % (len * 8);
            let at = frames[0].header_len() * 8 + bit;
            let mut bytes = serialise(&frames);
            flip(&mut bytes, at);
            ok(
                bytes,
                format!("flipped payload bit {bit} of the first frame"),
            )
        }
        FaultKind::TrailerBitflip => {
            let bit = fault.bit.unwrap_or(0) % 32;
            frames[0].trailer ^= 1 << bit;
            ok(
                serialise(&frames),
                format!("flipped trailer bit {bit} of the first frame"),
            )
        }
        FaultKind::ChecksumBit => {
            for f in &mut frames {
                f.mismatch_checksum_bit();
            }
            ok(
                serialise(&frames),
                format!(
                    "checksum bit {} on every frame of the response ({} negotiated), CRC24 and trailer valid",
                    u8::from(frames[0].header.checksum_bit),
                    layout.settings.checksum.name()
                ),
            )
        }
        FaultKind::Lz4Length => {
            need_lz4()?;
            let Some(f) = frames.iter_mut().find(|f| f.header.uncompressed_length > 0) else {
                return Err(NotApplicable("no compressed frame in the response".into()));
            };
            f.header.uncompressed_length += 1;
            reseal(&mut f.header);
            ok(
                serialise(&frames),
                "uncompressed length of the first compressed frame is one more than its block yields (CRCs valid)"
                    .into(),
            )
        }
        FaultKind::Lz4BadOffset => {
            need_lz4()?;
            // One literal 'A', then a match 5 bytes back (before the output's start), then the
            // 5 closing literals: 10 bytes of output if it were valid.
            let block = [0x10, b'A', 0x05, 0x00, 0x50, b'x', b'x', b'x', b'x', b'x'];
            ok(
                bad_block_first(layout, &block, 10, frames),
                "a self-contained frame whose LZ4 block refers before the start of its output precedes the response (CRCs valid)"
                    .into(),
            )
        }
        FaultKind::Lz4EndsAfterMatch | FaultKind::Lz4LastMatchTooLate => {
            need_lz4()?;
            // The response itself, in one block whose one match takes bytes of the last row's
            // value from a period back: a decoder that skips the check gets the right rows.
            let n = envelope.len();
            let (start, length, what) = match fault.kind {
                FaultKind::Lz4EndsAfterMatch => (n - 8, 8, "ends with a match"),
                _ => (
                    n - 11,
                    4,
                    "has its last match start 11 bytes before the end",
                ),
            };
            if n > MAX_PAYLOAD
                || start < ROW_VALUE_PERIOD
                || envelope[start..start + length]
                    != envelope[start - ROW_VALUE_PERIOD..start - ROW_VALUE_PERIOD + length]
            {
                return Err(NotApplicable(format!(
                    "needs a response in one frame that ends with 12 bytes of a row value at least {ROW_VALUE_PERIOD} bytes long ({n} bytes)"
                )));
            }
            let block = one_match_block(envelope, start, ROW_VALUE_PERIOD as u16, length);
            ok(
                bad_block_first(layout, &block, n as u32, Vec::new()),
                format!(
                    "the response in one self-contained frame whose LZ4 block {what} (CRCs valid)"
                ),
            )
        }
        FaultKind::TruncateSequence => {
            need_sequence("truncate-sequence")?;
            let n = fault.frames.unwrap_or(1).clamp(1, frames.len() - 1);
            Ok(Faulted {
                bytes: serialise(&frames[..n]),
                close: true,
                note: format!(
                    "sent {n} of the {} frames of the sequence, then closed the connection",
                    frames.len()
                ),
            })
        }
        FaultKind::TruncateFrame => {
            let mut bytes = Vec::new();
            frames[0].write(&mut bytes);
            let keep = bytes.len() / 2;
            bytes.truncate(keep);
            Ok(Faulted {
                bytes,
                close: true,
                note: format!("sent {keep} bytes of the first frame, then closed the connection"),
            })
        }
        FaultKind::Overshoot => {
            need_sequence("overshoot")?;
            let last = frames.len() - 1;
            let mut content = frames[last].content.clone();
            content.extend_from_slice(&stray_envelope(envelope[0]));
            if content.len() > MAX_PAYLOAD {
                return Err(NotApplicable("last frame already full".into()));
            }
            frames[last] = layout.frame(&content, false);
            ok(
                serialise(&frames),
                "the sequence's last frame carries 13 bytes past the envelope (a Void RESULT on stream 0x7ff0)"
                    .into(),
            )
        }
        FaultKind::Interleave => {
            need_sequence("interleave")?;
            after_first(&mut frames, layout.frame(&[], true));
            ok(
                serialise(&frames),
                "an empty self-contained frame between the first and second frames of the sequence"
                    .into(),
            )
        }
        FaultKind::EmptyContinuation => {
            need_sequence("empty-continuation")?;
            after_first(&mut frames, layout.frame(&[], false));
            ok(
                serialise(&frames),
                "an empty non-self-contained frame inside the sequence".into(),
            )
        }
        FaultKind::PartialEnvelope => {
            if envelope.len() > MAX_PAYLOAD {
                return Err(NotApplicable(
                    "partial-envelope needs a response that fits in one frame".into(),
                ));
            }
            let half = envelope.len() / 2;
            let a = layout.frame(&envelope[..half], true);
            let b = layout.frame(&envelope[half..], true);
            ok(
                serialise(&[a, b]),
                format!(
                    "the response cut in two self-contained frames ({half} + {} bytes)",
                    envelope.len() - half
                ),
            )
        }
        FaultKind::Unframed => ok(
            envelope.to_vec(),
            "the response written as a bare envelope, unframed, after the switch".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::cases::ServerScript;
    use crate::cql::{database, messages};
    use cqlframe::checksum::PayloadChecksum;
    use cqlframe::format::FrameSettings;
    use cqlframe::frame_decoder::FrameDecoder;
    use cqlframe::header::FrameHeader;

    /// The first frame of a bad-block fault applied to `response`: the rule the reference fails
    /// it with, and what a decoder that skips the check (lz4_flex) makes of its block.
    fn first_frame(kind: FaultKind, response: &[u8]) -> (String, Option<Vec<u8>>) {
        let settings = FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32);
        let layout = Layout::new(settings, &ServerScript::default());
        let fault = Fault {
            kind,
            bit: None,
            frames: None,
        };
        let Ok(faulted) = apply(&fault, &layout, response) else {
            panic!("{kind:?} not applicable");
        };
        let header = FrameHeader::read(Format::Lz4, &faulted.bytes[..8]).unwrap();
        let block = &faulted.bytes[8..8 + header.payload_length as usize];
        let lenient = lz4_flex::block::decompress(block, header.uncompressed_length as usize).ok();
        let error = FrameDecoder::new(settings)
            .decode(&faulted.bytes, |_| Ok(()))
            .expect_err("the reference accepts the bad block");
        (error.rule().to_string(), lenient)
    }

    #[test]
    fn bad_blocks_fail_the_rule_their_fault_names() {
        let rows = database::test_table(1, 300);
        let response = cqlframe::envelope::envelope_bytes(
            0x85,
            0,
            1,
            cqlframe::envelope::Opcode::Result,
            &messages::rows_result(&rows),
        );
        assert_eq!(first_frame(FaultKind::Lz4BadOffset, &response).0, "LZ4-4");
        assert_eq!(
            first_frame(FaultKind::Lz4EndsAfterMatch, &response).0,
            "LZ4-4"
        );
        // Only the end-of-block rules break: a decoder that skips them gets the response.
        let (rule, lenient) = first_frame(FaultKind::Lz4LastMatchTooLate, &response);
        assert_eq!(rule, "LZ4-6");
        assert_eq!(lenient.as_deref(), Some(&response[..]));
    }
}
