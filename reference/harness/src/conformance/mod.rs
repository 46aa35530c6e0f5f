//! The conformance suite for CQL framing ("h2spec for CQL framing").
//!
//! Real drivers connect to the reference acting as a CQL server on 127.0.0.1; each case scripts
//! what the server does (split sizes, TCP chopping, injected faults); what the driver sends is
//! judged by [`crate::rules`]. See conformance/README.md. The `cqlframe conformance` command
//! (crate `cqlframe-cli`) drives it.

pub mod cases;
pub mod client;
pub mod frames;
pub mod report;
pub mod runner;
pub mod server;

use std::path::{Path, PathBuf};

/// The repository's `conformance/` folder: found from the working directory up, else where
/// this binary was built from.
pub fn conformance_dir() -> PathBuf {
    if let Ok(mut dir) = std::env::current_dir() {
        loop {
            let candidate = dir.join("conformance/cases.toml");
            if candidate.is_file() {
                return dir.join("conformance");
            }
            if !dir.pop() {
                break;
            }
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance")
}

/// The case catalogue at `path`, or the repository's `conformance/cases.toml`.
pub fn load(path: Option<PathBuf>) -> Result<cases::Catalogue, String> {
    let path = path.unwrap_or_else(|| conformance_dir().join("cases.toml"));
    cases::load(&path)
}

/// Whether `id` is one of `patterns` (ids, or prefixes ending in `*`).
pub fn matches(id: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => id.starts_with(prefix),
        None => id == p,
    })
}
