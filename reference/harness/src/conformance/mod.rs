//! The conformance suite for CQL framing ("h2spec for CQL framing").
//!
//! Real drivers connect to the reference acting as a CQL server on 127.0.0.1; each case scripts
//! what the server does (split sizes, TCP chopping, injected faults); what the driver sends is
//! judged by [`crate::rules`]. See conformance/README.md. The `cqlframe conformance` command
//! (crate `cqlframe-cli`) drives it.

pub mod adapter;
pub mod cases;
pub mod contract;
pub mod delivery;
pub mod diff;
pub mod expectations;
pub mod faults;
pub mod layout;
pub mod limits;
pub mod reference_adapter;
pub mod report;
pub mod runner;
pub mod server;
pub mod suite;

use std::path::{Path, PathBuf};

/// The kit's `conformance/` folder, found from the repository the running `cqlframe` belongs
/// to (the binary's folder upwards, e.g. from `target/release/`), else the one it was built
/// from, else from the working directory upwards. So the command finds its catalogue and
/// adapters from any working directory, a driver's own repository included.
pub fn conformance_dir() -> PathBuf {
    let from_exe = std::env::current_exe()
        .ok()
        .and_then(|exe| find_upwards(&exe));
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    from_exe
        .or_else(|| {
            built_from
                .join("cases.toml")
                .is_file()
                .then_some(built_from)
        })
        .or_else(|| std::env::current_dir().ok().and_then(|d| find_upwards(&d)))
        .unwrap_or_else(|| PathBuf::from("conformance"))
}

/// The first `conformance/` holding `cases.toml` in `start` or a folder above it.
fn find_upwards(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join("conformance"))
        .find(|c| c.join("cases.toml").is_file())
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
