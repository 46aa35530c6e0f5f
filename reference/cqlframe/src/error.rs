//! Framing errors: each names the spec rule it breaks and where in the stream it was found.

use crate::checksum::PayloadChecksum;
use crate::role::Role;
use thiserror::Error;

/// A violation of the framing rules, found at `offset`: the stream position of the first byte
/// of the frame (or, before the switch to framing, of the envelope) in which it was detected.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[error("{kind} [{rule} at byte {offset}]", rule = kind.rule())]
pub struct FramingError {
    pub kind: ErrorKind,
    pub offset: u64,
}

impl FramingError {
    pub fn new(kind: ErrorKind, offset: u64) -> Self {
        FramingError { kind, offset }
    }

    /// The ID of the spec rule this error breaks.
    pub fn rule(&self) -> &'static str {
        self.kind.rule()
    }
}

/// The part of a frame, or of a sequence, that the stream ended inside (RECV-9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Part {
    Header,
    Payload,
    Trailer,
    /// Between frames, with a non-self-contained sequence incomplete.
    Sequence,
    /// Inside an unframed envelope (before the switch to framing).
    Envelope,
}

/// How a raw LZ4 block breaks LZ4's block format (LZ4-1), found while decoding it (LZ4-4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Lz4Fault {
    #[error("the block is empty")]
    EmptyBlock,
    #[error("the block ends after a match: its last sequence must be literals only")]
    EndsAfterMatch,
    #[error("the block ends inside a literal length")]
    LiteralLengthPastEnd,
    #[error("literals run past the end of the block")]
    LiteralsPastEnd,
    #[error("the block ends inside a match offset")]
    OffsetPastEnd,
    #[error("a match offset is 0 or points before the start of the output")]
    OffsetOutsideOutput,
    #[error("the block ends inside a match length")]
    MatchLengthPastEnd,
}

/// What went wrong. The variant name in snake case is the `kind` vectors and reports use.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum ErrorKind {
    #[error("header CRC24 mismatch: header says {found:#08x}, bytes give {computed:#08x}{}", if *unframed_envelope { "; they read as an unframed envelope (LIFE-7)" } else { "" })]
    HeaderCrcMismatch {
        found: u32,
        computed: u32,
        /// The header's bytes begin the way an envelope header does
        /// ([`crate::envelope::starts_like_envelope_header`]): most likely an unframed envelope
        /// sent after the switch, so its sender broke LIFE-4.
        unframed_envelope: bool,
    },
    #[error("checksum bit is {bit} but the connection negotiated {}", negotiated.name())]
    ChecksumBitMismatch {
        bit: bool,
        #[cfg_attr(feature = "serde", serde(with = "crate::format::checksum_by_name"))]
        negotiated: PayloadChecksum,
    },
    #[error("payload {} mismatch: trailer says {found:#010x}, payload gives {computed:#010x}", algorithm.name())]
    PayloadChecksumMismatch {
        #[cfg_attr(feature = "serde", serde(with = "crate::format::checksum_by_name"))]
        algorithm: PayloadChecksum,
        found: u32,
        computed: u32,
    },
    #[error("LZ4 block is malformed: {reason}")]
    Lz4Malformed { reason: Lz4Fault },
    #[error("LZ4 block decompresses to {} bytes, header says {declared}", actual.map_or_else(|| "more".to_string(), |a| a.to_string()))]
    Lz4LengthMismatch { declared: u32, actual: Option<u32> },
    #[error("LZ4 block's last match covers bytes {last_match_start}..{last_match_end} of {declared}: it must start at least 12 and end at least 5 bytes before the end")]
    Lz4EndOfBlock {
        last_match_start: u32,
        last_match_end: u32,
        declared: u32,
    },
    #[error("stream ends inside a frame's or sequence's {part:?} ({missing} more bytes needed)")]
    Truncated { part: Part, missing: u64 },
    #[error("self-contained frame ends inside an envelope ({available} of {needed} bytes)")]
    PartialEnvelope { needed: u64, available: u64 },
    #[error("non-self-contained frame carries the sequence {excess} bytes past its envelope")]
    SequenceOvershoot { excess: u64 },
    #[error("self-contained frame inside an incomplete non-self-contained sequence")]
    SequenceInterrupted,
    #[error("non-self-contained frame with no content")]
    EmptyContinuation,
    #[error("envelope body of {length} bytes exceeds the limit of {max}")]
    EnvelopeTooLarge { length: u32, max: u32 },
    #[error("envelope body length {length} is negative")]
    NegativeEnvelopeLength { length: i32 },
    #[error("envelope version byte {found:#04x}, expected {expected:#04x}")]
    UnexpectedVersion { found: u8, expected: u8 },
    #[error("v6-beta envelope without the USE_BETA flag")]
    MissingBetaFlag,
    #[error("before the switch the {sender:?} sent version byte {found:#04x}, which starts no CQL envelope")]
    NotAnEnvelope {
        found: u8,
        /// Who broke the rule: a client that framed too early (LIFE-3) or a server (LIFE-4).
        sender: Role,
    },
    #[error("client sent bytes after STARTUP before the STARTUP response")]
    SentBeforeStartupResponse,
    #[error("before the switch the server sent opcode {opcode:#04x} on stream {stream}, which answers no outstanding request")]
    UnpairedResponse { stream: i16, opcode: u8 },
    #[error("unsupported COMPRESSION {value:?}")]
    UnsupportedCompression { value: String },
    #[error("STARTUP carries the option {key:?} more than once")]
    RepeatedOption { key: String },
    #[error("unsupported FRAME_CHECKSUM {value:?}")]
    UnsupportedChecksum { value: String },
    #[error("input after a framing error")]
    AfterError,
}

