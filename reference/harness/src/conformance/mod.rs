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
pub mod segments;
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

/// The kit's bundled adapters (`conformance/drivers/`). An installed binary whose source is
/// gone finds none: the error says where it looked and which options do without them.
pub fn bundled_drivers() -> Result<PathBuf, String> {
    in_kit("conformance/drivers").map_err(|looked| {
        format!(
            "the kit's bundled adapters (conformance/drivers) are not found {looked}: run your \
             own adapter with --adapter NAME=PATH (no bundled adapter is needed then), or point \
             at a checkout of the kit with --drivers-dir KIT/conformance/drivers"
        )
    })
}

/// The spec as `spec/build.sh` renders it, when it has been: the HTML reports link each rule
/// to it and put a copy beside them.
pub fn rendered_spec() -> Option<PathBuf> {
    in_kit(&format!("build/spec/{}", crate::rules::SPEC_PAGE)).ok()
}

/// `relative`, a path in the kit, found from the repository the running `cqlframe` belongs to
/// (the binary's folder upwards, e.g. from `target/release/`), else the source it was built
/// from (a clone, or the checkout `cargo install --git` keeps), else from the working directory
/// upwards. The error says where it looked.
fn in_kit(relative: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().ok();
    // The repository root: this crate is reference/harness.
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap_or(Path::new(".."));
    let cwd = std::env::current_dir().ok();
    let upwards = |start: &Path| {
        start
            .ancestors()
            .map(|dir| dir.join(relative))
            .find(|p| p.exists())
    };
    exe.as_deref()
        .and_then(upwards)
        .or_else(|| Some(source.join(relative)).filter(|p| p.exists()))
        .or_else(|| cwd.as_deref().and_then(upwards))
        .ok_or_else(|| {
            format!(
                "above {}, in {} (the source this cqlframe was built from) or above {}",
                exe.as_deref().unwrap_or(Path::new("?")).display(),
                source.display(),
                cwd.as_deref().unwrap_or(Path::new("?")).display(),
            )
        })
}

/// Whether `id` is one of `patterns` (ids, or prefixes ending in `*`).
pub fn matches(id: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => id.starts_with(prefix),
        None => id == p,
    })
}
