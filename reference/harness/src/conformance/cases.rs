//! The case catalogue (`conformance/cases.toml`): what each case asks the driver to do, what the
//! server does, and what the harness expects.

use cqlframe::checksum::PayloadChecksum;
use cqlframe::connection::ServerOptions;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use std::path::Path;

use crate::verdict::Level;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Catalogue {
    #[serde(rename = "case")]
    pub cases: Vec<Case>,
    /// SHA-256 of the catalogue's text: two runs compare like with like only under one digest.
    #[serde(skip)]
    pub digest: String,
}

/// Which cases of which catalogue a run ran: what `diff` compares before any outcome.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct Selection {
    /// The catalogue's [`Catalogue::digest`].
    pub catalogue: String,
    /// Only the quick subset.
    pub quick: bool,
    /// `--cases` patterns (empty: all).
    pub cases: Vec<String>,
    /// `--exclude` patterns.
    pub exclude: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub id: String,
    /// The spec section the case is listed under: catalogues and reports group by it.
    pub section: Section,
    pub title: String,
    pub description: String,
    /// Spec rule IDs the case tests.
    pub rules: Vec<String>,
    /// Bugs that shipped in a driver or server and that this case catches: ids of
    /// conformance/bugs.toml, beside the rules the bugs break.
    #[serde(default)]
    pub bugs: Vec<String>,
    /// MUST or SHOULD: the level of the main rule; a FAIL of a SHOULD case is NON-STRICT.
    pub level: Level,
    /// In the `--quick` subset.
    #[serde(default)]
    pub quick: bool,
    /// What the application must see: the true rows (`rows`), a successful run of the action
    /// (`ok`), or never data from the faulty response (`reject`).
    pub expect: Expect,
    /// Outcome when the driver did not opt in to what the case is about (for example CRC32C):
    /// the case is then INFORMATIONAL instead of PASS.
    #[serde(default)]
    pub informational_unless: Option<OptIn>,
    /// Whether the case is about framing, so that a driver that never switched to framing (it
    /// never sent a STARTUP of version 5 or later: it has no v5) is UNSUPPORTED rather than
    /// judged. Default: true unless the client asks for protocol 4 or the server stops at v4.
    #[serde(default)]
    pub needs_framing: Option<bool>,
    #[serde(default)]
    pub client: ClientParams,
    #[serde(default)]
    pub server: ServerScript,
}

/// The normative sections of spec/framing_v6.adoc, in the spec's order; the names are the
/// sections' anchors (spec/traceability.py checks that they exist).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    Lifecycle,
    Negotiation,
    Formats,
    Checksums,
    Lz4,
    Envelopes,
    Sending,
    Receiving,
    Errors,
}

impl Section {
    /// The section's title in the spec.
    pub fn title(self) -> &'static str {
        match self {
            Section::Lifecycle => "Connection lifecycle",
            Section::Negotiation => "Negotiation",
            Section::Formats => "Frame formats",
            Section::Checksums => "Checksums",
            Section::Lz4 => "LZ4 payloads",
            Section::Envelopes => "Envelopes",
            Section::Sending => "Sending",
            Section::Receiving => "Receiving",
            Section::Errors => "Error handling",
        }
    }
}

/// Something the server does on purpose, after which a client closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provocation {
    /// STARTUP answered with ERROR (script `startup_error`): the client should close (LIFE-10).
    StartupError,
    /// An unframed response to no request before READY (script `unpaired_response`): the
    /// client must close (LIFE-13).
    UnpairedResponse,
    /// STARTUP answered with an unframed envelope header whose body length is negative (script
    /// `negative_length`): nothing says where the next envelope begins, so the client closes
    /// (ENV-3).
    NegativeLength,
}

