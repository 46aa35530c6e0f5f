//! A run of the suite: the cases selected from the catalogue, each driver's adapter checked
//! and then run on each case, every result's capture written, the reports published, and the
//! reasons the run fails. `cqlframe conformance` is its command line.

use super::adapter::{self, Driver, SelfCheck};
use super::cases::{Case, Selection};
use super::diff::Entry;
use super::expectations::{Expectations, Gate};
use super::report;
use super::runner::{self, CaseResult, Limits};
use super::{bundled_drivers, load, matches};
use crate::verdict::Outcome;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to run and how (the options of `cqlframe conformance run`).
#[derive(Clone, Debug)]
pub struct Options {
    /// Case catalogue (default: conformance/cases.toml as this cqlframe was built with it).
    pub catalogue: Option<PathBuf>,
    /// Adapters folder (default: conformance/drivers of the repository).
    pub drivers_dir: Option<PathBuf>,
    /// Drivers to run (empty: every adapter found, or none when `adapters` are given).
    pub drivers: Vec<String>,
    /// Adapters outside the kit, `NAME=PATH`.
    pub adapters: Vec<String>,
    /// Cases to run: ids or prefixes ending in `*` (empty: all).
    pub cases: Vec<String>,
    /// Cases to leave out, same syntax.
    pub exclude: Vec<String>,
    /// Only the cases marked quick.
    pub quick: bool,
    /// Any FAIL or NON-STRICT of any driver fails the run.
    pub strict: bool,
    /// The drivers' known failures: anything worse fails the run.
    pub expectations: Option<PathBuf>,
    pub report_dir: PathBuf,
    /// The limit on one adapter run, in seconds.
    pub run_timeout: u64,
    /// The adapter's own connect and request timeout, in seconds (default: from the run limit).
    pub request_timeout: Option<f64>,
    /// The limit on the adapter self-check, in seconds.
    pub setup_timeout: u64,
    /// How the command that runs a case again begins (the running `cqlframe`).
    pub exe: String,
}

/// What the run is doing, for a progress display.
pub enum Progress<'a> {
    /// The adapter self-check of `driver` begins.
    SelfCheck { driver: &'a str },
    /// The self-check failed: the driver's cases are not run.
    Broken { driver: &'a str, why: &'a str },
    /// A case's capture could not be written.
    NoCapture {
        driver: &'a str,
        case: &'a str,
        why: &'a str,
    },
    /// A case finished: the `done`-th of `total`.
    Case {
        done: usize,
        total: usize,
        result: &'a CaseResult,
    },
}

/// A finished run.
pub struct Finished {
    /// The matrix and where the reports went.
    pub published: String,
    /// How the results compare with the expectations file, when one was given.
    pub gate: Option<Gate>,
    /// Why the run fails (none: it passes).
    pub reasons: Vec<String>,
}

/// Runs the suite as `options` say and publishes its reports; an error is a run that could not
/// be made (catalogue, adapters, expectations or reports unreadable or unwritable).
pub fn run(options: &Options, mut progress: impl FnMut(Progress)) -> Result<Finished, String> {
    let started = Instant::now();
    let catalogue = load(options.catalogue.clone())?;
    let selection = Selection {
        catalogue: catalogue.digest.clone(),
        quick: options.quick,
        cases: options.cases.clone(),
        exclude: options.exclude.clone(),
    };
    let known = options
        .expectations
        .as_ref()
        .map(|path| Expectations::load(path, &catalogue.cases))
        .transpose()?;
    let cases: Vec<Case> = catalogue
        .cases
        .into_iter()
        .filter(|c| !options.quick || c.quick)
        .filter(|c| options.cases.is_empty() || matches(&c.id, &options.cases))
        .filter(|c| !matches(&c.id, &options.exclude))
        .collect();
    if cases.is_empty() {
        return Err("no case selected".into());
    }
    let mut drivers = drivers(options)?;
    let run_limit = Duration::from_secs(options.run_timeout);
    let limits = Limits {
        run: run_limit,
        request_seconds: options
            .request_timeout
            .unwrap_or_else(|| Limits::default_request_seconds(run_limit)),
    };
    let total = cases.len() * drivers.len();
    // Captures of an earlier run would be linked from nowhere: start afresh.
    let _ = std::fs::remove_dir_all(options.report_dir.join("pcap"));
    let mut results = Vec::new();
    let mut done = 0;
    for driver in &mut drivers {
        progress(Progress::SelfCheck {
            driver: &driver.name,
        });
        let (check, verdict) =
            adapter::self_check(driver, Duration::from_secs(options.setup_timeout));
        driver.self_check = match &verdict {
            Ok(()) => SelfCheck::Passed,
            Err(why) => {
                progress(Progress::Broken {
                    driver: &driver.name,
                    why,
                });
                SelfCheck::Failed { why: why.clone() }
            }
        };
        for case in &cases {
            done += 1;
            let mut r = match &verdict {
                Err(why) => CaseResult::not_run(driver, case, &check, why),
                Ok(()) => {
                    let mut r = runner::run_case(driver, case, limits)?;
                    r.rerun = Some(rerun_command(options, driver, &case.id));
                    r
                }
            };
            if verdict.is_ok() {
                if let Err(why) = runner::write_pcap(&mut r, &options.report_dir) {
                    progress(Progress::NoCapture {
                        driver: &driver.name,
                        case: &case.id,
                        why: &why,
                    });
                }
            }
            progress(Progress::Case {
                done,
                total,
                result: &r,
            });
            results.push(r);
        }
    }
    let run = report::Run {
        tool: report::Tool::Conformance,
        selection: Some(&selection),
        cases: &cases,
        drivers: &drivers,
        results: &results,
        seconds: started.elapsed().as_secs_f64(),
    };
    let published = report::publish(&run, &options.report_dir)?;
    let gate = known.map(|known| {
        let entries: Vec<Entry> = results.iter().map(Entry::of).collect();
        known.gate(&entries)
    });
    let reasons = reasons(&results, options.strict, gate.as_ref());
    Ok(Finished {
        published,
        gate,
        reasons,
    })
}

