//! `cqlframe conformance diff OLD NEW`: what changed between two runs' `report.json`, per
//! driver and case. A regression is an outcome getting worse in [`Outcome`]'s order (PASS,
//! INFORMATIONAL, UNSUPPORTED, NOT-EXERCISED, NON-STRICT, FAIL, ADAPTER-BROKEN). Before any
//! outcome, the two runs must compare like with like: the same catalogue, the same selection
//! of cases, and every (driver, case) of the baseline in the new run; otherwise the comparison
//! fails, since "no regression" would then only mean "nothing compared".

use super::cases::Selection;
use super::runner::CaseResult;
use crate::output;
use crate::verdict::Outcome;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The part of a `report.json` result that comparisons read.
#[derive(Clone, Debug, Deserialize)]
pub struct Entry {
    pub driver: String,
    pub case: String,
    pub outcome: Outcome,
    #[serde(default)]
    pub summary: String,
}

impl Entry {
    /// The entry a result of this run will have in its report.
    pub fn of(r: &CaseResult) -> Entry {
        Entry {
            driver: r.driver.clone(),
            case: r.case.clone(),
            outcome: r.outcome,
            summary: r.summary.clone(),
        }
    }
}

/// The part of a `report.json` that comparisons read.
#[derive(Deserialize)]
pub struct Report {
    /// The layout's version; absent in a report written before it had one (a driver's CI may
    /// keep such a baseline), whose results read the same.
    #[serde(default)]
    pub format: Option<u32>,
    /// Absent in reports written before runs recorded it.
    #[serde(default)]
    pub selection: Option<Selection>,
    pub results: Vec<Entry>,
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
    /// Why the two runs do not compare like with like.
    pub unlike: Vec<String>,
}

impl Diff {
    pub fn regressions(&self) -> usize {
        self.changes
            .values()
            .filter(|c| matches!(c, Change::Regressed { .. }))
            .count()
    }

    /// Whether a CI gate passes: no regression, and the runs compare like with like.
    pub fn passed(&self) -> bool {
        self.regressions() == 0 && self.unlike.is_empty()
    }
}

/// Why two selections do not compare like with like.
fn unlike(old: Option<&Selection>, new: Option<&Selection>) -> Vec<String> {
    let (Some(old), Some(new)) = (old, new) else {
        return vec![format!(
            "the {} report does not say which catalogue and cases it ran (a cqlframe from before runs recorded it): make a new baseline",
            if old.is_none() { "baseline" } else { "new" }
        )];
    };
    let mut why = Vec::new();
    if old.catalogue != new.catalogue {
        why.push(format!(
            "the case catalogues differ (cases.toml SHA-256 {}... in the baseline, {}... now): make a new baseline with this catalogue",
            old.catalogue.get(..12).unwrap_or(&old.catalogue),
            new.catalogue.get(..12).unwrap_or(&new.catalogue)
        ));
    }
    if old.quick != new.quick {
        let kind = |q: bool| {
            if q {
                "the quick subset"
            } else {
                "the full catalogue"
            }
        };
        why.push(format!(
            "the baseline ran {}, this run {}",
            kind(old.quick),
            kind(new.quick)
        ));
    }
    if (&old.cases, &old.exclude) != (&new.cases, &new.exclude) {
        why.push(format!(
            "the case selections differ (--cases {:?} --exclude {:?} in the baseline, --cases {:?} --exclude {:?} now)",
            old.cases, old.exclude, new.cases, new.exclude
        ));
    }
    why
}

/// (driver, case) to (outcome, summary).
fn outcomes(report: Report) -> BTreeMap<(String, String), (Outcome, String)> {
    report
        .results
        .into_iter()
        .map(|r| ((r.driver, r.case), (r.outcome, r.summary)))
        .collect()
}

