//! `cqlframe probe HOST:PORT`: the reference as a client testing a server's framing, like
//! h2spec for HTTP/2. Each case opens its own connection, does one thing (a negotiation, a
//! packing or splitting of requests, a chopped delivery, an injected fault) and judges what the
//! server does against the spec. Outcomes, rule IDs and the report files (console matrix,
//! `report.json`, `junit.xml`, `index.html` with a wire log per case) are the conformance
//! suite's: the server under test is the one "driver" column.

pub mod cases;
pub mod client;

use crate::conformance::adapter::AdapterRun;
use crate::conformance::cases::Case;
use crate::conformance::matches;
use crate::conformance::runner::CaseResult;
use crate::conformance::server::{ConnRecord, Observations};
use crate::verdict::{Check, Level, Outcome, Status};
use serde::Deserialize;
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
