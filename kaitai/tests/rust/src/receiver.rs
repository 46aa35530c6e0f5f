//! The receiver around the generated Rust parsers: the generated stream type parses the whole
//! input, then this module does what the grammar cannot (spec "Decoding procedure"), in the
//! order of run_python.py: CRC24 (RECV-1), checksum bit (RECV-3), payload checksum (RECV-2),
//! LZ4 decoding (LZ4-4, LZ4-6) and `cql_envelopes` on the decompressed content, sequence reassembly
//! parsed with `cql_envelope` (RECV-6 to RECV-10), the receiver's body limit (RECV-12).

use std::any::Any;

use kaitai::{KError, KStruct, OptRc};

use crate::checks::{crc24, lz4_decompress, Algorithm};
use crate::generated::cql_envelope::{CqlEnvelope, CqlEnvelope_Header, CqlEnvelope_Opcode};
use crate::generated::cql_envelopes::CqlEnvelopes;
use crate::generated::cql_frame_lz4::CqlFrameLz4;
use crate::generated::cql_frame_uncompressed::CqlFrameUncompressed;
use crate::generated::cql_frames_lz4::CqlFramesLz4;
use crate::generated::cql_frames_uncompressed::CqlFramesUncompressed;
use crate::grammar::{parse, parse_nested, ParseFailure, Stage};

/// The frame format of a connection (FMT-2, FMT-7), as the manifest names it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Uncompressed,
    Lz4,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Uncompressed => "uncompressed",
            Format::Lz4 => "lz4",
        }
    }
}

/// What the receiver needs of one parsed frame, whichever the format.
struct FrameView {
    size: usize,
    payload_length: u64,
    /// None for the uncompressed format.
    uncompressed_length: Option<u64>,
    self_contained: bool,
    checksum_bit: bool,
    /// No LZ4 block to decode: the uncompressed format, or a stored LZ4 frame (LZ4-2).
    stored: bool,
    reserved: u64,
    header_crc24: u64,
    crc24_input: Vec<u8>,
    payload: Vec<u8>,
    block: Vec<u8>,
    envelopes: Vec<OptRc<CqlEnvelope>>,
    payload_checksum: u32,
}

/// One decoded frame, in the manifest's terms.
#[derive(Debug)]
pub struct FrameRecord {
    pub offset: usize,
    pub self_contained: bool,
    pub payload_length: u64,
    pub uncompressed_length: Option<u64>,
    pub checksum_bit: bool,
    pub reserved: u64,
    pub header_crc24: String,
    pub payload_checksum: String,
    pub payload: Vec<u8>,
    pub content: Vec<u8>,
}

/// One decoded envelope, in the manifest's terms.
#[derive(Debug)]
pub struct EnvelopeRecord {
    pub version: u8,
    pub flags: u8,
    pub stream: i16,
    pub opcode: i64,
    pub opcode_name: String,
    pub length: i32,
    pub body: Vec<u8>,
}

/// How a decode ended.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Outcome {
    Accepted,
    /// The runner's own checks found this rule.
    Runner(&'static str),
    /// A generated parser raised this kst-named error at this stage.
    Grammar {
        stage: Stage,
        exception: &'static str,
    },
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Accepted => write!(f, "accepted"),
            Outcome::Runner(rule) => write!(f, "runner {rule}"),
            Outcome::Grammar { stage, exception } => {
                write!(f, "grammar {} {exception}", stage.name())
            }
        }
    }
}

/// What a decode produced.
#[derive(Debug)]
pub struct Decoded {
    pub frames: Vec<FrameRecord>,
    pub envelopes: Vec<EnvelopeRecord>,
    pub outcome: Outcome,
}

/// Why the runner could not decode a case at all (a failed test, not an outcome).
#[derive(Debug)]
pub enum RunnerError {
    Runtime(ParseFailure),
    Instance(KError),
    Coverage { covered: usize, length: usize },
}

