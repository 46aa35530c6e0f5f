//! The golden vectors' manifest (vectors/manifest.json), the runners' table of invalid cases
//! (kaitai/tests/vector_negatives.yaml), and the comparison of a decode with a case's
//! `expected`, field by field as run_python.py compares them.

use std::fmt::Debug;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::checks::Algorithm;
use crate::grammar::Stage;
use crate::receiver::{EnvelopeRecord, Format, FrameRecord, Outcome};

pub fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes as the manifest gives them: in hex, or by SHA-256 when long.
#[derive(Deserialize)]
pub struct Blob {
    hex: Option<String>,
    sha256: Option<String>,
    length: usize,
}

impl Blob {
    fn same(&self, data: &[u8]) -> bool {
        self.length == data.len()
            && match (&self.hex, &self.sha256) {
                (Some(h), _) => *h == hex(data),
                (None, Some(sum)) => *sum == hex(&Sha256::digest(data)),
                (None, None) => false,
            }
    }
}

#[derive(Deserialize)]
pub struct ExpectedFrame {
    offset: usize,
    self_contained: bool,
    payload_length: u64,
    uncompressed_length: Option<u64>,
    checksum_bit: bool,
    reserved: u64,
    header_crc24: String,
    payload_checksum: String,
    payload: Blob,
    content: Blob,
}

#[derive(Deserialize)]
pub struct ExpectedEnvelope {
    version: u8,
    flags: u8,
    stream: i16,
    opcode: i64,
    opcode_name: String,
    length: i32,
    body: Blob,
}

#[derive(Deserialize)]
pub struct ExpectedError {
    pub rule: String,
}

#[derive(Deserialize)]
pub struct Expected {
    pub frames: Vec<ExpectedFrame>,
    pub envelopes: Vec<ExpectedEnvelope>,
    pub error: Option<ExpectedError>,
}

#[derive(Deserialize)]
pub struct Input {
    pub file: String,
}

/// A frames case of the manifest: one direction of a connection after the switch.
#[derive(Deserialize)]
pub struct FramesCase {
    pub id: String,
    pub format: Format,
    pub checksum: Algorithm,
    pub valid: bool,
    pub max_envelope_body: i64,
    pub input: Input,
    pub expected: Expected,
}

/// One case of the manifest; the runners take the frames cases.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Case {
    Frames(FramesCase),
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
pub struct Manifest {
    pub cases: Vec<Case>,
}

/// One line of vector_negatives.yaml: who catches an invalid case.
#[derive(Deserialize)]
pub struct Negative {
    pub rule: String,
    pub exception: Option<String>,
    pub stage: Option<Stage>,
    pub runner: Option<String>,
}

impl Negative {
    /// Whether a decode ended as this line says: the runner found the rule, or the grammar
    /// raised the exception at the stage.
    pub fn matches(&self, outcome: &Outcome) -> bool {
        match (outcome, &self.runner) {
            (Outcome::Runner(rule), Some(_)) => *rule == self.rule,
            (Outcome::Grammar { stage, exception }, None) => {
                self.stage == Some(*stage) && self.exception.as_deref() == Some(*exception)
            }
            _ => false,
        }
    }

    /// The outcome this line expects, spelled as Outcome's Display spells it.
    pub fn want(&self) -> String {
        match &self.runner {
            Some(_) => format!("runner {}", self.rule),
            None => format!(
                "grammar {} {}",
                self.stage.map_or("?", Stage::name),
                self.exception.as_deref().unwrap_or("?")
            ),
        }
    }
}

/// Adds a problem when a decoded field differs from the manifest's.
fn field<T: PartialEq + Debug>(problems: &mut Vec<String>, what: &str, got: T, want: T) {
    if got != want {
        problems.push(format!("{what}: {got:?} != {want:?}"));
    }
}

fn blob(problems: &mut Vec<String>, what: &str, got: &[u8], want: &Blob) {
    if !want.same(got) {
        problems.push(format!("{what} differs"));
    }
}

/// The differences of the decoded frames from the expected ones; with `whole` false only
/// the frames decoded before an error are compared, not their number.
pub fn compare_frames(got: &[FrameRecord], want: &[ExpectedFrame], whole: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if whole && got.len() != want.len() {
        problems.push(format!("{} frames, expected {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let p = &mut problems;
        field(p, &format!("frame {i} offset"), g.offset, w.offset);
        field(
            p,
            &format!("frame {i} self_contained"),
            g.self_contained,
            w.self_contained,
        );
        field(
            p,
            &format!("frame {i} payload_length"),
            g.payload_length,
            w.payload_length,
        );
        field(
            p,
            &format!("frame {i} uncompressed_length"),
            g.uncompressed_length,
            w.uncompressed_length,
        );
        field(
            p,
            &format!("frame {i} checksum_bit"),
            g.checksum_bit,
            w.checksum_bit,
        );
        field(p, &format!("frame {i} reserved"), g.reserved, w.reserved);
        field(
            p,
            &format!("frame {i} header_crc24"),
            &g.header_crc24,
            &w.header_crc24,
        );
        field(
            p,
            &format!("frame {i} payload_checksum"),
            &g.payload_checksum,
            &w.payload_checksum,
        );
        blob(p, &format!("frame {i} payload"), &g.payload, &w.payload);
        blob(p, &format!("frame {i} content"), &g.content, &w.content);
    }
    problems
}

pub fn compare_envelopes(got: &[EnvelopeRecord], want: &[ExpectedEnvelope]) -> Vec<String> {
    let mut problems = Vec::new();
    if got.len() != want.len() {
        problems.push(format!("{} envelopes, expected {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let p = &mut problems;
        field(p, &format!("envelope {i} version"), g.version, w.version);
        field(p, &format!("envelope {i} flags"), g.flags, w.flags);
        field(p, &format!("envelope {i} stream"), g.stream, w.stream);
        field(p, &format!("envelope {i} opcode"), g.opcode, w.opcode);
        field(
            p,
            &format!("envelope {i} opcode_name"),
            &g.opcode_name,
            &w.opcode_name,
        );
        field(p, &format!("envelope {i} length"), g.length, w.length);
        blob(p, &format!("envelope {i} body"), &g.body, &w.body);
    }
    problems
}
