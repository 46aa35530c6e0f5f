//! The probe's cases, one file per spec section. The catalogue (conformance/probe.toml) holds
//! each case's text; its code is the function of its section's file named after its id
//! (`probe.startup-lz4`: `startup_lz4` in `negotiation.rs`), found by [`code`].

use crate::conformance::cases::{self, Case, Section};
use steps::Run;

/// A section's cases: its `code(id)` is the function named as the id after `probe.`, with
/// hyphens as underscores.
macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        /// The code of this section's case `id`, if it has one.
        pub(super) fn code(id: &str) -> Option<super::steps::Run> {
            let name = id.strip_prefix("probe.")?.replace('-', "_");
            [$((stringify!($name), $name as super::steps::Run)),*]
                .into_iter()
                .find(|(n, _)| *n == name)
                .map(|(_, run)| run)
        }

        /// This section's case functions, by name.
        #[cfg(test)]
        pub(super) const NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

mod envelopes;
mod formats;
mod injection;
mod lifecycle;
mod lz4;
mod negotiation;
mod receiving;
pub mod steps;

/// The probe's catalogue (conformance/probe.toml, built into the command), grouped by spec
/// section.
pub fn catalogue() -> Vec<Case> {
    cases::parse(include_str!("../../../../../conformance/probe.toml"))
        .expect("conformance/probe.toml is a valid catalogue")
        .cases
}

/// The code of `case`: in its section's file, by its id.
pub fn code(case: &Case) -> Option<Run> {
    match case.section {
        Section::Lifecycle => lifecycle::code(&case.id),
        Section::Negotiation => negotiation::code(&case.id),
        Section::Formats => formats::code(&case.id),
        Section::Lz4 => lz4::code(&case.id),
        Section::Envelopes => envelopes::code(&case.id),
        Section::Receiving => receiving::code(&case.id),
        Section::Checksums | Section::Sending | Section::Errors => None,
    }
}

/// Every case function of every section: (section, function name).
#[cfg(test)]
pub fn functions() -> Vec<(Section, &'static str)> {
    [
        (Section::Lifecycle, lifecycle::NAMES),
        (Section::Negotiation, negotiation::NAMES),
        (Section::Formats, formats::NAMES),
        (Section::Lz4, lz4::NAMES),
        (Section::Envelopes, envelopes::NAMES),
        (Section::Receiving, receiving::NAMES),
    ]
    .into_iter()
    .flat_map(|(section, names)| names.iter().map(move |n| (section, *n)))
    .collect()
}