impl std::fmt::Display for RunnerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunnerError::Runtime(failure) => write!(f, "{failure}"),
            RunnerError::Instance(error) => write!(f, "instance: runtime error {error:?}"),
            RunnerError::Coverage { covered, length } => {
                write!(f, "frames cover {covered} of {length} bytes")
            }
        }
    }
}

/// The end of a decode before the whole input was taken: an outcome, or a runner error.
enum Stop {
    Outcome(Outcome),
    Error(RunnerError),
}

impl From<ParseFailure> for Stop {
    fn from(failure: ParseFailure) -> Self {
        match failure {
            ParseFailure::Grammar { stage, name, .. } => Stop::Outcome(Outcome::Grammar {
                stage,
                exception: name,
            }),
            runtime @ ParseFailure::Runtime { .. } => Stop::Error(RunnerError::Runtime(runtime)),
        }
    }
}

impl From<KError> for Stop {
    fn from(error: KError) -> Self {
        Stop::Error(RunnerError::Instance(error))
    }
}

fn rule(rule: &'static str) -> Stop {
    Stop::Outcome(Outcome::Runner(rule))
}

/// Views a generated frame `$f` of either format: both name their common header fields and
/// payload instances alike; the rest is given (`$length` and the others may use `h`, the
/// header). The value is bound before it is returned, as its fields borrow through `Ref`s.
macro_rules! frame_view {
    ($f:expr, |$h:ident| $header_size:literal + $length:expr, $uncompressed:expr, $stored:expr, $block:expr) => {{
        let ($h, p) = ($f.header(), $f.payload());
        let payload_length = $length;
        let view = FrameView {
            size: $header_size + payload_length as usize + 4,
            payload_length,
            uncompressed_length: $uncompressed,
            self_contained: *$h.self_contained(),
            checksum_bit: *$h.checksum_bit(),
            stored: $stored,
            reserved: *$h.reserved(),
            header_crc24: *$h.header_crc24(),
            crc24_input: $h.crc24_input()?.clone(),
            payload: p.bytes()?.clone(),
            block: $block,
            envelopes: p.envelopes().clone(),
            payload_checksum: *$f.payload_checksum(),
        };
        Ok(view)
    }};
}

fn uncompressed_view(f: &OptRc<CqlFrameUncompressed>) -> Result<FrameView, KError> {
    frame_view!(f, |h| 6 + *h.payload_length(), None, true, Vec::new())
}

fn lz4_view(f: &OptRc<CqlFrameLz4>) -> Result<FrameView, KError> {
    frame_view!(
        f,
        |h| 8 + *h.compressed_length(),
        Some(*h.uncompressed_length()),
        *h.is_stored()?,
        f.payload().block().clone()
    )
}

/// Parses a whole input with the stream type S and views each of its frames with `view`.
fn views_of<S: KStruct + Any>(
    data: &[u8],
    view: impl Fn(&S) -> Result<Vec<FrameView>, KError>,
) -> Result<Vec<FrameView>, Stop> {
    let stream = parse::<S>(Stage::Frames, data)?;
    let views = view(&stream)?;
    Ok(views)
}

/// Parses a whole input with the stream type of `format` and views each of its frames.
fn frame_views(format: Format, data: &[u8]) -> Result<Vec<FrameView>, Stop> {
    match format {
        Format::Uncompressed => views_of(data, |s: &CqlFramesUncompressed| {
            s.frames().iter().map(uncompressed_view).collect()
        }),
        Format::Lz4 => views_of(data, |s: &CqlFramesLz4| {
            s.frames().iter().map(lz4_view).collect()
        }),
    }
}

