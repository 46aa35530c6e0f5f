//! Frames built part by part so that they can be broken on purpose: the one fault builder of
//! the conformance server (its responses, [`crate::conformance::faults`]) and of the probe (its
//! requests). Each fault is a change to a well-formed frame that a receiver must detect.

use cqlframe::checksum::crc24;
use cqlframe::encoder::{frame_parts, write_raw};
use cqlframe::format::FrameSettings;
use cqlframe::header::FrameHeader;

/// One frame to write: every part explicit, so that a fault can change any of them.
#[derive(Clone, Debug)]
pub struct OutFrame {
    pub header: FrameHeader,
    pub payload: Vec<u8>,
    pub trailer: u32,
    /// The content the payload carries (before compression).
    pub content: Vec<u8>,
}

impl OutFrame {
    /// A well-formed frame of `settings` carrying `content`; under LZ4 compressed when
    /// `compress` is set and the block is shorter, stored otherwise.
    pub fn new(
        settings: FrameSettings,
        content: &[u8],
        self_contained: bool,
        compress: bool,
    ) -> OutFrame {
        let mut scratch = Vec::new();
        let (header, payload) =
            frame_parts(settings, content, self_contained, compress, &mut scratch);
        let payload = payload.to_vec();
        let trailer = settings.checksum.compute(&payload);
        OutFrame {
            header,
            payload,
            trailer,
            content: content.to_vec(),
        }
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        write_raw(&self.header, &self.payload, self.trailer, out);
    }

    pub fn header_len(&self) -> usize {
        self.header.format.header_len()
    }

    /// The checksum bit turned to name the other payload checksum than the trailer's; the
    /// CRC24 recomputed, so that only the disagreement is wrong (RECV-3).
    pub fn mismatch_checksum_bit(&mut self) {
        self.header.checksum_bit = !self.header.checksum_bit;
        reseal(&mut self.header);
    }
}

/// The bytes of `frames`, one after the other.
pub fn serialise(frames: &[OutFrame]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        f.write(&mut out);
    }
    out
}

/// Recomputes the stored CRC24 of `header` after a field changed.
pub fn reseal(header: &mut FrameHeader) {
    let n = header.format.header_len() - 3;
    header.crc24 = crc24(&header.word().to_le_bytes()[..n]);
}

/// Flips bit `bit` of `bytes` (bit 0 is the low bit of byte 0).
pub fn flip(bytes: &mut [u8], bit: usize) {
    bytes[bit / 8] ^= 1 << (bit % 8);
}

/// `frame` between the first and the second frame of the sequence `frames` (RECV-8 when it is
/// self-contained, RECV-10 when it is an empty continuation).
pub fn after_first(frames: &mut Vec<OutFrame>, frame: OutFrame) {
    frames.insert(1, frame);
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlframe::checksum::PayloadChecksum;
    use cqlframe::encoder::{FrameEncoder, SplitPolicy};
    use cqlframe::format::Format;

    /// Unbroken, the builder's frames are the encoder's, byte for byte: a fault is then the
    /// only thing wrong with what the server or the probe writes.
    #[test]
    fn unbroken_frames_are_the_encoders() {
        let content: Vec<u8> = (0..600u32).map(|i| (i % 7) as u8).collect();
        for format in [Format::Uncompressed, Format::Lz4] {
            for checksum in [PayloadChecksum::Crc32, PayloadChecksum::Crc32c] {
                let settings = FrameSettings::new(format, checksum);
                for self_contained in [true, false] {
                    let mut encoded = Vec::new();
                    FrameEncoder::new(settings, SplitPolicy::DRIVERS)
                        .write_frame(&content, self_contained, &mut encoded)
                        .unwrap();
                    let built = OutFrame::new(settings, &content, self_contained, true);
                    assert_eq!(serialise(&[built]), encoded, "{format:?} {checksum:?}");
                }
            }
        }
    }

    #[test]
    fn a_mismatched_checksum_bit_is_the_only_change() {
        let settings = FrameSettings::new(Format::Uncompressed, PayloadChecksum::Crc32);
        let mut frame = OutFrame::new(settings, b"abc", true, true);
        let before = frame.header;
        frame.mismatch_checksum_bit();
        assert_ne!(frame.header.checksum_bit, before.checksum_bit);
        assert_eq!(frame.header.payload_length, before.payload_length);
        let bytes = serialise(&[frame]);
        let read = FrameHeader::read(Format::Uncompressed, &bytes[..6]).unwrap();
        assert_eq!(read.checksum_bit, !before.checksum_bit);
    }
}