/// The drivers `options` select: the kit's adapters, then those from outside it.
fn drivers(options: &Options) -> Result<Vec<Driver>, String> {
    let mut drivers = if options.drivers.is_empty() && !options.adapters.is_empty() {
        Vec::new()
    } else {
        let drivers_dir = match &options.drivers_dir {
            Some(dir) => dir.clone(),
            None => bundled_drivers()?,
        };
        adapter::discover(&drivers_dir, &options.drivers)?
    };
    for spec in &options.adapters {
        let driver = adapter::external(spec)?;
        if drivers.iter().any(|d| d.name == driver.name) {
            return Err(format!(
                "--adapter {spec}: a driver named {} is already selected",
                driver.name
            ));
        }
        drivers.push(driver);
    }
    Ok(drivers)
}

/// Why a run with these results fails: the reference's FAILs, broken adapters, cases not
/// exercised, with `strict` any FAIL or NON-STRICT, and anything worse than the expectations.
fn reasons(results: &[CaseResult], strict: bool, gate: Option<&Gate>) -> Vec<String> {
    let count = |pred: &dyn Fn(&CaseResult) -> bool| results.iter().filter(|r| pred(r)).count();
    let reference_failed = count(&|r| r.driver == "reference" && r.outcome == Outcome::Fail);
    let broken = count(&|r| r.outcome == Outcome::AdapterBroken);
    let unexercised = count(&|r| r.outcome == Outcome::NotExercised);
    let strict_failed = if strict {
        count(&|r| matches!(r.outcome, Outcome::Fail | Outcome::NonStrict))
    } else {
        0
    };
    let mut reasons: Vec<String> = [
        (
            reference_failed,
            format!("the reference adapter FAILed {reference_failed} cases"),
        ),
        (
            broken,
            format!("{broken} cases are ADAPTER-BROKEN: an adapter breaks the contract (conformance/README.md, Writing an adapter); their lines above say how"),
        ),
        (
            unexercised,
            format!("{unexercised} cases are NOT-EXERCISED: the driver's reads could not be made to end where the case needs them; run them again"),
        ),
        (
            strict_failed,
            format!("--strict: {strict_failed} FAIL or NON-STRICT outcomes"),
        ),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(_, why)| why)
    .collect();
    if let Some(gate) = gate.filter(|g| !g.passed()) {
        reasons.push(format!(
            "{} outcomes are worse than the expectations file allows",
            gate.worse.len()
        ));
    }
    reasons
}

/// The one command that runs `case` again for `driver`, with this run's catalogue and limits.
fn rerun_command(options: &Options, driver: &Driver, case: &str) -> String {
    let mut words = vec![options.exe.clone(), "conformance".into()];
    words.extend(driver.selector());
    words.extend(["--cases".into(), case.to_string()]);
    if let Some(catalogue) = &options.catalogue {
        words.extend(["--catalogue".into(), catalogue.display().to_string()]);
    }
    if let Some(dir) = options.drivers_dir.as_ref().filter(|_| !driver.external) {
        words.extend(["--drivers-dir".into(), dir.display().to_string()]);
    }
    if options.run_timeout != 40 {
        words.extend(["--run-timeout".into(), options.run_timeout.to_string()]);
    }
    if let Some(t) = options.request_timeout {
        words.extend(["--request-timeout".into(), t.to_string()]);
    }
    // Beside this run's reports, not over them.
    let again = options.report_dir.join("again");
    words.extend(["--report-dir".into(), again.display().to_string()]);
    words
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:@+".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command names everything that selected the case, and reports beside this run's.
    #[test]
    fn a_rerun_command_selects_the_case_and_keeps_this_runs_reports() {
        let options = Options {
            catalogue: Some(PathBuf::from("kit/conformance/cases.toml")),
            drivers_dir: None,
            drivers: vec![],
            adapters: vec![],
            cases: vec![],
            exclude: vec![],
            quick: true,
            strict: false,
            expectations: None,
            report_dir: PathBuf::from("reports/new"),
            run_timeout: 60,
            request_timeout: None,
            setup_timeout: 900,
            exe: "cqlframe".into(),
        };
        let driver = super::super::adapter::external(&format!(
            "me={}",
            std::env::current_exe().unwrap().display()
        ))
        .unwrap();
        let command = rerun_command(&options, &driver, "recv.chop-7");
        for word in [
            "cqlframe conformance --adapter me=",
            "--cases recv.chop-7",
            "--catalogue kit/conformance/cases.toml",
            "--run-timeout 60",
            "--report-dir reports/new/again",
        ] {
            assert!(command.contains(word), "{command} lacks {word}");
        }
    }
}
