//! `cqlframe probe HOST:PORT`: the reference as a client testing a server's framing, like
//! h2spec for HTTP/2. Each case opens its own connection, does one thing (a negotiation, a
//! packing or splitting of requests, a chopped delivery, an injected fault) and judges what the
//! server does against the spec. Outcomes, rule IDs and the report files (console matrix,
//! `report.json`, `junit.xml`, `index.html` with a wire log per case) are the conformance
//! suite's: the server under test is the one "driver" column.

pub mod cases;
pub mod client;

use crate::conformance::cases::Case;
use crate::conformance::matches;
use crate::conformance::runner::{AdapterRun, CaseResult, Check, Outcome};
use crate::conformance::server::{ConnRecord, LogEntry, Observations};
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

/// The conformance suite's case record for a probe case.
fn as_case(spec: &cases::Spec) -> Case {
    let level = match spec.level {
        crate::conformance::cases::Level::Must => "MUST",
        _ => "SHOULD",
    };
    let doc = serde_json::json!({
        "id": spec.id,
        "title": spec.title,
        "description": spec.description,
        "rules": spec.rules,
        "level": level,
        "expect": "ok",
    });
    Case::deserialize(doc).expect("a probe case is a valid conformance case")
}

/// The outcome from the checks, as the conformance suite rates them.
fn outcome(v: &cases::Verdict) -> Outcome {
    let failed = |must: bool| {
        v.checks
            .iter()
            .any(|c| c.status == "fail" && c.level.starts_with("MUST") == must)
    };
    if failed(true) {
        Outcome::Fail
    } else if v.unsupported.is_some() {
        Outcome::Unsupported
    } else if failed(false) {
        Outcome::NonStrict
    } else if v.informational.is_some() {
        Outcome::Informational
    } else {
        Outcome::Pass
    }
}

/// Runs the cases against `target`; the results in catalogue order.
pub fn probe(
    target: &str,
    selected: &[String],
    timeout: Duration,
    fault_wait: Duration,
    mut progress: impl FnMut(usize, usize, &CaseResult),
) -> (Vec<Case>, Vec<CaseResult>, Option<String>) {
    let mut ctx = cases::Ctx {
        target: target.to_string(),
        timeout,
        fault_wait,
        supported: Vec::new(),
        release: None,
    };
    let catalogue = cases::catalogue();
    let chosen: Vec<&cases::Spec> = catalogue
        .iter()
        .filter(|s| {
            s.id == "probe.options"
                || s.id == "probe.startup"
                || selected.is_empty()
                || matches(s.id, selected)
        })
        .collect();
    let mut out_cases = Vec::new();
    let mut results = Vec::new();
    for (i, spec) in chosen.iter().enumerate() {
        let started = Instant::now();
        let mut v = cases::Verdict::default();
        (spec.run)(&mut ctx, &mut v);
        let mut checks: Vec<Check> = v.checks.clone();
        for (status, message) in [("unsupported", &v.unsupported), ("info", &v.informational)] {
            if let Some(message) = message {
                checks.push(Check {
                    rule: spec.rules[0].into(),
                    level: "MUST".into(),
                    status: status.into(),
                    message: message.clone(),
                });
            }
        }
        let outcome = outcome(&v);
        let summary = match outcome {
            Outcome::Pass => "as expected".to_string(),
            _ => checks
                .iter()
                .find(|c| c.status != "pass")
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
                log: log
                    .iter()
                    .map(|l| LogEntry {
                        t_ms: l.t_ms,
                        dir: l.dir,
                        text: l.text.clone(),
                    })
                    .collect(),
                ..ConnRecord::default()
            })
            .collect();
        let result = CaseResult {
            driver: String::new(),
            case: spec.id.to_string(),
            outcome,
            summary,
            checks,
            adapter: AdapterRun {
                command: vec![format!("cqlframe probe {target} --cases {}", spec.id)],
                exit: None,
                timed_out: false,
                seconds: started.elapsed().as_secs_f64(),
                report: serde_json::json!({ "supported": ctx.supported }),
                stderr_tail: String::new(),
            },
            server: Observations {
                connections,
                ..Observations::default()
            },
            pcap: None,
        };
        progress(i + 1, chosen.len(), &result);
        out_cases.push(as_case(spec));
        results.push(result);
    }
    (out_cases, results, ctx.release)
}

#[cfg(test)]
mod tests;
