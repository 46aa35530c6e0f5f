//! The sending side: envelopes packed into frames, split into sequences when they do not fit.

use crate::envelope::ENVELOPE_HEADER_LEN;
use crate::format::{Format, FrameSettings, MAX_PAYLOAD};
use crate::header::FrameHeader;
use std::io::IoSlice;
use thiserror::Error;

/// SEND-7: the content every frame of a sequence but the last should carry at least. Drivers
/// fill to 131071; Cassandra 5.0 fills LZ4 frames to 131060 and uncompressed ones to 131054.
pub const SEQUENCE_FILL_FLOOR: usize = 131_054;

/// How a sender sizes frames (SEND-3, SEND-4, SEND-7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitPolicy {
    /// Most content bytes per frame, when packing and when splitting.
    capacity: usize,
    /// Envelopes of this many bytes or more go into a non-self-contained sequence.
    split_at: usize,
}

impl SplitPolicy {
    /// What the Java, Python and Go drivers do: split only what exceeds 131071 bytes.
    pub const DRIVERS: SplitPolicy = SplitPolicy {
        capacity: MAX_PAYLOAD,
        split_at: MAX_PAYLOAD + 1,
    };
    /// What Cassandra's server does: split envelopes of 131060 bytes or more into 131060-byte pieces.
    pub const SERVER: SplitPolicy = SplitPolicy {
        capacity: 131_060,
        split_at: 131_060,
    };

    /// Most content bytes per frame.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// A policy with pieces of `capacity` bytes, splitting what does not fit (9..=131071: the
    /// first frame of a sequence carries the whole envelope header, SEND-8).
    pub fn with_capacity(capacity: usize) -> Result<Self, EncodeError> {
        if !(ENVELOPE_HEADER_LEN..=MAX_PAYLOAD).contains(&capacity) {
            return Err(EncodeError::Capacity(capacity));
        }
        Ok(SplitPolicy {
            capacity,
            split_at: capacity + 1,
        })
    }
}

/// Why the encoder refused what it was asked.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// Content longer than a frame's 17-bit length fields can hold.
    #[error("frame content of {0} bytes exceeds 131071 (SEND-1)")]
    ContentTooLong(usize),
    /// A split capacity under an envelope header (SEND-8) or over the largest payload.
    #[error("split capacity {0} is outside 9..=131071")]
    Capacity(usize),
}

/// Writes frames of one connection's settings.
#[derive(Clone, Debug)]
pub struct FrameEncoder {
    settings: FrameSettings,
    policy: SplitPolicy,
    /// Packed content of the frame being filled.
    batch: Vec<u8>,
    /// LZ4 compression output, reused.
    compressed: Vec<u8>,
}

impl FrameEncoder {
    /// An encoder for a connection that negotiated `settings`, sizing frames by `policy`.
    pub fn new(settings: FrameSettings, policy: SplitPolicy) -> Self {
        FrameEncoder {
            settings,
            policy,
            batch: Vec::new(),
            compressed: Vec::new(),
        }
    }

    /// The format and payload checksum this encoder frames with.
    pub fn settings(&self) -> FrameSettings {
        self.settings
    }

    /// Appends one frame carrying `content` to `out` and returns its header. LZ4 frames are
    /// stored rather than compressed when compression does not shrink them (LZ4-3).
    pub fn write_frame(
        &mut self,
        content: &[u8],
        self_contained: bool,
        out: &mut Vec<u8>,
    ) -> Result<FrameHeader, EncodeError> {
        let checksum = self.settings.checksum;
        let (header, payload) = self.parts(content, self_contained)?;
        out.reserve(header.format.header_len() + payload.len() + 4);
        header.write(out);
        // Checksummed and copied in one pass where the checksum path can (AVX-512).
        let trailer = checksum.compute_append(payload, out);
        out.extend_from_slice(&trailer.to_le_bytes());
        Ok(header)
    }

