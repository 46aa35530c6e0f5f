//! Known failures: a driver's `conformance/expectations.toml` lists the cases it is known to
//! FAIL or fall short on (NON-STRICT), each with a reason and a link, as BoringSSL's bogo shim
//! lists its disabled tests. A run gated on it fails on anything worse than expected and
//! reports what got better, so that a known failure is neither hidden nor a red build forever.
//!
//! ```toml
//! [[known]]
//! driver = "python"            # optional: the entry then holds for every driver of the run
//! case = "recv.chop-1"
//! outcome = "FAIL"             # or "NON-STRICT"
//! reason = "a frame header split across two reads is read as a CRC24 mismatch"
//! link = "https://example.org/tracker/123"   # optional
//! ```

use super::cases::Case;
use super::diff::Entry;
use crate::verdict::Outcome;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// One known shortfall of a driver.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Known {
    /// The driver (adapter name) it holds for; every driver of the run when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    pub case: String,
    /// The worst outcome accepted: FAIL or NON-STRICT.
    pub outcome: Outcome,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// A driver's expectations file.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    #[serde(default)]
    pub known: Vec<Known>,
}

/// The worst outcome a case may have with no entry: a driver that says it cannot run a case,
/// or did not opt in to what it is about, has not regressed.
const WITHOUT_ENTRY: Outcome = Outcome::Unsupported;

impl Expectations {
    /// Reads an expectations file, checking every entry against the catalogue.
    pub fn load(path: &Path, catalogue: &[Case]) -> Result<Expectations, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Expectations::parse(&text, catalogue).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// An expectations file from its text: every case exists, every outcome is one a driver
    /// can be expected to have (FAIL or NON-STRICT), no case is listed twice for a driver.
    pub fn parse(text: &str, catalogue: &[Case]) -> Result<Expectations, String> {
        let e: Expectations = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut seen = std::collections::HashSet::new();
        for k in &e.known {
            if !catalogue.iter().any(|c| c.id == k.case) {
                return Err(format!("known case {:?} is not in the catalogue", k.case));
            }
            if !matches!(k.outcome, Outcome::Fail | Outcome::NonStrict) {
                return Err(format!(
                    "{}: outcome {}: only FAIL and NON-STRICT can be expected (a case is expected to pass; NOT-EXERCISED and ADAPTER-BROKEN are no verdicts)",
                    k.case, k.outcome
                ));
            }
            if k.reason.trim().is_empty() {
                return Err(format!("{}: the reason is empty", k.case));
            }
            if !seen.insert((k.driver.clone(), k.case.clone())) {
                return Err(format!("{} is listed twice", k.case));
            }
        }
        Ok(e)
    }

    /// The entry for `driver`'s `case`: one naming the driver first, else one for every driver.
    fn entry(&self, driver: &str, case: &str) -> Option<&Known> {
        let for_case = || self.known.iter().filter(move |k| k.case == case);
        for_case()
            .find(|k| k.driver.as_deref() == Some(driver))
            .or_else(|| for_case().find(|k| k.driver.is_none()))
    }

    /// Holds a run's results against the expectations.
    pub fn gate(&self, results: &[Entry]) -> Gate {
        let mut gate = Gate::default();
        for r in results {
            let entry = self.entry(&r.driver, &r.case);
            let accepted = entry.map_or(WITHOUT_ENTRY, |k| k.outcome);
            let key = (r.driver.clone(), r.case.clone());
            if !r.outcome.is_verdict() || r.outcome > accepted {
                gate.worse.push(Worse {
                    key,
                    outcome: r.outcome,
                    accepted,
                    summary: r.summary.clone(),
                });
            } else if let Some(k) = entry.filter(|k| r.outcome < k.outcome) {
                gate.better.push((key, r.outcome, k.clone()));
            }
        }
        for k in &self.known {
            let ran = results
                .iter()
                .any(|r| r.case == k.case && k.driver.as_ref().is_none_or(|d| *d == r.driver));
            if !ran {
                gate.not_run.push(k.clone());
            }
        }
        gate
    }
}

/// A result worse than its expectation.
#[derive(Debug)]
pub struct Worse {
    /// (driver, case)
    pub key: (String, String),
    pub outcome: Outcome,
    pub accepted: Outcome,
    pub summary: String,
}

/// What the expectations say of a run.
#[derive(Debug, Default)]
pub struct Gate {
    /// Results worse than expected (a case with no entry is expected to PASS, or to be
    /// INFORMATIONAL or UNSUPPORTED): the run fails.
    pub worse: Vec<Worse>,
    /// Known shortfalls that got better: the entry can go (reported, not failed).
    pub better: Vec<((String, String), Outcome, Known)>,
    /// Entries whose case did not run (another selection, another driver).
    pub not_run: Vec<Known>,
}

impl Gate {
    /// Whether the run passes the gate.
    pub fn passed(&self) -> bool {
        self.worse.is_empty()
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for w in &self.worse {
            let (driver, case) = &w.key;
            writeln!(
                f,
                "WORSE THAN EXPECTED {driver:10} {case:36} {} (accepted: {} at worst)  {}",
                w.outcome, w.accepted, w.summary
            )?;
        }
        for ((driver, case), outcome, k) in &self.better {
            writeln!(
                f,
                "better than expected {driver:10} {case:36} {outcome} (listed as {}: {}): remove or update the entry",
                k.outcome, k.reason
            )?;
        }
        for k in &self.not_run {
            writeln!(
                f,
                "not run             {:10} {:36} (listed as {})",
                k.driver.as_deref().unwrap_or("*"),
                k.case,
                k.outcome
            )?;
        }
        write!(
            f,
            "expectations: {} worse than expected, {} better, {} entries not run",
            self.worse.len(),
            self.better.len(),
            self.not_run.len()
        )
    }
}

