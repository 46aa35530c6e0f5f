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

/// The case catalogue this `cqlframe` was built with. The cases are played by the server of the
/// same build, so an installed binary runs an adapter with no checkout of the kit beside it.
pub const CATALOGUE: &str = include_str!("../../../../conformance/cases.toml");

/// The case catalogue at `path`, or the one built in ([`CATALOGUE`]).
pub fn load(path: Option<PathBuf>) -> Result<cases::Catalogue, String> {
    match path {
        Some(path) => cases::load(&path),
        None => cases::parse(CATALOGUE),
    }
}

/// The kit's bundled adapters (`conformance/drivers/`), found from the repository the running
/// `cqlframe` belongs to (the binary's folder upwards, e.g. from `target/release/`), else the
/// source it was built from (a clone, or the checkout `cargo install --git` keeps), else from
/// the working directory upwards. An installed binary whose source is gone finds none: the
/// error says where it looked and which options do without them.
pub fn bundled_drivers() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().ok();
    // The repository root: this crate is reference/harness.
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap_or(Path::new(".."));
    let cwd = std::env::current_dir().ok();
    exe.as_deref()
        .and_then(find_upwards)
        .or_else(|| Some(source.join("conformance/drivers")).filter(|d| d.is_dir()))
        .or_else(|| cwd.as_deref().and_then(find_upwards))
        .ok_or_else(|| {
            format!(
                "the kit's bundled adapters (conformance/drivers) are not found above {}, in {} \
                 (the source this cqlframe was built from) or above {}: run your own adapter \
                 with --adapter NAME=PATH (no bundled adapter is needed then), or point at a \
                 checkout of the kit with --drivers-dir KIT/conformance/drivers",
                exe.as_deref().unwrap_or(Path::new("?")).display(),
                source.display(),
                cwd.as_deref().unwrap_or(Path::new("?")).display(),
            )
        })
}

/// The first `conformance/drivers/` in `start` or a folder above it.
fn find_upwards(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join("conformance/drivers"))
        .find(|d| d.is_dir())
}

/// Whether `id` is one of `patterns` (ids, or prefixes ending in `*`).
pub fn matches(id: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => id.starts_with(prefix),
        None => id == p,
    })
}