/// Reads a conformance `report.json`.
pub fn read(path: &Path) -> std::result::Result<Report, String> {
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

/// Compares two runs; with `allow_missing`, a (driver, case) of the baseline that the new run
/// lacks is listed but does not fail the comparison.
pub fn compare(old: &Path, new: &Path, allow_missing: bool) -> std::result::Result<Diff, String> {
    Ok(compare_reports(read(old)?, read(new)?, allow_missing))
}

fn compare_reports(old: Report, new: Report, allow_missing: bool) -> Diff {
    let mut diff = Diff {
        unlike: unlike(old.selection.as_ref(), new.selection.as_ref()),
        ..Diff::default()
    };
    let old = outcomes(old);
    let mut new = outcomes(new);
    let missing: std::collections::BTreeSet<&str> = old
        .keys()
        .filter(|k| !new.contains_key(*k))
        .map(|(d, _)| d.as_str())
        .collect();
    if !missing.is_empty() && !allow_missing {
        let n = old.keys().filter(|k| !new.contains_key(*k)).count();
        diff.unlike.push(format!(
            "{n} (driver, case) pairs of the baseline are missing from the new run (drivers: {}); --allow-missing accepts that",
            missing.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
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
        for why in &self.unlike {
            writeln!(f, "NOT COMPARABLE: {why}")?;
        }
        write!(
            f,
            "{} regressions, {} other changes, {} unchanged{}",
            self.regressions(),
            self.changes.len() - self.regressions(),
            self.unchanged,
            if self.unlike.is_empty() {
                ""
            } else {
                "; the runs do not compare like with like"
            }
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
        let selection = Selection {
            catalogue: "ab".repeat(32),
            ..Selection::default()
        };
        serde_json::from_value(serde_json::json!({ "selection": selection, "results": results }))
            .unwrap()
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
        let diff = compare_reports(old, new, true);
        assert!(diff.unlike.is_empty());
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

    /// A baseline case the new run lacks, another catalogue, quick against full, or a report
    /// that does not say what it ran: the comparison fails though no outcome got worse.
    #[test]
    fn unlike_runs_fail_the_comparison() {
        let old = || report(&[("d", "a", "PASS"), ("d", "b", "FAIL")]);
        let diff = compare_reports(old(), report(&[("d", "a", "PASS")]), false);
        assert_eq!(diff.regressions(), 0);
        assert!(!diff.passed());
        assert!(diff.unlike[0].contains("1 (driver, case) pairs"), "{diff}");
        assert!(compare_reports(old(), report(&[("d", "a", "PASS")]), true).passed());
        // Another adapter name: nothing of the baseline is in the new run.
        let renamed = report(&[("d2", "a", "PASS"), ("d2", "b", "FAIL")]);
        let diff = compare_reports(old(), renamed, false);
        assert!(diff.unlike[0].contains("drivers: d)"), "{diff}");

        let mut quick = old();
        quick.selection.as_mut().unwrap().quick = true;
        let diff = compare_reports(old(), quick, false);
        assert!(
            diff.to_string()
                .contains("the baseline ran the full catalogue, this run the quick subset"),
            "{diff}"
        );
        let mut other = old();
        other.selection.as_mut().unwrap().catalogue = "cd".repeat(32);
        assert!(compare_reports(old(), other, false).unlike[0].contains("catalogues differ"));
        let mut unknown = old();
        unknown.selection = None;
        assert!(compare_reports(unknown, old(), false).unlike[0]
            .contains("baseline report does not say"));
        assert!(compare_reports(old(), old(), false).passed());
    }

    #[test]
    fn a_file_that_is_not_a_report_is_named() {
        let dir = std::env::temp_dir().join(format!("cqlframe-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\"results\": 3}").unwrap();
        let e = compare(&bad, &bad, false).unwrap_err();
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
        assert_eq!(compare(&unversioned, &current, false).unwrap().unchanged, 1);
        let e = compare(&current, &later, false).unwrap_err();
        assert!(
            e.contains(&format!("later.json: report.json of format {next}")),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