/// The expectations that a run's results meet exactly: each FAIL and NON-STRICT listed, its
/// reason the result's summary (to be replaced by the author's words and a link). A run with
/// cases that gave no verdict cannot be a baseline.
pub fn baseline(results: &[Entry]) -> Result<Expectations, String> {
    if let Some(r) = results.iter().find(|r| !r.outcome.is_verdict()) {
        return Err(format!(
            "{} {} is {}: a baseline records verdicts only; fix or re-run first",
            r.driver, r.case, r.outcome
        ));
    }
    let known = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail | Outcome::NonStrict))
        .map(|r| Known {
            driver: Some(r.driver.clone()),
            case: r.case.clone(),
            outcome: r.outcome,
            reason: r.summary.clone(),
            link: None,
        })
        .collect();
    Ok(Expectations { known })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue() -> Vec<Case> {
        super::super::load(None)
            .expect("conformance/cases.toml")
            .cases
    }

    fn result(driver: &str, case: &str, outcome: Outcome) -> Entry {
        Entry {
            driver: driver.into(),
            case: case.into(),
            outcome,
            summary: format!("{outcome} because"),
        }
    }

    const FILE: &str = r#"
[[known]]
driver = "d"
case = "recv.chop-1"
outcome = "FAIL"
reason = "splits headers"
link = "https://example.org/1"

[[known]]
case = "recv.chop-7"
outcome = "NON-STRICT"
reason = "for every driver"
"#;

    /// Worse than expected fails the gate; better is reported; a case without an entry may be
    /// UNSUPPORTED but not NON-STRICT; no verdict is never expected.
    #[test]
    fn the_gate_fails_on_worse_and_reports_better() {
        let e = Expectations::parse(FILE, &catalogue()).unwrap();
        let gate = e.gate(&[
            result("d", "recv.chop-1", Outcome::Fail),
            result("d", "recv.chop-7", Outcome::Fail),
            result("d", "recv.chop-2", Outcome::Unsupported),
            result("d", "recv.chop-3", Outcome::NonStrict),
            result("d", "recv.chop-5", Outcome::NotExercised),
        ]);
        let worse: Vec<&str> = gate.worse.iter().map(|w| w.key.1.as_str()).collect();
        assert_eq!(worse, ["recv.chop-7", "recv.chop-3", "recv.chop-5"]);
        assert!(!gate.passed());
        assert!(gate.better.is_empty());

        let gate = e.gate(&[
            result("d", "recv.chop-1", Outcome::Pass),
            result("e", "recv.chop-7", Outcome::NonStrict),
        ]);
        assert!(gate.passed(), "{gate}");
        assert_eq!(gate.better.len(), 1);
        assert_eq!(gate.better[0].0 .1, "recv.chop-1");
        assert!(gate.to_string().contains("better than expected"));
        // The entry for driver d's chop-1 does not hold for driver e.
        let gate = e.gate(&[result("e", "recv.chop-1", Outcome::Fail)]);
        assert_eq!(gate.worse.len(), 1);
        assert_eq!(gate.not_run.len(), 2);
    }

    #[test]
    fn a_bad_entry_is_refused() {
        let cat = catalogue();
        for (text, says) in [
            ("[[known]]\ncase = \"no.such\"\noutcome = \"FAIL\"\nreason = \"x\"", "not in the catalogue"),
            ("[[known]]\ncase = \"recv.chop-1\"\noutcome = \"PASS\"\nreason = \"x\"", "only FAIL and NON-STRICT"),
            ("[[known]]\ncase = \"recv.chop-1\"\noutcome = \"NOT-EXERCISED\"\nreason = \"x\"", "only FAIL and NON-STRICT"),
            ("[[known]]\ncase = \"recv.chop-1\"\noutcome = \"FAIL\"\nreason = \" \"", "reason is empty"),
            ("[[known]]\ncase = \"recv.chop-1\"\noutcome = \"FAIL\"\nreason = \"x\"\n[[known]]\ncase = \"recv.chop-1\"\noutcome = \"FAIL\"\nreason = \"y\"", "listed twice"),
            ("[[known]]\ncase = \"recv.chop-1\"\noutcome = \"FAIL\"\nreason = \"x\"\nbug = 1", "unknown field"),
        ] {
            let e = Expectations::parse(text, &cat).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    /// A baseline lists exactly the shortfalls, and meets its own gate.
    #[test]
    fn a_baseline_meets_its_gate() {
        let results = [
            result("d", "recv.chop-1", Outcome::Fail),
            result("d", "recv.chop-2", Outcome::Pass),
            result("d", "recv.chop-3", Outcome::NonStrict),
        ];
        let e = baseline(&results).unwrap();
        assert_eq!(e.known.len(), 2);
        let text = toml::to_string(&e).unwrap();
        let again = Expectations::parse(&text, &catalogue()).unwrap();
        assert_eq!(again.known, e.known);
        assert!(again.gate(&results).passed());
        assert!(baseline(&[result("d", "recv.chop-1", Outcome::AdapterBroken)]).is_err());
    }
}
