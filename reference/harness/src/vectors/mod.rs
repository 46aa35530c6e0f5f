//! Golden test vectors: the cases are built here, their expected results computed by the
//! reference decoder and checked against what each case intends, then written as
//! `vectors/manifest.json` plus one `.bin` per byte stream (format: `vectors/README.md`), and
//! one `vectors/pcap/<id>.pcap` capture per session case.

mod captures;
mod counts;
mod cql;
mod examples;
mod frames;
pub mod json;
mod sessions;

use cqlframe::format::FrameSettings;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Version of the manifest layout; bumped when a field changes meaning.
pub const MANIFEST_VERSION: u32 = 1;
/// Envelope body limit of a receiver unless a case says otherwise (RECV-12).
pub const DEFAULT_MAX_BODY: u32 = cqlframe::assembler::DEFAULT_MAX_ENVELOPE_BODY;
/// How a case's bytes are fed besides whole: each list of chunk sizes repeats to the end.
pub const CHUNKINGS: [&[usize]; 3] = [&[1], &[7], &[13, 1, 64, 3, 1500, 2]];

/// Which way a frame stream flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

/// What a case is about; `vectors/README.md` tabulates the cases by group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Boundaries,
    Sequences,
    Lz4,
    Negatives,
    ChecksumConfusion,
    Sessions,
}

impl Group {
    pub const ALL: [Group; 6] = [
        Group::Boundaries,
        Group::Sequences,
        Group::Lz4,
        Group::Negatives,
        Group::ChecksumConfusion,
        Group::Sessions,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Group::Boundaries => "valid field boundaries",
            Group::Sequences => "sequences",
            Group::Lz4 => "LZ4",
            Group::Negatives => "negatives",
            Group::ChecksumConfusion => "checksum confusion",
            Group::Sessions => "sessions",
        }
    }
}

/// One golden case.
pub struct Case {
    /// Stable ID: never reused for different bytes or meaning.
    pub id: String,
    pub group: Group,
    pub description: String,
    /// Spec rules the case exercises.
    pub rules: Vec<&'static str>,
    /// The rule the input breaks, `None` if valid. Generation fails if the reference disagrees.
    pub breaks: Option<&'static str>,
    pub input: Input,
}

pub enum Input {
    /// A stream of frames for a receiver already framing with `settings`.
    Frames {
        settings: FrameSettings,
        direction: Direction,
        max_body: u32,
        bytes: Vec<u8>,
        /// LZ4 output is not canonical: an encoder need not reproduce these bytes.
        decode_only: bool,
    },
    /// Both byte streams of a connection from its first byte, handshake included.
    Session(sessions::Session),
}

/// Every case, in manifest order.
pub fn cases() -> Vec<Case> {
    let mut all = frames::cases();
    all.extend(sessions::cases());
    all
}

/// Every file a generation writes, by path relative to the repository root. The documents that
/// state counts of the vectors are read from `root` and their generated spans filled in.
pub fn generate(root: &Path) -> Result<BTreeMap<PathBuf, Vec<u8>>, String> {
    let cases = cases();
    let mut files = BTreeMap::new();
    let mut entries = Vec::new();
    for case in &cases {
        let (entry, streams) = json::entry(case)?;
        entries.push(entry);
        for (name, bytes) in streams {
            files.insert(Path::new("vectors/cases").join(name), bytes);
        }
    }
    let manifest = serde_json::json!({
        "manifest_version": MANIFEST_VERSION,
        "generator": format!("cqlframe {}", env!("CARGO_PKG_VERSION")),
        "spec": "spec/framing_v6.adoc",
        "default_chunkings": CHUNKINGS,
        "cases": entries,
    });
    let mut text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
    text.push('\n');
    files.insert(PathBuf::from("vectors/manifest.json"), text.into_bytes());
    files.extend(captures::files(&cases)?);
    files.insert(
        PathBuf::from("spec/generated/examples.adoc"),
        examples::render(&cases)?.into_bytes(),
    );
    for doc in counts::DOCS {
        let text = std::fs::read_to_string(root.join(doc)).map_err(|e| format!("{doc}: {e}"))?;
        let filled = counts::fill(&text, &cases).map_err(|e| format!("{doc}: {e}"))?;
        files.insert(PathBuf::from(doc), filled.into_bytes());
    }
    Ok(files)
}

/// Writes a generation under `root`, replacing the previous case files and captures.
pub fn write(root: &Path) -> Result<usize, String> {
    let files = generate(root)?;
    for dir in ["vectors/cases", captures::DIR] {
        let dir = root.join(dir);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| e.to_string())?;
        }
    }
    for (path, bytes) in &files {
        let full = root.join(path);
        if let Some(dir) = full.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&full, bytes).map_err(|e| format!("{}: {e}", full.display()))?;
    }
    Ok(files.len())
}

/// Checks the files under `root` equal a fresh generation, and that every case decodes to its
/// expected result under every chunking. Returns the number of cases checked, or the problems.
pub fn verify(root: &Path) -> Result<usize, Vec<String>> {
    let files = generate(root).map_err(|e| vec![e])?;
    let mut problems = Vec::new();
    for (path, bytes) in &files {
        match std::fs::read(root.join(path)) {
            Ok(found) if &found == bytes => {}
            Ok(_) => problems.push(format!(
                "{}: differs from a fresh generation",
                path.display()
            )),
            Err(e) => problems.push(format!("{}: {e}", path.display())),
        }
    }
    for dir in ["vectors/cases", captures::DIR] {
        if let Ok(listing) = std::fs::read_dir(root.join(dir)) {
            for entry in listing.flatten() {
                let rel = Path::new(dir).join(entry.file_name());
                if !files.contains_key(&rel) {
                    problems.push(format!("{}: not produced by the generator", rel.display()));
                }
            }
        }
    }
    let cases = cases();
    for case in &cases {
        let whole = json::expected(case, None);
        for chunking in CHUNKINGS {
            if json::expected(case, Some(chunking)) != whole {
                problems.push(format!(
                    "{}: result differs when fed in chunks {chunking:?}",
                    case.id
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(cases.len())
    } else {
        Err(problems)
    }
}
