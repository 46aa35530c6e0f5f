//! Streaming frame decoder: bytes in, verified frames out, in any chunking.
//!
//! Checks run in the order the spec fixes: the header CRC24 before any header field is used
//! (RECV-1), the checksum bit against the negotiation (RECV-3), the payload checksum before the
//! payload is decompressed or read (RECV-2), then the LZ4 block, its exact length (LZ4-4) and
//! LZ4's end-of-block rules (LZ4-6).
//! A frame that arrives whole inside one input slice is decoded in place (zero-copy); only a
//! frame split across calls is buffered, so memory stays under two maximum frames (the partial
//! frame and the decompression buffer).

use crate::error::{ErrorKind, FramingError, Part};
use crate::format::{Format, FrameSettings, TRAILER_LEN};
use crate::header::FrameHeader;
use crate::lz4_block::decompress;

/// A verified frame. `payload` is the bytes on the wire; `content` what they carry (the same
/// bytes unless LZ4 decompressed them).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Frame<'a> {
    /// Stream offset of the frame's first header byte.
    pub offset: u64,
    /// The frame header, its CRC24 verified.
    pub header: FrameHeader,
    /// The payload as on the wire: the LZ4 block for a compressed frame.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub payload: &'a [u8],
    /// The payload checksum from the trailer (verified).
    pub payload_checksum: u32,
    /// What the frame carries: envelopes or pieces of one.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub content: &'a [u8],
}

/// Decodes a stream of frames of one format and payload checksum.
#[derive(Clone, Debug)]
pub struct FrameDecoder {
    settings: FrameSettings,
    /// Bytes of a frame that has not arrived whole yet.
    pending: Vec<u8>,
    /// The verified header of `pending`, once its header bytes are in.
    pending_header: Option<FrameHeader>,
    /// Stream offset of the next frame (the first byte of `pending`).
    offset: u64,
    failed: bool,
    /// Decompression output, reused across frames.
    scratch: Vec<u8>,
}

impl FrameDecoder {
    /// A decoder of a stream that is framed from its first byte.
    pub fn new(settings: FrameSettings) -> Self {
        Self::starting_at(settings, 0)
    }

    /// A decoder whose first frame starts at stream offset `offset` (after an unframed handshake).
    pub fn starting_at(settings: FrameSettings, offset: u64) -> Self {
        FrameDecoder {
            settings,
            pending: Vec::new(),
            pending_header: None,
            offset,
            failed: false,
            scratch: Vec::new(),
        }
    }

    /// The format and payload checksum this decoder expects.
    pub fn settings(&self) -> FrameSettings {
        self.settings
    }

    /// Whether a framing error stopped this decoder (RECV-11).
    pub fn has_failed(&self) -> bool {
        self.failed
    }

