//! How the conformance server cuts its responses into frames: split sizes, packing, stored LZ4,
//! reserved bits, empty frames. Every part of a frame stays explicit, so that a fault
//! ([`super::faults`]) can change any of them.

use super::cases::ServerScript;
use cqlframe::checksum::crc24;
use cqlframe::encoder::frame_parts;
use cqlframe::format::{FrameSettings, MAX_PAYLOAD};
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
    pub fn write(&self, out: &mut Vec<u8>) {
        cqlframe::encoder::write_raw(&self.header, &self.payload, self.trailer, out);
    }

    pub fn header_len(&self) -> usize {
        self.header.format.header_len()
    }
}

/// Recomputes the stored CRC24 of `header` after a field changed.
pub fn reseal(header: &mut FrameHeader) {
    let n = header.format.header_len() - 3;
    header.crc24 = crc24(&header.word().to_le_bytes()[..n]);
}

/// The frame layout of the server's responses.
#[derive(Clone, Debug)]
pub struct Layout {
    pub settings: FrameSettings,
    pub capacity: usize,
    pub split_at: usize,
    pub first_piece: Option<usize>,
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
            pack: script.pack,
            lz4_store: script.lz4_store,
            reserved_bits: script.reserved_bits,
        }
    }

    /// A frame carrying `content`, as the layout says (compressed unless stored or not shorter).
    pub fn frame(&self, content: &[u8], self_contained: bool) -> OutFrame {
        let mut scratch = Vec::new();
        let (mut header, payload) = frame_parts(
            self.settings,
            content,
            self_contained,
            !self.lz4_store,
            &mut scratch,
        );
        let payload = payload.to_vec();
        if self.reserved_bits != 0 {
            header.reserved = self.reserved_bits;
            reseal(&mut header);
        }
        let trailer = self.settings.checksum.compute(&payload);
        OutFrame {
            header,
            payload,
            trailer,
            content: content.to_vec(),
        }
    }

    /// Frames for `envelopes`: packed (or one per envelope) into self-contained frames up to the
    /// capacity; an envelope of `split_at` bytes or more becomes a sequence.
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
                let mut rest = &env[..];
                let mut piece = first;
                while !rest.is_empty() {
                    let n = piece.min(rest.len());
                    out.push(self.frame(&rest[..n], false));
                    rest = &rest[n..];
                    piece = self.capacity;
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
