//! `cqlframe probe HOST:PORT`: the reference as a client testing a server's framing, like
//! h2spec for HTTP/2. Each case opens its own connection, does one thing (a negotiation, a
//! packing or splitting of requests, a chopped delivery, an injected fault) and judges what the
//! server does against the spec. Outcomes, rule IDs and the report files (console matrix,
//! `report.json`, `junit.xml`, `index.html` with a wire log per case) are the conformance
//! suite's: the server under test is the one "driver" column.

pub mod cases;
pub mod client;

use crate::conformance::adapter::{AdapterRun, Driver, SelfCheck};
use crate::conformance::cases::Case;
use crate::conformance::matches;
use crate::conformance::report;
use crate::conformance::runner::CaseResult;
use crate::conformance::server::{ConnRecord, Observations};
use crate::verdict::{Check, Level, Outcome, Status};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Known deviations of a server: their FAILs are reported but do not fail the run.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deviations {
    #[serde(default)]
    pub deviation: Vec<Deviation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deviation {
    pub case: String,
    pub rule: String,
    /// The anchor of spec/framing_v6.adoc's errata that documents it, if any.
    #[serde(default)]
    pub errata: Option<String>,
    pub note: String,
}

/// What to probe and how (the options of `cqlframe probe`).
#[derive(Clone, Debug)]
pub struct Options {
    /// The server, HOST:PORT.
    pub target: String,
    /// Cases to run: ids or prefixes ending in `*` (empty: all).
    pub cases: Vec<String>,
    pub report_dir: PathBuf,
    /// How long to wait for an answer.
    pub timeout: Duration,
    /// How long to watch the server after a fault for its ERROR and close.
    pub fault_wait: Duration,
    /// Files of known deviations of this server (their lists add up).
    pub deviations: Vec<PathBuf>,
    /// Name of the server in the reports (default: the release_version it reports, and the
    /// address).
    pub name: Option<String>,
}

/// A finished probe.
pub struct Finished {
    /// The matrix and where the reports went.
    pub published: String,
    /// Deviations listed for cases that did not fail: (case, rule).
    pub listed_but_passed: Vec<(String, String)>,
    /// Cases that FAILed outside the known deviations: the probe fails.
    pub unexpected: Vec<String>,
}

/// Probes the server as `options` say, with `progress` told of each case as it finishes, and
/// publishes the reports; an error is a probe that could not be made (deviations unreadable,
/// reports unwritable).
pub fn run(
    options: &Options,
    progress: impl FnMut(usize, usize, &CaseResult),
) -> Result<Finished, String> {
    let mut deviations = Vec::new();
    for path in &options.deviations {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        deviations.extend(
            toml::from_str::<Deviations>(&text)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .deviation,
        );
    }
    let started = Instant::now();
    let target = &options.target;
    let (cases, mut results, release) = probe(
        target,
        &options.cases,
        options.timeout,
        options.fault_wait,
        progress,
    );
    let name = options.name.clone().unwrap_or_else(|| match &release {
        Some(r) => format!("{target} ({r})"),
        None => target.clone(),
    });
    let mut unexpected = Vec::new();
    let mut listed_but_passed = Vec::new();
    for r in &mut results {
        r.driver = name.clone();
        let known = deviations.iter().find(|d| d.case == r.case);
        match (r.outcome, known) {
            (Outcome::Fail, Some(d)) => {
                r.checks.push(Check::new(
                    &d.rule,
                    Level::Must,
                    Status::Info,
                    format!(
                        "known deviation of this server{}: {}",
                        d.errata
                            .as_ref()
                            .map(|e| format!(" (spec errata: {e})"))
                            .unwrap_or_default(),
                        d.note
                    ),
                ));
                r.summary = format!("known deviation ({}): {}", d.rule, r.summary);
            }
            (Outcome::Fail, None) => unexpected.push(r.case.clone()),
            (_, Some(d)) => listed_but_passed.push((d.case.clone(), d.rule.clone())),
            _ => {}
        }
    }
    let drivers = [Driver {
        name,
        run: PathBuf::new(),
        external: false,
        self_check: SelfCheck::NotRun,
    }];
    let run = report::Run {
        tool: report::Tool::Probe,
        selection: None,
        cases: &cases,
        drivers: &drivers,
        results: &results,
        seconds: started.elapsed().as_secs_f64(),
    };
    let published = report::publish(&run, &options.report_dir)?;
    Ok(Finished {
        published,
        listed_but_passed,
        unexpected,
    })
}

/// Runs the cases against `target`; the results in catalogue order.
pub fn probe(
    target: &str,
    selected: &[String],
    timeout: Duration,
    fault_wait: Duration,
    mut progress: impl FnMut(usize, usize, &CaseResult),
) -> (Vec<Case>, Vec<CaseResult>, Option<String>) {
    let mut ctx = cases::steps::Ctx {
        target: target.to_string(),
        timeout,
        fault_wait,
        supported: Vec::new(),
        release: None,
    };
    let chosen: Vec<Case> = cases::catalogue()
        .into_iter()
        .filter(|c| {
            c.id == "probe.options"
                || c.id == "probe.startup"
                || selected.is_empty()
                || matches(&c.id, selected)
        })
        .collect();
    let mut results = Vec::new();
    for (i, case) in chosen.iter().enumerate() {
        let started = Instant::now();
        let mut v = cases::steps::Evidence::default();
        let run = cases::code(case).expect("every case of the catalogue has its code");
        run(&mut ctx, &mut v);
        let mut checks: Vec<Check> = v.checks.clone();
        for (status, message) in [
            (Status::Unsupported, &v.unsupported),
            (Status::Info, &v.informational),
        ] {
            if let Some(message) = message {
                checks.push(Check::new(
                    &case.rules[0],
                    Level::Must,
                    status,
                    message.clone(),
                ));
            }
        }
        let outcome = Outcome::rate(&checks, v.unsupported.is_some(), v.informational.is_some());
        let summary = match outcome {
            Outcome::Pass => "as expected".to_string(),
            _ => outcome
                .deciding(&checks)
                .map(|c| format!("{}: {}", c.rule, c.message))
                .unwrap_or_default(),
        };
        let connections = v
            .logs
            .iter()
            .enumerate()
            .map(|(id, log)| ConnRecord {
                id,
                closed_by: Some("probe".into()),
                log: log.clone(),
                ..ConnRecord::default()
            })
            .collect();
        let result = CaseResult {
            driver: String::new(),
            case: case.id.clone(),
            outcome,
            summary,
            checks,
            adapter: AdapterRun {
                command: vec![format!("cqlframe probe {target} --cases {}", case.id)],
                exit: None,
                timed_out: false,
                seconds: started.elapsed().as_secs_f64(),
                limit_seconds: 0.0,
                report: serde_json::json!({ "supported": ctx.supported }),
                broken: None,
                stderr_tail: String::new(),
            },
            server: Observations {
                connections,
                ..Observations::default()
            },
            pcap: None,
            rerun: Some(format!("cqlframe probe {target} --cases {}", case.id)),
        };
        progress(i + 1, chosen.len(), &result);
        results.push(result);
    }
    (chosen, results, ctx.release)
}

#[cfg(test)]
mod tests;