impl ErrorKind {
    /// The spec rule broken.
    pub fn rule(&self) -> &'static str {
        match self {
            ErrorKind::HeaderCrcMismatch { .. } => "RECV-1",
            ErrorKind::ChecksumBitMismatch { .. } => "RECV-3",
            ErrorKind::PayloadChecksumMismatch { .. } => "RECV-2",
            ErrorKind::Lz4Malformed { .. } => "LZ4-4",
            ErrorKind::Lz4LengthMismatch { .. } => "LZ4-4",
            ErrorKind::Lz4EndOfBlock { .. } => "LZ4-6",
            ErrorKind::Truncated { .. } => "RECV-9",
            ErrorKind::PartialEnvelope { .. } => "RECV-5",
            ErrorKind::SequenceOvershoot { .. } => "RECV-7",
            ErrorKind::SequenceInterrupted => "RECV-8",
            ErrorKind::EmptyContinuation => "RECV-10",
            ErrorKind::EnvelopeTooLarge { .. } => "RECV-12",
            ErrorKind::NegativeEnvelopeLength { .. } => "ENV-3",
            ErrorKind::UnexpectedVersion { .. } => "ENV-2",
            ErrorKind::MissingBetaFlag => "ENV-5",
            ErrorKind::NotAnEnvelope {
                sender: Role::Client,
                ..
            } => "LIFE-3",
            ErrorKind::NotAnEnvelope {
                sender: Role::Server,
                ..
            } => "LIFE-4",
            ErrorKind::SentBeforeStartupResponse => "LIFE-6",
            ErrorKind::UnpairedResponse { .. } => "LIFE-13",
            ErrorKind::UnsupportedCompression { .. } => "NEG-2",
            ErrorKind::UnsupportedChecksum { .. } => "NEG-6",
            ErrorKind::RepeatedOption { .. } => "NEG-9",
            ErrorKind::AfterError => "RECV-11",
        }
    }

    /// The kind's name as manifests and reports spell it (the serde tag).
    pub fn name(&self) -> &'static str {
        match self {
            ErrorKind::HeaderCrcMismatch { .. } => "header_crc_mismatch",
            ErrorKind::ChecksumBitMismatch { .. } => "checksum_bit_mismatch",
            ErrorKind::PayloadChecksumMismatch { .. } => "payload_checksum_mismatch",
            ErrorKind::Lz4Malformed { .. } => "lz4_malformed",
            ErrorKind::Lz4LengthMismatch { .. } => "lz4_length_mismatch",
            ErrorKind::Lz4EndOfBlock { .. } => "lz4_end_of_block",
            ErrorKind::Truncated { .. } => "truncated",
            ErrorKind::PartialEnvelope { .. } => "partial_envelope",
            ErrorKind::SequenceOvershoot { .. } => "sequence_overshoot",
            ErrorKind::SequenceInterrupted => "sequence_interrupted",
            ErrorKind::EmptyContinuation => "empty_continuation",
            ErrorKind::EnvelopeTooLarge { .. } => "envelope_too_large",
            ErrorKind::NegativeEnvelopeLength { .. } => "negative_envelope_length",
            ErrorKind::UnexpectedVersion { .. } => "unexpected_version",
            ErrorKind::MissingBetaFlag => "missing_beta_flag",
            ErrorKind::NotAnEnvelope { .. } => "not_an_envelope",
            ErrorKind::SentBeforeStartupResponse => "sent_before_startup_response",
            ErrorKind::UnpairedResponse { .. } => "unpaired_response",
            ErrorKind::UnsupportedCompression { .. } => "unsupported_compression",
            ErrorKind::RepeatedOption { .. } => "repeated_option",
            ErrorKind::UnsupportedChecksum { .. } => "unsupported_checksum",
            ErrorKind::AfterError => "after_error",
        }
    }
}
