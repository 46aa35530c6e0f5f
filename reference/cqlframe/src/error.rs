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
    /// What rule was broken, and the values that break it.
    pub kind: ErrorKind,
    /// Stream offset of the frame (or envelope) that breaks it: where a reader of the capture
    /// looks.
    pub offset: u64,
}

impl FramingError {
    /// The error `kind` found in the frame or envelope at stream offset `offset`.
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
#[non_exhaustive]
pub enum Part {
    /// A frame header.
    Header,
    /// A frame's payload.
    Payload,
    /// A frame's payload checksum.
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
#[non_exhaustive]
pub enum Lz4Fault {
    /// No bytes at all: even an empty input compresses to one token.
    #[error("the block is empty")]
    EmptyBlock,
    /// The last sequence has a match, which LZ4's end-of-block rule forbids.
    #[error("the block ends after a match: its last sequence must be literals only")]
    EndsAfterMatch,
    /// A literal length's extension bytes run past the block.
    #[error("the block ends inside a literal length")]
    LiteralLengthPastEnd,
    /// A sequence's literals run past the block.
    #[error("literals run past the end of the block")]
    LiteralsPastEnd,
    /// The block ends within a match's two-byte offset.
    #[error("the block ends inside a match offset")]
    OffsetPastEnd,
    /// A match copies from nowhere: offset 0, or before the first byte written.
    #[error("a match offset is 0 or points before the start of the output")]
    OffsetOutsideOutput,
    /// A match length's extension bytes run past the block.
    #[error("the block ends inside a match length")]
    MatchLengthPastEnd,
}

/// What went wrong. The variant name in snake case is the `kind` vectors and reports use.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
#[non_exhaustive]
pub enum ErrorKind {
    /// A frame header's CRC24 does not match its bytes (RECV-1).
    #[error("header CRC24 mismatch: header says {found:#08x}, bytes give {computed:#08x}{}{}", if *unframed_envelope { "; they read as an unframed envelope (LIFE-7)" } else { "" }, if *other_format { "; they verify as a header of the other format" } else { "" })]
    HeaderCrcMismatch {
        /// The CRC24 the header carries.
        found: u32,
        /// The CRC24 of the header's bytes.
        computed: u32,
        /// The header's bytes begin the way an envelope header does
        /// ([`crate::envelope::starts_like_envelope_header`]): most likely an unframed envelope
        /// sent after the switch, so its sender broke LIFE-4.
        unframed_envelope: bool,
        /// The bytes verify as a header of the other format (an LZ4 header where an
        /// uncompressed one was due, or the reverse): the sender framed in a format it was not
        /// told to, as a client that frames what its refused STARTUP asked for (LIFE-8).
        other_format: bool,
    },
    /// A frame's checksum bit says the other payload checksum than was negotiated (RECV-3).
    #[error("checksum bit is {bit} but the connection negotiated {}", negotiated.name())]
    ChecksumBitMismatch {
        /// The bit as the header carries it.
        bit: bool,
        /// The checksum the connection negotiated.
        #[cfg_attr(feature = "serde", serde(with = "crate::format::checksum_by_name"))]
        negotiated: PayloadChecksum,
    },
    /// A frame's payload checksum does not match its payload (RECV-2).
    #[error("payload {} mismatch: trailer says {found:#010x}, payload gives {computed:#010x}", algorithm.name())]
    PayloadChecksumMismatch {
        /// The checksum the connection uses.
        #[cfg_attr(feature = "serde", serde(with = "crate::format::checksum_by_name"))]
        algorithm: PayloadChecksum,
        /// The checksum the trailer carries.
        found: u32,
        /// The checksum of the payload's bytes.
        computed: u32,
    },
    /// A compressed payload is no LZ4 block (LZ4-4).
    #[error("LZ4 block is malformed: {reason}")]
    Lz4Malformed {
        /// How it breaks the block format.
        reason: Lz4Fault,
    },
    /// A compressed payload decompresses to another length than its header declares (LZ4-4).
    #[error("LZ4 block decompresses to {} bytes, header says {declared}", actual.map_or_else(|| "more".to_string(), |a| a.to_string()))]
    Lz4LengthMismatch {
        /// The uncompressed length the frame header declares.
        declared: u32,
        /// What the block decompresses to, or `None` when it would exceed `declared`.
        actual: Option<u32>,
    },
    /// A block's last match ends too close to its end for LZ4's end-of-block rule (LZ4-6).
    #[error("LZ4 block's last match covers bytes {last_match_start}..{last_match_end} of {declared}: it must start at least 12 and end at least 5 bytes before the end")]
    Lz4EndOfBlock {
        /// Where the last match starts in the decompressed bytes.
        last_match_start: u32,
        /// Where it ends.
        last_match_end: u32,
        /// The decompressed length.
        declared: u32,
    },
    /// The stream ended inside a frame, sequence or envelope (RECV-9).
    #[error("stream ends inside a frame's or sequence's {part:?} ({missing} more bytes needed)")]
    Truncated {
        /// What the stream ended inside.
        part: Part,
        /// How many more bytes it needed.
        missing: u64,
    },
    /// A self-contained frame ends inside one of its envelopes (RECV-5).
    #[error("self-contained frame ends inside an envelope ({available} of {needed} bytes)")]
    PartialEnvelope {
        /// The envelope's whole length.
        needed: u64,
        /// What the frame carries of it.
        available: u64,
    },
    /// A sequence's frames carry more than its one envelope (RECV-7).
    #[error("non-self-contained frame carries the sequence {excess} bytes past its envelope")]
    SequenceOvershoot {
        /// Bytes past the end of the envelope.
        excess: u64,
    },
    /// A self-contained frame arrived while a sequence was incomplete (RECV-8).
    #[error("self-contained frame inside an incomplete non-self-contained sequence")]
    SequenceInterrupted,
    /// A frame of a sequence carries nothing (RECV-10).
    #[error("non-self-contained frame with no content")]
    EmptyContinuation,
    /// An envelope's body is longer than the receiver accepts (RECV-12).
    #[error("envelope body of {length} bytes exceeds the limit of {max}")]
    EnvelopeTooLarge {
        /// The body length the envelope header declares.
        length: u32,
        /// The receiver's limit.
        max: u32,
    },
    /// An envelope header's body length is negative (ENV-3).
    #[error("envelope body length {length} is negative")]
    NegativeEnvelopeLength {
        /// The length field, read as the signed int it is.
        length: i32,
    },
    /// An envelope's version byte is not the connection's, or points the wrong way (ENV-2).
    #[error("envelope version byte {found:#04x}, expected {expected:#04x}")]
    UnexpectedVersion {
        /// The version byte received.
        found: u8,
        /// The version byte this end accepts: the connection's version, its direction bit set
        /// on responses.
        expected: u8,
    },
    /// A v6-beta envelope lacks the USE_BETA flag (ENV-5).
    #[error("v6-beta envelope without the USE_BETA flag")]
    MissingBetaFlag,
    /// Before the switch to framing, bytes that start no envelope (LIFE-3, LIFE-4).
    #[error("before the switch the {sender:?} sent version byte {found:#04x}, which starts no CQL envelope")]
    NotAnEnvelope {
        /// The first byte, which no envelope version has.
        found: u8,
        /// Who broke the rule: a client that framed too early (LIFE-3) or a server (LIFE-4).
        sender: Role,
    },
    /// The client sent on before the STARTUP response (LIFE-6).
    #[error("client sent bytes after STARTUP before the STARTUP response")]
    SentBeforeStartupResponse,
    /// Before the switch, a response that answers no request the client sent (LIFE-13).
    #[error("before the switch the server sent opcode {opcode:#04x} on stream {stream}, which answers no outstanding request")]
    UnpairedResponse {
        /// The response's stream id.
        stream: i16,
        /// The response's opcode.
        opcode: u8,
    },
    /// STARTUP asks for a compression the server does not offer (NEG-2).
    #[error("unsupported COMPRESSION {value:?}")]
    UnsupportedCompression {
        /// The COMPRESSION value asked for.
        value: String,
    },
    /// STARTUP names an option twice, which leaves its value undecided (NEG-9).
    #[error("STARTUP carries the option {key:?} more than once")]
    RepeatedOption {
        /// The option's key, as the second occurrence spells it.
        key: String,
    },
    /// STARTUP asks for a payload checksum the server does not offer (NEG-6).
    #[error("unsupported FRAME_CHECKSUM {value:?}")]
    UnsupportedChecksum {
        /// The FRAME_CHECKSUM value asked for.
        value: String,
    },
    /// Input fed after an error: the stream's framing is lost for good (RECV-11).
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