/// The manifest's name of an opcode: the generated enum's member name in upper snake case,
/// or `0x42` for a value the enum does not list.
pub fn opcode_name(opcode: &CqlEnvelope_Opcode) -> String {
    if let CqlEnvelope_Opcode::Unknown(value) = opcode {
        return format!("{value:#04x}");
    }
    let mut name = String::new();
    for (i, c) in format!("{opcode:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

fn record(e: &CqlEnvelope) -> EnvelopeRecord {
    let h = e.header();
    let opcode = h.opcode();
    let record = EnvelopeRecord {
        version: *h.version(),
        flags: *h.flags(),
        stream: *h.stream(),
        opcode: i64::from(&*opcode),
        opcode_name: opcode_name(&opcode),
        length: *h.body_length(),
        body: e.body().clone(),
    };
    record
}

/// One direction of a connection, as a manifest case describes it.
pub struct Receiver {
    pub algorithm: Algorithm,
    pub max_body: i64,
}

impl Receiver {
    /// Decodes `data`; Err only when the runner itself cannot go on.
    pub fn decode(&self, format: Format, data: &[u8]) -> Result<Decoded, RunnerError> {
        let mut out = Decoded {
            frames: Vec::new(),
            envelopes: Vec::new(),
            outcome: Outcome::Accepted,
        };
        match frame_views(format, data).and_then(|views| self.receive(&views, data.len(), &mut out))
        {
            Ok(()) => Ok(out),
            Err(Stop::Outcome(outcome)) => Ok(Decoded { outcome, ..out }),
            Err(Stop::Error(error)) => Err(error),
        }
    }

    fn over_limit(&self, header: &CqlEnvelope_Header) -> bool {
        i64::from(*header.body_length()) > self.max_body
    }

    fn receive(&self, views: &[FrameView], length: usize, out: &mut Decoded) -> Result<(), Stop> {
        let mut offset = 0;
        let mut sequence: Option<Vec<u8>> = None;
        for f in views {
            if u64::from(crc24(&f.crc24_input)) != f.header_crc24 {
                return Err(rule("RECV-1"));
            }
            if f.checksum_bit != (self.algorithm == Algorithm::Crc32c) {
                return Err(rule("RECV-3"));
            }
            if self.algorithm.checksum(&f.payload) != f.payload_checksum {
                return Err(rule("RECV-2"));
            }
            let content = match f.uncompressed_length {
                Some(declared) if !f.stored => {
                    lz4_decompress(&f.block, declared as usize).map_err(|e| rule(e.rule()))?
                }
                _ => f.payload.clone(),
            };
            out.frames.push(FrameRecord {
                offset,
                self_contained: f.self_contained,
                payload_length: f.payload_length,
                uncompressed_length: f.uncompressed_length,
                checksum_bit: f.checksum_bit,
                reserved: f.reserved,
                header_crc24: format!("{:06x}", f.header_crc24),
                payload_checksum: format!("{:08x}", f.payload_checksum),
                payload: f.payload.clone(),
                content: content.clone(),
            });
            offset += f.size;
            if f.self_contained {
                if sequence.is_some() {
                    return Err(rule("RECV-8"));
                }
                let envelopes = if f.stored {
                    f.envelopes.clone()
                } else {
                    parse::<CqlEnvelopes>(Stage::Content, &content)?
                        .envelopes()
                        .clone()
                };
                for e in &envelopes {
                    if self.over_limit(&e.header()) {
                        return Err(rule("RECV-12"));
                    }
                    out.envelopes.push(record(e));
                }
                continue;
            }
            if content.is_empty() {
                return Err(rule("RECV-10")); // the grammar catches it first
            }
            let bytes = sequence.get_or_insert_with(Vec::new);
            bytes.extend_from_slice(&content);
            if bytes.len() < 9 {
                continue;
            }
            let root = OptRc::from(CqlEnvelope::default());
            let header =
                parse_nested::<CqlEnvelope_Header, _>(Stage::Sequence, &bytes[..9], &root)?;
            if self.over_limit(&header) {
                return Err(rule("RECV-12"));
            }
            let total = 9 + *header.body_length() as usize;
            if bytes.len() > total {
                return Err(rule("RECV-7"));
            }
            if bytes.len() == total {
                out.envelopes
                    .push(record(&*parse::<CqlEnvelope>(Stage::Sequence, bytes)?));
                sequence = None;
            }
        }
        if offset != length {
            return Err(Stop::Error(RunnerError::Coverage {
                covered: offset,
                length,
            }));
        }
        if sequence.is_some() {
            return Err(rule("RECV-9"));
        }
        Ok(())
    }
}
