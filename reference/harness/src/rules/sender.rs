//! Sender rules that no receiver enforces: a frame or envelope that breaks one is still decoded
//! (reserved bits, a compressed payload that should have been stored, a sequence's fill, the
//! envelope COMPRESSION flag), so only a judge that looks for them finds them.

use super::finding::{Direction, Finding};
use crate::verdict::Level;
use cqlframe::encoder::SEQUENCE_FILL_FLOOR;
use cqlframe::envelope::{Envelope, ENVELOPE_HEADER_LEN, FLAG_COMPRESSION};
use cqlframe::format::Format;
use cqlframe::frame_decoder::Frame;

/// Facts about one direction's frames and envelopes, counted as they pass.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Stats {
    pub unframed_envelopes: u64,
    pub frames: u64,
    pub envelopes: u64,
    pub sequences: u64,
    pub largest_envelope: u64,
}

/// The sender checks of one direction, fed its frames and envelopes in stream order.
#[derive(Debug)]
pub struct SenderChecks {
    direction: Direction,
    /// Content lengths of the non-self-contained sequence in progress.
    pieces: Vec<usize>,
    pub stats: Stats,
}

impl SenderChecks {
    pub fn new(direction: Direction) -> Self {
        SenderChecks {
            direction,
            pieces: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Forgets a sequence in progress (the stream is resumed after a gap).
    pub fn restart(&mut self) {
        self.pieces.clear();
    }

    /// FMT-6 / FMT-10 (reserved bits), LZ4-3 (store what does not compress), SEND-8 (a
    /// sequence's first frame holds the envelope header).
    pub fn frame(&mut self, frame: &Frame<'_>, out: &mut Vec<Finding>) {
        let h = frame.header;
        let d = self.direction;
        self.stats.frames += 1;
        if h.reserved != 0 {
            let rule = match h.format {
                Format::Lz4 => "FMT-10",
                Format::Uncompressed => "FMT-6",
            };
            let message = format!("reserved header bits are {:#x}, not zero", h.reserved);
            out.push(Finding::sender(rule, Level::Must, d, frame.offset, message));
        }
        if h.format == Format::Lz4
            && h.uncompressed_length > 0
            && h.payload_length >= h.uncompressed_length
        {
            let message = format!(
                "payload compressed to {} bytes from {}: should be stored",
                h.payload_length, h.uncompressed_length
            );
            out.push(Finding::sender(
                "LZ4-3",
                Level::Should,
                d,
                frame.offset,
                message,
            ));
        }
        if !h.self_contained {
            if self.pieces.is_empty() && frame.content.len() < ENVELOPE_HEADER_LEN {
                let message = format!(
                    "first frame of a sequence carries {} bytes, less than the envelope header",
                    frame.content.len()
                );
                out.push(Finding::sender(
                    "SEND-8",
                    Level::Must,
                    d,
                    frame.offset,
                    message,
                ));
            }
            self.pieces.push(frame.content.len());
        }
    }

    /// SEND-7 (a sequence's frames but the last are filled) once a sequence completes, and
    /// ENV-4 (no envelope COMPRESSION flag on a framed connection). `at` is the offset of the
    /// frame that completed the envelope.
    pub fn envelope(&mut self, envelope: &Envelope<'_>, at: u64, out: &mut Vec<Finding>) {
        let d = self.direction;
        self.stats.envelopes += 1;
        let size = (ENVELOPE_HEADER_LEN + envelope.body.len()) as u64;
        self.stats.largest_envelope = self.stats.largest_envelope.max(size);
        if !self.pieces.is_empty() {
            self.stats.sequences += 1;
            let n = self.pieces.len();
            if self.pieces[..n - 1]
                .iter()
                .any(|&p| p < SEQUENCE_FILL_FLOOR)
            {
                let message = format!(
                    "a sequence's frames but the last hold fewer than {SEQUENCE_FILL_FLOOR} bytes ({:?})",
                    &self.pieces[..n.min(8)]
                );
                out.push(Finding::sender("SEND-7", Level::Should, d, at, message));
            }
            self.pieces.clear();
        }
        if envelope.header.flags & FLAG_COMPRESSION != 0 {
            let message = format!(
                "envelope on stream {} has the COMPRESSION flag set on a framed connection (receivers ignore it)",
                envelope.header.stream
            );
            out.push(Finding::sender("ENV-4", Level::Should, d, at, message));
        }
    }
}