    /// The rule the sender of the offending bytes broke, which a receiver in the role
    /// `receiver` detects under [`rule`](Self::rule): a header that fails its CRC24 was sent
    /// with a wrong CRC24 (CRC-1), or, when it reads as an envelope header, unframed after the
    /// switch (LIFE-4 for a server, LIFE-5 for a client). Where the receiver's rule already
    /// names the sender's fault, the two are the same. A judge that saw the handshake may name
    /// another (LIFE-8 behind a header of the other format after an ERROR to STARTUP).
    pub fn sender_rule(&self, receiver: Role) -> &'static str {
        match self {
            ErrorKind::HeaderCrcMismatch {
                unframed_envelope: true,
                ..
            } => match receiver {
                Role::Client => "LIFE-4",
                Role::Server => "LIFE-5",
            },
            ErrorKind::HeaderCrcMismatch { .. } => "CRC-1",
            ErrorKind::ChecksumBitMismatch { .. } => "FMT-13",
            ErrorKind::PayloadChecksumMismatch { algorithm, .. } => match algorithm {
                PayloadChecksum::Crc32 => "CRC-2",
                _ => "CRC-3",
            },
            ErrorKind::Lz4Malformed { .. } | ErrorKind::Lz4LengthMismatch { .. } => "LZ4-1",
            ErrorKind::Lz4EndOfBlock { .. } => "LZ4-5",
            ErrorKind::PartialEnvelope { .. } => "SEND-2",
            ErrorKind::SequenceOvershoot { .. } => "SEND-3",
            ErrorKind::SequenceInterrupted => "SEND-5",
            ErrorKind::EmptyContinuation => "SEND-6",
            ErrorKind::UnsupportedChecksum { .. } => "NEG-4",
            ErrorKind::Truncated { .. }
            | ErrorKind::EnvelopeTooLarge { .. }
            | ErrorKind::NegativeEnvelopeLength { .. }
            | ErrorKind::UnexpectedVersion { .. }
            | ErrorKind::MissingBetaFlag
            | ErrorKind::NotAnEnvelope { .. }
            | ErrorKind::SentBeforeStartupResponse
            | ErrorKind::UnpairedResponse { .. }
            | ErrorKind::UnsupportedCompression { .. }
            | ErrorKind::RepeatedOption { .. }
            | ErrorKind::AfterError => self.rule(),
        }
    }
}

/// [`ErrorKind::name`] and [`ErrorKind::NAMES`] from one list, so that the list is whole: the
/// match in `name` fails to compile when a kind is missing from it.
macro_rules! kind_names {
    ($($variant:ident => $name:literal,)*) => {
        impl ErrorKind {
            /// Every kind's name, in declaration order: what a schema of manifests and reports
            /// must list. `ErrorKind` is `non_exhaustive`, so this is how another crate learns
            /// that a kind was added.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            /// The kind's name as manifests and reports spell it (the serde tag).
            pub fn name(&self) -> &'static str {
                match self {
                    $(ErrorKind::$variant { .. } => $name,)*
                }
            }
        }
    };
}

kind_names! {
    HeaderCrcMismatch => "header_crc_mismatch",
    ChecksumBitMismatch => "checksum_bit_mismatch",
    PayloadChecksumMismatch => "payload_checksum_mismatch",
    Lz4Malformed => "lz4_malformed",
    Lz4LengthMismatch => "lz4_length_mismatch",
    Lz4EndOfBlock => "lz4_end_of_block",
    Truncated => "truncated",
    PartialEnvelope => "partial_envelope",
    SequenceOvershoot => "sequence_overshoot",
    SequenceInterrupted => "sequence_interrupted",
    EmptyContinuation => "empty_continuation",
    EnvelopeTooLarge => "envelope_too_large",
    NegativeEnvelopeLength => "negative_envelope_length",
    UnexpectedVersion => "unexpected_version",
    MissingBetaFlag => "missing_beta_flag",
    NotAnEnvelope => "not_an_envelope",
    SentBeforeStartupResponse => "sent_before_startup_response",
    UnpairedResponse => "unpaired_response",
    UnsupportedCompression => "unsupported_compression",
    RepeatedOption => "repeated_option",
    UnsupportedChecksum => "unsupported_checksum",
    AfterError => "after_error",
}