    /// Stream offset of the first byte not yet part of a decoded frame.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Feeds bytes; calls `on_frame` for each frame they complete. After an error, every later
    /// call fails too (RECV-11).
    /// Generic over the callback so that it inlines into the frame loop.
    pub fn decode<F>(&mut self, input: &[u8], mut on_frame: F) -> Result<(), FramingError>
    where
        F: FnMut(Frame<'_>) -> Result<(), FramingError>,
    {
        if self.failed {
            return Err(FramingError::new(ErrorKind::AfterError, self.offset));
        }
        let result = self.decode_inner(input, &mut on_frame);
        self.failed = result.is_err();
        result
    }

    /// Declares the end of the stream: an incomplete frame is an error (RECV-9), unless it is a
    /// header that fails its CRC24, held back for the longest header's bytes (RECV-1).
    pub fn finish(&mut self) -> Result<(), FramingError> {
        if self.pending.is_empty() || self.failed {
            return Ok(());
        }
        self.failed = true;
        let have = self.pending.len();
        let hlen = self.settings.format.header_len();
        let header = match self.pending_header {
            Some(h) => Some(h),
            None if have >= hlen => Some(self.read_header(&self.pending)?),
            None => None,
        };
        let (part, missing) = match header {
            None => (Part::Header, hlen - have),
            Some(h) => {
                let trailer_at = h.frame_len() - TRAILER_LEN;
                let part = if have < trailer_at {
                    Part::Payload
                } else {
                    Part::Trailer
                };
                (part, h.frame_len() - have)
            }
        };
        Err(FramingError::new(
            ErrorKind::Truncated {
                part,
                missing: missing as u64,
            },
            self.offset,
        ))
    }

    #[inline(always)]
    fn decode_inner<F>(&mut self, mut input: &[u8], on_frame: &mut F) -> Result<(), FramingError>
    where
        F: FnMut(Frame<'_>) -> Result<(), FramingError>,
    {
        let peek = Format::LONGEST_HEADER;
        if !self.pending.is_empty() {
            if self.pending_header.is_none() {
                let take = (peek - self.pending.len()).min(input.len());
                self.pending.extend_from_slice(&input[..take]);
                input = &input[take..];
                let Some(header) = self.header_at(&self.pending)? else {
                    return Ok(());
                };
                self.pending
                    .reserve_exact(header.frame_len() - self.pending.len());
                self.pending_header = Some(header);
            }
            let header = self.pending_header.expect("header read above");
            let take = (header.frame_len() - self.pending.len()).min(input.len());
            self.pending.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.pending.len() < header.frame_len() {
                return Ok(());
            }
            let frame = open_frame(
                self.settings,
                &mut self.scratch,
                header,
                &self.pending,
                self.offset,
            )?;
            on_frame(frame)?;
            self.offset += header.frame_len() as u64;
            self.pending.clear();
            self.pending_header = None;
        }
        while let Some(header) = self.header_at(&input[..input.len().min(peek)])? {
            let len = header.frame_len();
            if input.len() < len {
                self.pending_header = Some(header);
                break;
            }
            let frame = open_frame(
                self.settings,
                &mut self.scratch,
                header,
                &input[..len],
                self.offset,
            )?;
            on_frame(frame)?;
            self.offset += len as u64;
            input = &input[len..];
        }
        self.pending.extend_from_slice(input);
        Ok(())
    }

    /// The header at the start of `bytes` (at most [`Format::LONGEST_HEADER`] of them), once
    /// it can be judged: `None` while fewer than a header's bytes are in, and while a header
    /// that fails its CRC24 has fewer than the longest header's, so that whether it verifies
    /// as the other format is told the same in any chunking. A header that verifies is used at
    /// once (RECV-14).
    #[inline(always)]
    fn header_at(&self, bytes: &[u8]) -> Result<Option<FrameHeader>, FramingError> {
        if bytes.len() < self.settings.format.header_len() {
            return Ok(None);
        }
        match self.read_header(bytes) {
            Err(e)
                if bytes.len() < Format::LONGEST_HEADER
                    && matches!(e.kind, ErrorKind::HeaderCrcMismatch { .. }) =>
            {
                Ok(None)
            }
            read => read.map(Some),
        }
    }

    /// RECV-1 then RECV-3: nothing in the header is used before its CRC24 verifies. `bytes`
    /// hold the header and may go on past it.
    #[inline(always)]
    fn read_header(&self, bytes: &[u8]) -> Result<FrameHeader, FramingError> {
        match FrameHeader::read(self.settings.format, bytes) {
            Ok(header) if header.checksum_bit == self.settings.checksum_bit() => Ok(header),
            other => Err(self.header_error(other)),
        }
    }

    /// The error for a header [`read_header`](Self::read_header) refused; out of the hot path.
    #[cold]
    #[inline(never)]
    fn header_error(&self, read: Result<FrameHeader, ErrorKind>) -> FramingError {
        let kind = match read {
            Err(kind) => kind,
            Ok(header) => ErrorKind::ChecksumBitMismatch {
                bit: header.checksum_bit,
                negotiated: self.settings.checksum,
            },
        };
        FramingError::new(kind, self.offset)
    }
}

/// Verifies the payload checksum of a whole frame in `bytes`, then decodes its content.
#[inline(always)]
fn open_frame<'a>(
    settings: FrameSettings,
    scratch: &'a mut Vec<u8>,
    header: FrameHeader,
    bytes: &'a [u8],
    offset: u64,
) -> Result<Frame<'a>, FramingError> {
    let hlen = header.format.header_len();
    let payload = &bytes[hlen..hlen + header.payload_length as usize];
    let trailer = &bytes[hlen + payload.len()..];
    let found = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let computed = settings.checksum.compute(payload);
    if found != computed {
        return Err(payload_checksum_error(settings, found, computed, offset));
    }
    let content = match header.format {
        Format::Lz4 if header.uncompressed_length != 0 => {
            decompress(payload, header.uncompressed_length, scratch)
                .map_err(|kind| FramingError::new(kind, offset))?;
            &scratch[..]
        }
        _ => payload,
    };
    Ok(Frame {
        offset,
        header,
        payload,
        payload_checksum: found,
        content,
    })
}

#[cold]
#[inline(never)]
fn payload_checksum_error(
    settings: FrameSettings,
    found: u32,
    computed: u32,
    offset: u64,
) -> FramingError {
    let algorithm = settings.checksum;
    let kind = ErrorKind::PayloadChecksumMismatch {
        algorithm,
        found,
        computed,
    };
    FramingError::new(kind, offset)
}
