//! The receiving side of a framed connection: frames, then envelopes, as events.

use crate::assembler::EnvelopeAssembler;
use crate::envelope::Envelope;
use crate::error::FramingError;
use crate::format::FrameSettings;
use crate::frame_decoder::{Frame, FrameDecoder};

/// What the decoder reports, in stream order: each frame, then the envelopes it completes.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A frame, verified; reported before the envelopes it completes, so that a tool can show
    /// framing and content in wire order.
    Frame(&'a Frame<'a>),
    /// An envelope, whole: from one self-contained frame or reassembled from a sequence.
    Envelope(Envelope<'a>),
}

/// Frame decoding and envelope assembly together: bytes in, events out.
#[derive(Clone, Debug)]
pub struct Decoder {
    frames: FrameDecoder,
    envelopes: EnvelopeAssembler,
}

impl Decoder {
    /// A decoder of a stream framed from its first byte, refusing envelope bodies over
    /// `max_envelope_body` bytes (RECV-12).
    pub fn new(settings: FrameSettings, max_envelope_body: u32) -> Self {
        Self::starting_at(settings, max_envelope_body, 0)
    }

    /// A decoder whose first frame is at stream offset `offset`.
    pub fn starting_at(settings: FrameSettings, max_envelope_body: u32, offset: u64) -> Self {
        Decoder {
            frames: FrameDecoder::starting_at(settings, offset),
            envelopes: EnvelopeAssembler::new(max_envelope_body),
        }
    }

    /// The format and payload checksum this decoder expects.
    pub fn settings(&self) -> FrameSettings {
        self.frames.settings()
    }

    /// Feeds bytes in any chunking; the events are the same for every chunking. `on_event` is
    /// called with each event in stream order, and an error it returns stops decoding (the
    /// crate's [callback style](crate#callbacks)).
    ///
    /// ```
    /// use cqlframe::checksum::PayloadChecksum;
    /// use cqlframe::decoder::{Decoder, Event};
    /// use cqlframe::{Format, FrameSettings};
    ///
    /// let settings = FrameSettings::new(Format::Uncompressed, PayloadChecksum::Crc32c);
    /// let mut decoder = Decoder::new(settings, 16 << 20);
    /// // One self-contained frame carrying an OPTIONS request (stream 1, empty body).
    /// let mut wire = Vec::new();
    /// cqlframe::encoder::FrameEncoder::new(settings, cqlframe::encoder::SplitPolicy::DRIVERS)
    ///     .write_envelopes([&[5u8, 0, 0, 1, 5, 0, 0, 0, 0][..]], &mut wire);
    /// let mut opcodes = Vec::new();
    /// for chunk in wire.chunks(3) {
    ///     decoder.decode(chunk, |event| {
    ///         if let Event::Envelope(e) = event {
    ///             opcodes.push(e.header.opcode);
    ///         }
    ///         Ok(())
    ///     })?;
    /// }
    /// decoder.finish()?;
    /// assert_eq!(opcodes, [5]);
    /// # Ok::<(), cqlframe::error::FramingError>(())
    /// ```
    pub fn decode<F>(&mut self, input: &[u8], mut on_event: F) -> Result<(), FramingError>
    where
        F: FnMut(Event<'_>) -> Result<(), FramingError>,
    {
        let envelopes = &mut self.envelopes;
        self.frames.decode(
            input,
            #[inline(always)]
            |frame| {
                on_event(Event::Frame(&frame))?;
                envelopes.push(&frame, |envelope| on_event(Event::Envelope(envelope)))
            },
        )
    }

    /// Declares the end of the stream: a frame or sequence left incomplete is an error (RECV-9).
    pub fn finish(&mut self) -> Result<(), FramingError> {
        self.frames.finish()?;
        if self.frames.has_failed() {
            return Ok(());
        }
        self.envelopes.finish()
    }

    /// Stream offset of the first byte not yet part of a decoded frame.
    pub fn offset(&self) -> u64 {
        self.frames.offset()
    }
}