impl Provocation {
    pub fn rule(self) -> &'static str {
        match self {
            Provocation::StartupError => "LIFE-10",
            Provocation::UnpairedResponse => "LIFE-13",
            Provocation::NegativeLength => "ENV-3",
        }
    }

    pub fn level(self) -> Level {
        match self {
            Provocation::StartupError => Level::Should,
            Provocation::UnpairedResponse | Provocation::NegativeLength => Level::Must,
        }
    }

    /// What the server sends.
    pub fn what(self) -> &'static str {
        match self {
            Provocation::StartupError => "ERROR response to STARTUP",
            Provocation::UnpairedResponse => "response to no request",
            Provocation::NegativeLength => "envelope with a negative body length",
        }
    }

    /// The connection, as the judge's messages name it.
    pub fn connection(self) -> &'static str {
        match self {
            Provocation::StartupError => "whose STARTUP got ERROR",
            Provocation::UnpairedResponse => "on which a response to no request came before READY",
            Provocation::NegativeLength => {
                "on which an unframed envelope with a negative body length came before READY"
            }
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    Rows,
    Ok,
    Reject,
    /// What the application sees is not judged (only that the adapter finishes); the case's
    /// checks are on the driver's bytes and connections.
    Any,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OptIn {
    Crc32c,
    Lz4,
    /// The driver sent OPTIONS after the switch (a heartbeat).
    Options,
}

/// The workload, passed to the adapter on its command line.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClientParams {
    /// `select`, `prepare-select`, `concurrent-select`, `insert-large`, `connect`,
    /// `idle-select` (connect, idle 3 s with heartbeats every second where the driver allows,
    /// then `select`).
    #[serde(default = "default_action")]
    pub action: String,
    /// `default` (the driver's own choice), `lz4` or `none`.
    #[serde(default = "default_str")]
    pub compression: String,
    /// `default`, `crc32c` or `crc32`: asks the adapter to opt in (where its driver can).
    #[serde(default = "default_str")]
    pub checksum: String,
    /// `default`, `4`, `5` or `6` (v6-beta).
    #[serde(default = "default_str")]
    pub protocol: String,
    #[serde(default)]
    pub auth: bool,
    /// `insert-large`: blob size in bytes.
    #[serde(default)]
    pub blob_size: usize,
    /// `concurrent-select`: number of requests in flight.
    #[serde(default)]
    pub requests: usize,
}

fn default_action() -> String {
    "select".into()
}

fn default_str() -> String {
    "default".into()
}

impl Default for ClientParams {
    fn default() -> Self {
        ClientParams {
            action: default_action(),
            compression: default_str(),
            checksum: default_str(),
            protocol: default_str(),
            auth: false,
            blob_size: 0,
            requests: 0,
        }
    }
}

/// What the server does.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerScript {
    /// Rows of `ks.t` and the size of each row's blob.
    #[serde(default = "default_rows")]
    pub rows: usize,
    #[serde(default = "default_row_size")]
    pub row_size: usize,
    /// `FRAME_CHECKSUMS` in SUPPORTED: `both` (crc32, crc32c), `crc32`, or `absent` (a server
    /// that predates FRAME_CHECKSUM and ignores the STARTUP key).
    #[serde(default = "default_checksums")]
    pub checksums: String,
    /// `lz4` listed in SUPPORTED COMPRESSION.
    #[serde(default = "default_true")]
    pub lz4: bool,
    /// Highest protocol version served: envelopes of a higher version get the unframed
    /// "unsupported protocol version" ERROR and a close (6: v3 to v6-beta).
    #[serde(default = "default_max_version")]
    pub max_version: u8,
    /// Answer STARTUP with AUTHENTICATE (PasswordAuthenticator), any credentials accepted.
    #[serde(default)]
    pub auth: bool,
    /// Answer every STARTUP with ERROR (PROTOCOL_ERROR): a STARTUP the server processed and
    /// rejected, after which both sides frame uncompressed with CRC32 (LIFE-8).
    #[serde(default)]
    pub startup_error: bool,
    /// Before answering STARTUP with READY, send an unframed response that pairs with no request
    /// ([`super::faults::stray_envelope`]): a client closes the connection (LIFE-13).
    #[serde(default)]
    pub unpaired_response: bool,
    /// Answer STARTUP with an unframed envelope header whose body length is -2
    /// ([`super::faults::negative_length_header`]) and nothing more: a client closes the
    /// connection (ENV-3). Serialised only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub negative_length: bool,
    /// Stream of the ERROR refusing a protocol version: `request` (the refused envelope's) or
    /// `zero` (what Apache Cassandra does, whatever the request's stream).
    #[serde(default = "default_refusal_stream")]
    pub refusal_stream: String,
    /// Refuse an unsupported version on the first envelope, OPTIONS included (true, what
    /// Apache Cassandra does), or answer OPTIONS of any version and refuse only the STARTUP.
    #[serde(default = "default_true")]
    pub refuse_options: bool,
    /// Version of the ERROR refusing a version of the 9-byte layout: absent, the highest
    /// non-beta version served (Apache Cassandra since 4.0.0); 6, v6-beta, as Cassandra 4.0-rc1
    /// answered, which a client must still take for a refusal (LIFE-11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_version: Option<u8>,
    /// Most content bytes per frame (9..=131071) and the envelope size from which envelopes go
    /// into a non-self-contained sequence. Default: Cassandra's 131060 / 131060.
    #[serde(default = "default_capacity")]
    pub capacity: usize,
    #[serde(default)]
    pub split_at: Option<usize>,
    /// Size of the first frame of every sequence when smaller than `capacity` (1..9 splits the
    /// envelope header across frames).
    #[serde(default)]
    pub first_piece: Option<usize>,
    /// Size of the last frame of every sequence, when shorter than the envelope (1..8 leaves
    /// the last frame fewer bytes than an envelope header).
    #[serde(default)]
    pub last_piece: Option<usize>,
    /// Pack the responses of one read into shared frames (true) or one frame per response.
    #[serde(default = "default_true")]
    pub pack: bool,
    /// LZ4: store every frame instead of compressing.
    #[serde(default)]
    pub lz4_store: bool,
    /// Value written into the reserved header bits of every framed response.
    #[serde(default)]
    pub reserved_bits: u8,
    /// Write an empty self-contained frame before every batch of response frames.
    #[serde(default)]
    pub empty_frames: bool,
    /// TCP delivery: write everything in chunks of this many bytes, each flushed and read by
    /// the driver before the next is written (0: whole; see [`super::delivery`]).
    #[serde(default)]
    pub chop: usize,
    /// Fault injected into the first response to a query on `ks.t`.
    #[serde(default)]
    pub fault: Option<Fault>,
}

