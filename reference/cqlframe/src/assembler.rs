//! Envelope assembly: whole envelopes from self-contained frames, and one envelope from each
//! non-self-contained sequence (RECV-4..RECV-10, RECV-12, RECV-13, ENV-3).
//!
//! Envelopes of a self-contained frame are borrowed from the frame's content; only a sequence is
//! copied, into a buffer that grows with the bytes received, after its header's length is checked
//! against the configured maximum (RECV-12), so memory stays bounded by that maximum and by what
//! the peer actually sent.

use crate::envelope::{Envelope, EnvelopeHeader, ENVELOPE_HEADER_LEN};
use crate::error::{ErrorKind, FramingError, Part};
use crate::frame_decoder::Frame;

/// Default maximum envelope body: 256 MiB, Cassandra's hard ceiling for a native message.
pub const DEFAULT_MAX_ENVELOPE_BODY: u32 = 256 << 20;

/// Turns frame contents into envelopes.
#[derive(Clone, Debug)]
pub struct EnvelopeAssembler {
    max_body: u32,
    sequence: Option<Sequence>,
}

/// A non-self-contained sequence in progress.
#[derive(Clone, Debug)]
struct Sequence {
    /// Offset of the sequence's first frame.
    offset: u64,
    bytes: Vec<u8>,
    /// Header plus body length, once the header is in.
    total: Option<usize>,
}

impl EnvelopeAssembler {
    /// An assembler that refuses envelope bodies over `max_body` bytes (RECV-12), before
    /// buffering them: the limit bounds what a peer can make this end hold.
    pub fn new(max_body: u32) -> Self {
        EnvelopeAssembler {
            max_body,
            sequence: None,
        }
    }

    /// Whether a non-self-contained sequence is incomplete.
    pub fn in_sequence(&self) -> bool {
        self.sequence.is_some()
    }

