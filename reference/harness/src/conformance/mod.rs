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
/// adapters from any working directory, a driver's own repository included. An installed
/// binary whose source folder is gone finds none: the error says where it looked and which
/// options point at a checkout of the kit.
pub fn conformance_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().ok();
    // The repository root: this crate is reference/harness.
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap_or(Path::new(".."));
    let built_from = source.join("conformance");
    let cwd = std::env::current_dir().ok();
    exe.as_deref()
        .and_then(find_upwards)
        .or_else(|| {
            built_from
                .join("cases.toml")
                .is_file()
                .then_some(built_from)
        })
        .or_else(|| cwd.as_deref().and_then(find_upwards))
        .ok_or_else(|| {
            format!(
                "no conformance/cases.toml found above {}, in {} (the source this cqlframe was \
                 built from) or above {}: give a checkout of the kit with --catalogue \
                 KIT/conformance/cases.toml and --drivers-dir KIT/conformance/drivers (with \
                 --adapter NAME=PATH alone, --catalogue is enough)",
                exe.as_deref().unwrap_or(Path::new("?")).display(),
                source.display(),
                cwd.as_deref().unwrap_or(Path::new("?")).display(),
            )
        })
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
    let path = match path {
        Some(path) => path,
        None => conformance_dir()?.join("cases.toml"),
    };
    cases::load(&path)
}

/// Whether `id` is one of `patterns` (ids, or prefixes ending in `*`).
pub fn matches(id: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => id.starts_with(prefix),
        None => id == p,
    })
}
