//! `cqlframe conformance diff OLD NEW`: what changed between two runs' `report.json`, per
//! driver and case. A regression is an outcome getting worse in [`Outcome`]'s order (PASS,
//! INFORMATIONAL, UNSUPPORTED, NON-STRICT, FAIL); a driver's CI fails only on those.

use crate::output;
use crate::verdict::Outcome;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The part of a `report.json` result the comparison reads.
#[derive(Deserialize)]
struct Result {
    driver: String,
    case: String,
    outcome: Outcome,
    #[serde(default)]
    summary: String,
}

#[derive(Deserialize)]
struct Report {
    /// The layout's version; absent in a report written before it had one (a driver's CI may
    /// keep such a baseline), whose results read the same.
    #[serde(default)]
    format: Option<u32>,
    results: Vec<Result>,
}

/// One (driver, case) that differs between the runs.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    /// The outcome got worse.
    Regressed {
        old: Outcome,
        new: Outcome,
        summary: String,
    },
    /// The outcome got better.
    Improved { old: Outcome, new: Outcome },
    /// Only in the new run.
    Added(Outcome),
    /// Only in the old run.
    Removed(Outcome),
}

/// The changes, keyed by (driver, case), in that order.
#[derive(Debug, Default)]
pub struct Diff {
    pub changes: BTreeMap<(String, String), Change>,
    pub unchanged: usize,
}

impl Diff {
    pub fn regressions(&self) -> usize {
        self.changes
            .values()
            .filter(|c| matches!(c, Change::Regressed { .. }))
            .count()
    }
}

fn outcomes(report: Report) -> BTreeMap<(String, String), (Outcome, String)> {
    report
        .results
        .into_iter()
        .map(|r| ((r.driver, r.case), (r.outcome, r.summary)))
        .collect()
}

fn read(path: &Path) -> std::result::Result<Report, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let report: Report = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a conformance report.json ({e})", path.display()))?;
    match report.format {
        Some(v) if v > output::REPORT => Err(format!(
            "{}: report.json of format {v}, newer than this cqlframe reads ({}; see schemas/CHANGELOG.md)",
            path.display(),
            output::REPORT
        )),
        _ => Ok(report),
    }
}

/// Compares two runs.
pub fn compare(old: &Path, new: &Path) -> std::result::Result<Diff, String> {
    Ok(compare_reports(read(old)?, read(new)?))
}

fn compare_reports(old: Report, new: Report) -> Diff {
    let old = outcomes(old);
    let mut new = outcomes(new);
    let mut diff = Diff::default();
    for (key, (before, _)) in old {
        let change = match new.remove(&key) {
            None => Some(Change::Removed(before)),
            Some((after, summary)) if after > before => Some(Change::Regressed {
                old: before,
                new: after,
                summary,
            }),
            Some((after, _)) if after < before => Some(Change::Improved {
                old: before,
                new: after,
            }),
            Some(_) => None,
        };
        match change {
            Some(c) => {
                diff.changes.insert(key, c);
            }
            None => diff.unchanged += 1,
        }
    }
    for (key, (after, _)) in new {
        diff.changes.insert(key, Change::Added(after));
    }
    diff
}

impl fmt::Display for Diff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for ((driver, case), change) in &self.changes {
            match change {
                Change::Regressed { old, new, summary } => writeln!(
                    f,
                    "REGRESSED {driver:10} {case:36} {old} -> {new}  {summary}"
                )?,
                Change::Improved { old, new } => {
                    writeln!(f, "improved  {driver:10} {case:36} {old} -> {new}")?
                }
                Change::Added(o) => writeln!(f, "new       {driver:10} {case:36} {o}")?,
                Change::Removed(o) => writeln!(f, "removed   {driver:10} {case:36} (was {o})")?,
            }
        }
        write!(
            f,
            "{} regressions, {} other changes, {} unchanged",
            self.regressions(),
            self.changes.len() - self.regressions(),
            self.unchanged
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rows: &[(&str, &str, &str)]) -> Report {
        let results: Vec<serde_json::Value> = rows
            .iter()
            .map(|(d, c, o)| serde_json::json!({"driver": d, "case": c, "outcome": o, "summary": "why"}))
            .collect();
        serde_json::from_value(serde_json::json!({ "results": results })).unwrap()
    }

    #[test]
    fn only_a_worse_outcome_is_a_regression() {
        let old = report(&[
            ("d", "a", "PASS"),
            ("d", "b", "FAIL"),
            ("d", "c", "PASS"),
            ("d", "gone", "PASS"),
            ("e", "a", "INFORMATIONAL"),
        ]);
        let new = report(&[
            ("d", "a", "PASS"),
            ("d", "b", "NON-STRICT"),
            ("d", "c", "UNSUPPORTED"),
            ("d", "new", "FAIL"),
            ("e", "a", "FAIL"),
        ]);
        let diff = compare_reports(old, new);
        assert_eq!(diff.unchanged, 1);
        assert_eq!(diff.regressions(), 2);
        let key = |d: &str, c: &str| (d.to_string(), c.to_string());
        assert_eq!(
            diff.changes[&key("d", "b")],
            Change::Improved {
                old: Outcome::Fail,
                new: Outcome::NonStrict
            }
        );
        assert!(matches!(
            diff.changes[&key("d", "c")],
            Change::Regressed {
                new: Outcome::Unsupported,
                ..
            }
        ));
        assert!(matches!(
            diff.changes[&key("e", "a")],
            Change::Regressed {
                new: Outcome::Fail,
                ..
            }
        ));
        assert_eq!(diff.changes[&key("d", "new")], Change::Added(Outcome::Fail));
        assert_eq!(
            diff.changes[&key("d", "gone")],
            Change::Removed(Outcome::Pass)
        );
        assert!(diff
            .to_string()
            .ends_with("2 regressions, 3 other changes, 1 unchanged"));
    }

    #[test]
    fn a_file_that_is_not_a_report_is_named() {
        let dir = std::env::temp_dir().join(format!("cqlframe-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\"results\": 3}").unwrap();
        let e = compare(&bad, &bad).unwrap_err();
        assert!(e.contains("bad.json: not a conformance report.json"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_report_of_a_later_format_is_refused_and_one_without_format_read() {
        let dir = std::env::temp_dir().join(format!("cqlframe-diff-format-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let results = r#""results": [{"driver": "d", "case": "a", "outcome": "PASS"}]"#;
        let unversioned = dir.join("unversioned.json");
        std::fs::write(&unversioned, format!("{{{results}}}")).unwrap();
        let current = dir.join("current.json");
        std::fs::write(
            &current,
            format!(r#"{{"format": {}, {results}}}"#, output::REPORT),
        )
        .unwrap();
        let later = dir.join("later.json");
        let next = output::REPORT + 1;
        std::fs::write(&later, format!(r#"{{"format": {next}, {results}}}"#)).unwrap();
        assert_eq!(compare(&unversioned, &current).unwrap().unchanged, 1);
        let e = compare(&current, &later).unwrap_err();
        assert!(
            e.contains(&format!("later.json: report.json of format {next}")),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
