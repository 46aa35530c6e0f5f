//! Verdicts as types: the level of a rule, the status of one check, the outcome of a case. The
//! conformance suite and the probe rate their cases with them, and the reports print them; the
//! rules engine ([`crate::rules`]) gives each finding a [`Level`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// Exit status of an adapter asked for a case or action it does not know (the adapter
/// contract of conformance/README.md); the harness calls the case UNSUPPORTED.
pub const EXIT_UNSUPPORTED: i32 = 127;

/// Serialises an optional value by its `Display` form (a report's `"v5 lz4 crc32c"`), or null.
pub fn as_text<T: fmt::Display, S: serde::Serializer>(
    value: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

/// How binding a rule is. MUST NOT is a MUST-level rule; SHOULD NOT a SHOULD-level one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
pub enum Level {
    #[serde(rename = "MUST")]
    Must,
    #[serde(rename = "SHOULD")]
    Should,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Pass,
    Fail,
    /// Said for the record; no judgement (for example a known deviation).
    Info,
    /// The implementation cannot be asked what the check needs.
    Unsupported,
    /// The case's stimulus could not be delivered as written (a read boundary the driver's
    /// reads could not be made to follow).
    NotExercised,
    /// The adapter broke its contract: no report, one that breaks the schema, or a crash or
    /// hang before the driver connected.
    AdapterBroken,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Info => "info",
            Status::Unsupported => "unsupported",
            Status::NotExercised => "not-exercised",
            Status::AdapterBroken => "adapter-broken",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One judged statement about a run.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub rule: String,
    pub level: Level,
    pub status: Status,
    pub message: String,
}

impl Check {
    pub fn new(rule: &str, level: Level, status: Status, message: impl Into<String>) -> Self {
        Check {
            rule: rule.to_string(),
            level,
            status,
            message: message.into(),
        }
    }

    /// A failed MUST: the case FAILs.
    pub fn breaks_must(&self) -> bool {
        self.status == Status::Fail && self.level == Level::Must
    }

    /// A failed SHOULD: the case is NON-STRICT at worst.
    pub fn breaks_should(&self) -> bool {
        self.status == Status::Fail && self.level == Level::Should
    }
}

/// The outcomes of a case for one implementation, worst last (the order `diff` ranks
/// regressions by). The last two are not verdicts on the implementation: the case did not run
/// as written (NOT-EXERCISED), or the adapter between the kit and the driver broke its
/// contract (ADAPTER-BROKEN).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, PartialOrd, Ord)]
pub enum Outcome {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "INFORMATIONAL")]
    Informational,
    #[serde(rename = "UNSUPPORTED")]
    Unsupported,
    #[serde(rename = "NOT-EXERCISED")]
    NotExercised,
    #[serde(rename = "NON-STRICT")]
    NonStrict,
    #[serde(rename = "FAIL")]
    Fail,
    #[serde(rename = "ADAPTER-BROKEN")]
    AdapterBroken,
}

impl Outcome {
    /// Every outcome, best first.
    pub const ALL: [Outcome; 7] = [
        Outcome::Pass,
        Outcome::Informational,
        Outcome::Unsupported,
        Outcome::NotExercised,
        Outcome::NonStrict,
        Outcome::Fail,
        Outcome::AdapterBroken,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Informational => "INFORMATIONAL",
            Outcome::Unsupported => "UNSUPPORTED",
            Outcome::NotExercised => "NOT-EXERCISED",
            Outcome::NonStrict => "NON-STRICT",
            Outcome::Fail => "FAIL",
            Outcome::AdapterBroken => "ADAPTER-BROKEN",
        }
    }

    /// Whether the outcome is a verdict on the implementation (not the kit's or the adapter's
    /// failure to ask it).
    pub fn is_verdict(self) -> bool {
        !matches!(self, Outcome::NotExercised | Outcome::AdapterBroken)
    }

    /// The outcome the checks give: a broken adapter or a case not exercised first (no verdict
    /// on the implementation stands then); a broken MUST fails; otherwise an unsupported case
    /// is UNSUPPORTED, a broken SHOULD NON-STRICT, a case the implementation did not opt in to
    /// INFORMATIONAL.
    pub fn rate(checks: &[Check], unsupported: bool, informational: bool) -> Outcome {
        if checks.iter().any(|c| c.status == Status::AdapterBroken) {
            Outcome::AdapterBroken
        } else if checks.iter().any(|c| c.status == Status::NotExercised) {
            Outcome::NotExercised
        } else if checks.iter().any(Check::breaks_must) {
            Outcome::Fail
        } else if unsupported {
            Outcome::Unsupported
        } else if checks.iter().any(Check::breaks_should) {
            Outcome::NonStrict
        } else if informational {
            Outcome::Informational
        } else {
            Outcome::Pass
        }
    }

    /// The check that decided this outcome, the most severe first: for a FAIL the first broken
    /// MUST (not an earlier SHOULD), for NON-STRICT the first broken SHOULD, for UNSUPPORTED
    /// and INFORMATIONAL the check saying why, for NOT-EXERCISED and ADAPTER-BROKEN the check
    /// of that status; none for a PASS.
    pub fn deciding(self, checks: &[Check]) -> Option<&Check> {
        checks.iter().find(|c| match self {
            Outcome::Fail => c.breaks_must(),
            Outcome::NonStrict => c.breaks_should(),
            Outcome::Unsupported => c.status == Status::Unsupported,
            Outcome::Informational => c.status == Status::Info,
            Outcome::NotExercised => c.status == Status::NotExercised,
            Outcome::AdapterBroken => c.status == Status::AdapterBroken,
            Outcome::Pass => false,
        })
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fail_is_explained_by_its_must_not_an_earlier_should() {
        let checks = [
            Check::new(
                "LZ4-3",
                Level::Should,
                Status::Fail,
                "stored frame compressed",
            ),
            Check::new(
                "LZ4-4",
                Level::Must,
                Status::Fail,
                "length mismatch accepted",
            ),
        ];
        let outcome = Outcome::rate(&checks, false, false);
        assert_eq!(outcome, Outcome::Fail);
        assert_eq!(
            outcome.deciding(&checks).map(|c| c.rule.as_str()),
            Some("LZ4-4")
        );
        assert_eq!(
            Outcome::NonStrict
                .deciding(&checks[..1])
                .map(|c| c.rule.as_str()),
            Some("LZ4-3")
        );
        assert!(Outcome::Pass.deciding(&checks).is_none());
    }
}