    /// Takes one verified frame; calls `emit` for each envelope it completes, in order (RECV-13).
    /// Generic over `emit` so that the self-contained path, the common one, inlines into the
    /// frame loop; a sequence goes through `push_continuation`.
    #[inline(always)]
    pub fn push<F>(&mut self, frame: &Frame<'_>, mut emit: F) -> Result<(), FramingError>
    where
        F: FnMut(Envelope<'_>) -> Result<(), FramingError>,
    {
        if frame.header.self_contained && self.sequence.is_none() {
            return self.split_self_contained(frame, &mut emit);
        }
        self.push_continuation(frame, &mut emit)
    }

    /// A frame of a non-self-contained sequence, or a self-contained one that interrupts it.
    fn push_continuation(
        &mut self,
        frame: &Frame<'_>,
        emit: &mut dyn FnMut(Envelope<'_>) -> Result<(), FramingError>,
    ) -> Result<(), FramingError> {
        let fail = |kind| FramingError::new(kind, frame.offset);
        if frame.header.self_contained {
            return Err(fail(ErrorKind::SequenceInterrupted));
        }
        if frame.content.is_empty() {
            return Err(fail(ErrorKind::EmptyContinuation));
        }
        let seq = self.sequence.get_or_insert_with(|| Sequence {
            offset: frame.offset,
            bytes: Vec::new(),
            total: None,
        });
        let mut content = frame.content;
        if seq.total.is_none() {
            let take = (ENVELOPE_HEADER_LEN - seq.bytes.len()).min(content.len());
            seq.bytes.extend_from_slice(&content[..take]);
            content = &content[take..];
            if seq.bytes.len() == ENVELOPE_HEADER_LEN {
                let header = parse_header(&seq.bytes);
                let body = checked_body_len(&header, self.max_body).map_err(fail)?;
                // The buffer grows with the bytes that arrive, never from the header's word alone.
                seq.total = Some(ENVELOPE_HEADER_LEN + body);
            }
        }
        if let Some(total) = seq.total {
            let room = total - seq.bytes.len();
            if content.len() > room {
                return Err(fail(ErrorKind::SequenceOvershoot {
                    excess: (content.len() - room) as u64,
                }));
            }
            seq.bytes.extend_from_slice(content);
            if seq.bytes.len() == total {
                let seq = self.sequence.take().expect("sequence in progress");
                let header = parse_header(&seq.bytes);
                emit(Envelope {
                    header,
                    body: &seq.bytes[ENVELOPE_HEADER_LEN..],
                })?;
            }
        }
        Ok(())
    }

    /// Declares the end of the stream: an incomplete sequence is an error (RECV-9).
    pub fn finish(&mut self) -> Result<(), FramingError> {
        match self.sequence.take() {
            None => Ok(()),
            Some(seq) => {
                let missing = seq.total.unwrap_or(ENVELOPE_HEADER_LEN) - seq.bytes.len();
                Err(FramingError::new(
                    ErrorKind::Truncated {
                        part: Part::Sequence,
                        missing: missing as u64,
                    },
                    seq.offset,
                ))
            }
        }
    }

    /// SEND-2 / RECV-5: a self-contained frame holds whole envelopes only. The whole content is
    /// checked before any envelope of it is delivered, so a bad frame delivers nothing (ERR-2);
    /// the second pass reads the headers again rather than allocating a list of them.
    #[inline(always)]
    fn split_self_contained<F>(&self, frame: &Frame<'_>, emit: &mut F) -> Result<(), FramingError>
    where
        F: FnMut(Envelope<'_>) -> Result<(), FramingError>,
    {
        let content = frame.content;
        let mut at = 0;
        while at < content.len() {
            let rest = &content[at..];
            let body = match rest.get(..ENVELOPE_HEADER_LEN) {
                Some(header) => match checked_body_len(&parse_header(header), self.max_body) {
                    Ok(body) if body <= rest.len() - ENVELOPE_HEADER_LEN => body,
                    other => return Err(self_contained_error(frame, rest, other)),
                },
                None => return Err(self_contained_error(frame, rest, Ok(0))),
            };
            at += ENVELOPE_HEADER_LEN + body;
        }
        let mut rest = content;
        while !rest.is_empty() {
            let header = parse_header(rest);
            let (envelope, tail) = rest.split_at(ENVELOPE_HEADER_LEN + header.length as usize);
            emit(Envelope {
                header,
                body: &envelope[ENVELOPE_HEADER_LEN..],
            })?;
            rest = tail;
        }
        Ok(())
    }
}

/// Why the envelope at `rest` does not fit its self-contained frame: an invalid length, or
/// (`Ok(body)`) a header or body that runs past the content (RECV-5).
#[cold]
#[inline(never)]
fn self_contained_error(
    frame: &Frame<'_>,
    rest: &[u8],
    body: Result<usize, ErrorKind>,
) -> FramingError {
    let kind = match body {
        Err(kind) => kind,
        Ok(_) if rest.len() < ENVELOPE_HEADER_LEN => ErrorKind::PartialEnvelope {
            needed: ENVELOPE_HEADER_LEN as u64,
            available: rest.len() as u64,
        },
        Ok(body) => ErrorKind::PartialEnvelope {
            needed: (ENVELOPE_HEADER_LEN + body) as u64,
            available: rest.len() as u64,
        },
    };
    FramingError::new(kind, frame.offset)
}

#[inline(always)]
fn parse_header(bytes: &[u8]) -> EnvelopeHeader {
    let mut h = [0u8; ENVELOPE_HEADER_LEN];
    h.copy_from_slice(&bytes[..ENVELOPE_HEADER_LEN]);
    EnvelopeHeader::parse(&h)
}

/// The body length of `header` if it is valid (ENV-3) and within `max_body` (RECV-12).
pub fn checked_body_len(header: &EnvelopeHeader, max_body: u32) -> Result<usize, ErrorKind> {
    let length = u32::try_from(header.length).map_err(|_| ErrorKind::NegativeEnvelopeLength {
        length: header.length,
    })?;
    if length > max_body {
        return Err(ErrorKind::EnvelopeTooLarge {
            length,
            max: max_body,
        });
    }
    Ok(length as usize)
}
