//! How the conformance server cuts its responses into frames: split sizes, packing, stored LZ4,
//! reserved bits, empty frames, each an [`OutFrame`] a fault ([`super::faults`]) can change.

use super::cases::ServerScript;
use crate::fault_builder::{reseal, OutFrame};
use cqlframe::format::{FrameSettings, MAX_PAYLOAD};

/// The frame layout of the server's responses.
#[derive(Clone, Debug)]
pub struct Layout {
    pub settings: FrameSettings,
    pub capacity: usize,
    pub split_at: usize,
    pub first_piece: Option<usize>,
    pub last_piece: Option<usize>,
    pub pack: bool,
    pub lz4_store: bool,
    pub reserved_bits: u8,
}

impl Layout {
    pub fn new(settings: FrameSettings, script: &ServerScript) -> Layout {
        let capacity = script.capacity.clamp(1, MAX_PAYLOAD);
        Layout {
            settings,
            capacity,
            split_at: script.split_at.unwrap_or(capacity).max(1),
            first_piece: script.first_piece,
            last_piece: script.last_piece,
            pack: script.pack,
            lz4_store: script.lz4_store,
            reserved_bits: script.reserved_bits,
        }
    }

    /// A frame carrying `content`, as the layout says (compressed unless stored or not shorter).
    pub fn frame(&self, content: &[u8], self_contained: bool) -> OutFrame {
        let mut frame = OutFrame::new(self.settings, content, self_contained, !self.lz4_store);
        if self.reserved_bits != 0 {
            frame.header.reserved = self.reserved_bits;
            reseal(&mut frame.header);
        }
        frame
    }

    /// Frames for `envelopes`: packed (or one per envelope) into self-contained frames up to the
    /// capacity; an envelope of `split_at` bytes or more becomes a sequence (its first and last
    /// frames sized by `first_piece` and `last_piece` where the script sets them).
    pub fn frames(&self, envelopes: &[Vec<u8>]) -> Vec<OutFrame> {
        let mut out = Vec::new();
        let mut batch: Vec<u8> = Vec::new();
        for env in envelopes {
            if env.len() >= self.split_at {
                if !batch.is_empty() {
                    out.push(self.frame(&batch, true));
                    batch.clear();
                }
                let first = self
                    .first_piece
                    .unwrap_or(self.capacity)
                    .clamp(1, self.capacity);
                let last = self
                    .last_piece
                    .map(|n| n.clamp(1, self.capacity))
                    .filter(|&n| n < env.len())
                    .unwrap_or(0);
                let (mut rest, tail) = env.split_at(env.len() - last);
                let mut piece = first;
                while !rest.is_empty() {
                    let n = piece.min(rest.len());
                    out.push(self.frame(&rest[..n], false));
                    rest = &rest[n..];
                    piece = self.capacity;
                }
                if !tail.is_empty() {
                    out.push(self.frame(tail, false));
                }
                continue;
            }
            if !batch.is_empty() && (!self.pack || batch.len() + env.len() > self.capacity) {
                out.push(self.frame(&batch, true));
                batch.clear();
            }
            batch.extend_from_slice(env);
        }
        if !batch.is_empty() {
            out.push(self.frame(&batch, true));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlframe::checksum::PayloadChecksum;
    use cqlframe::format::Format;

    fn contents(script: &ServerScript, envelope_len: usize) -> Vec<usize> {
        let settings = FrameSettings {
            format: Format::Uncompressed,
            checksum: PayloadChecksum::Crc32,
        };
        Layout::new(settings, script)
            .frames(&[vec![7; envelope_len]])
            .iter()
            .map(|f| f.content.len())
            .collect()
    }

    #[test]
    fn last_piece_ends_every_sequence() {
        let script: ServerScript =
            toml::from_str("capacity = 100\nsplit_at = 50\nlast_piece = 1").unwrap();
        assert_eq!(contents(&script, 300), [100, 100, 99, 1]);
        assert_eq!(contents(&script, 60), [59, 1]);
        let whole: ServerScript = toml::from_str("capacity = 100\nsplit_at = 50").unwrap();
        assert_eq!(contents(&whole, 300), [100, 100, 100]);
    }
}