fn default_rows() -> usize {
    20
}
fn default_row_size() -> usize {
    100
}
fn default_checksums() -> String {
    "both".into()
}
fn default_refusal_stream() -> String {
    "request".into()
}
fn default_max_version() -> u8 {
    6
}
fn default_true() -> bool {
    true
}
fn default_capacity() -> usize {
    131_060
}

impl ServerScript {
    /// What the script has the server do after which a client closes the connection.
    pub fn provocation(&self) -> Option<Provocation> {
        if self.startup_error {
            Some(Provocation::StartupError)
        } else if self.unpaired_response {
            Some(Provocation::UnpairedResponse)
        } else if self.negative_length {
            Some(Provocation::NegativeLength)
        } else {
            None
        }
    }

    /// What the server's `Connection` accepts, and its SUPPORTED lists.
    pub fn server_options(&self) -> ServerOptions {
        ServerOptions {
            lz4: self.lz4,
            checksums: match self.checksums.as_str() {
                "absent" => None,
                "crc32" => Some(vec![PayloadChecksum::Crc32]),
                _ => Some(vec![PayloadChecksum::Crc32, PayloadChecksum::Crc32c]),
            },
        }
    }
}

impl Default for ServerScript {
    fn default() -> Self {
        toml::from_str("").expect("defaults")
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    pub kind: FaultKind,
    /// Bit to flip (header, payload or trailer bit index; the payload default is its middle).
    #[serde(default)]
    pub bit: Option<usize>,
    /// `truncate-sequence`: frames of the sequence sent before the close.
    #[serde(default)]
    pub frames: Option<usize>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    HeaderBitflip,
    PayloadBitflip,
    TrailerBitflip,
    ChecksumBit,
    Lz4Length,
    Lz4BadOffset,
    Lz4EndsAfterMatch,
    Lz4LastMatchTooLate,
    TruncateSequence,
    TruncateFrame,
    Overshoot,
    Interleave,
    EmptyContinuation,
    PartialEnvelope,
    Unframed,
}

/// The catalogue's name of the fault (`header-bitflip`).
impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = serde_json::to_value(self).map_err(|_| std::fmt::Error)?;
        f.write_str(name.as_str().unwrap_or_default())
    }
}

impl FaultKind {
    /// The rule a receiver applies to detect it.
    pub fn rule(self) -> &'static str {
        match self {
            FaultKind::HeaderBitflip => "RECV-1",
            FaultKind::PayloadBitflip | FaultKind::TrailerBitflip => "RECV-2",
            FaultKind::ChecksumBit => "RECV-3",
            FaultKind::Lz4Length => "LZ4-4",
            FaultKind::Lz4BadOffset | FaultKind::Lz4EndsAfterMatch => "LZ4-4",
            FaultKind::Lz4LastMatchTooLate => "LZ4-6",
            FaultKind::TruncateSequence | FaultKind::TruncateFrame => "RECV-9",
            FaultKind::Overshoot => "RECV-7",
            FaultKind::Interleave => "RECV-8",
            FaultKind::EmptyContinuation => "RECV-10",
            FaultKind::PartialEnvelope => "RECV-5",
            FaultKind::Unframed => "LIFE-7",
        }
    }
}