    /// One frame carrying `content` as its three parts, for a vectored write: the payload is
    /// borrowed (the content itself, or the encoder's LZ4 block), not copied, so the frame costs
    /// its checksum alone. The Java driver's encoder works this way too. LZ4 frames are stored
    /// rather than compressed when compression does not shrink them (LZ4-3).
    pub fn frame<'a>(
        &'a mut self,
        content: &'a [u8],
        self_contained: bool,
    ) -> Result<FrameParts<'a>, EncodeError> {
        let checksum = self.settings.checksum;
        let (header, payload) = self.parts(content, self_contained)?;
        Ok(FrameParts {
            header,
            header_bytes: header.to_bytes(),
            payload,
            trailer: checksum.compute(payload).to_le_bytes(),
        })
    }

    /// The header and payload of a frame carrying `content`, refused past [`MAX_PAYLOAD`].
    fn parts<'a>(
        &'a mut self,
        content: &'a [u8],
        self_contained: bool,
    ) -> Result<(FrameHeader, &'a [u8]), EncodeError> {
        if content.len() > MAX_PAYLOAD {
            return Err(EncodeError::ContentTooLong(content.len()));
        }
        Ok(frame_parts(
            self.settings,
            content,
            self_contained,
            true,
            &mut self.compressed,
        ))
    }

    /// Appends frames carrying `envelopes` (each a whole envelope's bytes): envelopes are packed
    /// into self-contained frames up to the capacity (SEND-2, SEND-7); an envelope at or over the
    /// policy's split size becomes a non-self-contained sequence of its own (SEND-3).
    pub fn write_envelopes<'e>(
        &mut self,
        envelopes: impl IntoIterator<Item = &'e [u8]>,
        out: &mut Vec<u8>,
    ) {
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        for envelope in envelopes {
            if envelope.len() >= self.policy.split_at {
                self.flush(&mut batch, out);
                for piece in envelope.chunks(self.policy.capacity) {
                    self.write_frame(piece, false, out)
                        .expect("piece within capacity");
                }
            } else {
                if batch.len() + envelope.len() > self.policy.capacity {
                    self.flush(&mut batch, out);
                }
                batch.extend_from_slice(envelope);
            }
        }
        self.flush(&mut batch, out);
        self.batch = batch;
    }

    fn flush(&mut self, batch: &mut Vec<u8>, out: &mut Vec<u8>) {
        if !batch.is_empty() {
            self.write_frame(batch, true, out)
                .expect("batch within capacity");
            batch.clear();
        }
    }
}

/// A frame as header, payload and trailer (see [`FrameEncoder::frame`]).
#[derive(Debug)]
pub struct FrameParts<'a> {
    /// The header's fields.
    pub header: FrameHeader,
    header_bytes: [u8; 8],
    /// The payload as sent: the content, or its LZ4 block.
    pub payload: &'a [u8],
    trailer: [u8; 4],
}

impl FrameParts<'_> {
    /// The header's bytes as sent (6 uncompressed, 8 LZ4).
    pub fn header_bytes(&self) -> &[u8] {
        &self.header_bytes[..self.header.format.header_len()]
    }

    /// The trailer: the payload checksum, little-endian.
    pub fn trailer(&self) -> &[u8; 4] {
        &self.trailer
    }

    /// The three parts in wire order, for `Write::write_vectored` (`writev`).
    pub fn io_slices(&self) -> [IoSlice<'_>; 3] {
        [
            IoSlice::new(self.header_bytes()),
            IoSlice::new(self.payload),
            IoSlice::new(&self.trailer),
        ]
    }

    /// The frame's length on the wire.
    pub fn wire_len(&self) -> usize {
        self.header.format.header_len() + self.payload.len() + self.trailer.len()
    }
}

/// The header and payload of a frame carrying `content`: under LZ4 the compressed block when
/// `compress` is set and the block is shorter than the content, the content stored otherwise
/// (LZ4-3). `scratch` receives the block. Lengths are not checked against [`MAX_PAYLOAD`]: fault
/// injection writes oversized frames on purpose; [`FrameEncoder::write_frame`] refuses them.
pub fn frame_parts<'a>(
    settings: FrameSettings,
    content: &'a [u8],
    self_contained: bool,
    compress: bool,
    scratch: &'a mut Vec<u8>,
) -> (FrameHeader, &'a [u8]) {
    let bit = settings.checksum_bit();
    let stored = |format| {
        let header = FrameHeader::new(format, content.len() as u32, 0, self_contained, bit);
        (header, content)
    };
    match settings.format {
        Format::Uncompressed => stored(Format::Uncompressed),
        Format::Lz4 if !compress || content.is_empty() => stored(Format::Lz4),
        Format::Lz4 => {
            scratch.resize(lz4_flex::block::get_maximum_output_size(content.len()), 0);
            let n = lz4_flex::block::compress_into(content, scratch)
                .expect("output sized by get_maximum_output_size");
            if n >= content.len() {
                return stored(Format::Lz4);
            }
            let len = content.len() as u32;
            let header = FrameHeader::new(Format::Lz4, n as u32, len, self_contained, bit);
            (header, &scratch[..n])
        }
    }
}

/// Appends a frame made of exactly these parts: `header` as given (its stored CRC24 included),
/// `payload`, and `trailer` as the payload checksum. Test-vector and fault-injection builders
/// use this to write frames that break rules on purpose.
pub fn write_raw(header: &FrameHeader, payload: &[u8], trailer: u32, out: &mut Vec<u8>) {
    out.reserve(header.format.header_len() + payload.len() + 4);
    header.write(out);
    cqlframe_checksum::append(out, payload);
    out.extend_from_slice(&trailer.to_le_bytes());
}