impl Case {
    /// Whether the case catches `bug` (an id of conformance/bugs.toml).
    pub fn cites(&self, bug: &str) -> bool {
        self.bugs.iter().any(|b| b == bug)
    }

    pub fn needs_framing(&self) -> bool {
        self.needs_framing
            .unwrap_or(self.client.protocol != "4" && self.server.max_version >= 5)
    }
}

pub fn load(path: &Path) -> Result<Catalogue, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The cases as `list` prints them: under the title of their spec section, one line each (id,
/// level, the quick subset, the adapter's action, rules, title, the bugs it catches; `list
/// --json` has every field).
pub fn listing<'a>(cases: impl IntoIterator<Item = &'a Case>) -> String {
    let mut out = String::new();
    let mut section = None;
    for c in cases {
        if section != Some(c.section) {
            section = Some(c.section);
            out += &format!("{}\n", c.section.title());
        }
        out += &format!(
            "  {:34} {:6} {:5} {:17} {:24} {}{}\n",
            c.id,
            c.level.name(),
            if c.quick { "quick" } else { "" },
            c.client.action,
            c.rules.join(","),
            c.title,
            if c.bugs.is_empty() {
                String::new()
            } else {
                format!(" (bugs: {})", c.bugs.join(", "))
            }
        );
    }
    out
}

/// The cases that cite `bug` (an id of conformance/bugs.toml): those a reproduction runs.
pub fn citing<'a>(cases: &'a [Case], bug: &'a str) -> impl Iterator<Item = &'a Case> {
    cases.iter().filter(move |c| c.cites(bug))
}

/// A catalogue from its TOML text, its cases grouped by spec section (in the file's order within
/// a section).
pub fn parse(text: &str) -> Result<Catalogue, String> {
    let mut catalogue: Catalogue = toml::from_str(text).map_err(|e| e.to_string())?;
    catalogue.digest = hex::encode(sha2::Sha256::digest(text.as_bytes()));
    let mut seen = std::collections::HashSet::new();
    for case in &catalogue.cases {
        if !seen.insert(case.id.clone()) {
            return Err(format!("duplicate case id {}", case.id));
        }
        if case.rules.is_empty() {
            return Err(format!("case {} cites no rule", case.id));
        }
        let mut bugs = std::collections::HashSet::new();
        if let Some(b) = case.bugs.iter().find(|b| b.is_empty() || !bugs.insert(*b)) {
            return Err(format!("case {} cites bug {b:?} twice or empty", case.id));
        }
    }
    catalogue.cases.sort_by_key(|c| c.section);
    Ok(catalogue)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue(bugs: &str) -> Result<Catalogue, String> {
        parse(&format!(
            "[[case]]\nid = \"recv.x\"\nsection = \"receiving\"\ntitle = \"t\"\n\
             description = \"d\"\nrules = [\"RECV-4\"]\n{bugs}level = \"MUST\"\nexpect = \"rows\"\n"
        ))
    }

    /// The bugs a case catches are read, listed beside its rules, and written with the case.
    #[test]
    fn a_case_cites_the_bugs_it_catches() {
        let c = catalogue("bugs = [\"PYTHON-1337\", \"gocql#1\"]\n").unwrap();
        assert_eq!(c.cases[0].bugs, ["PYTHON-1337", "gocql#1"]);
        let line = listing(&c.cases);
        assert!(
            line.contains("RECV-4") && line.ends_with("t (bugs: PYTHON-1337, gocql#1)\n"),
            "{line}"
        );
        let json = serde_json::to_value(&c.cases[0]).unwrap();
        assert_eq!(json["bugs"], serde_json::json!(["PYTHON-1337", "gocql#1"]));
        assert_eq!(citing(&c.cases, "gocql#1").count(), 1);
        assert_eq!(citing(&c.cases, "gocql#2").count(), 0);
    }

    /// Without `bugs` a case catches none, and `list` shows nothing for them.
    #[test]
    fn bugs_default_to_none() {
        let c = catalogue("").unwrap();
        assert!(c.cases[0].bugs.is_empty());
        assert!(!listing(&c.cases).contains("bugs"));
    }

    #[test]
    fn a_bug_cited_twice_or_empty_is_refused() {
        for bugs in ["bugs = [\"A-1\", \"A-1\"]\n", "bugs = [\"\"]\n"] {
            let e = catalogue(bugs).unwrap_err();
            assert!(e.contains("recv.x") && e.contains("bug"), "{e}");
        }
    }
}
