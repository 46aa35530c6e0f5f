//! `cqlframe probe HOST:PORT`: the reference as a client testing a server's framing, like
//! h2spec for HTTP/2. Each case opens its own connection, does one thing (a negotiation, a
//! packing or splitting of requests, a chopped delivery, an injected fault) and judges what the
//! server does against the spec. Outcomes, rule IDs and the report files (console matrix,
//! `report.json`, `junit.xml`, `index.html` with a wire log per case) are the conformance
//! suite's: the server under test is the one "driver" column.

mod cases;
mod client;

use crate::conformance::cases::Case;
use crate::conformance::matches;
use crate::conformance::report;
use crate::conformance::runner::{AdapterRun, CaseResult, Check, Driver, Outcome};
use crate::conformance::server::{ConnRecord, LogEntry, Observations};
use crate::Failure;
use clap::Args as ClapArgs;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Test a CQL server's framing: negotiation, the switch, packing, splitting, chopped delivery
/// and faults, each judged against spec/framing_v6.adoc.
#[derive(ClapArgs)]
pub struct Args {
    /// The server, HOST:PORT.
    #[arg(required_unless_present = "list")]
    target: Option<String>,
    /// Cases to run: ids or prefixes ending in `*`, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    cases: Vec<String>,
    /// Where report.json, junit.xml and index.html go.
    #[arg(long, default_value = "build/probe")]
    report_dir: PathBuf,
    /// Seconds to wait for an answer.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// Seconds to watch the server after a fault for its ERROR and close.
    #[arg(long, default_value_t = 3.0)]
    fault_wait: f64,
    /// Known deviations of this server (TOML, `[[deviation]] case, rule, note`): their FAILs
    /// are reported but do not fail the run. Repeatable: the lists add up.
    #[arg(long)]
    deviations: Vec<PathBuf>,
    /// Name of the server in the reports (default: the release_version it reports, and the
    /// address).
    #[arg(long)]
    name: Option<String>,
    /// List the cases and exit.
    #[arg(long)]
    list: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Deviations {
    #[serde(default)]
    deviation: Vec<Deviation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Deviation {
    case: String,
    rule: String,
    /// The anchor of spec/framing_v6.adoc's errata that documents it, if any.
    #[serde(default)]
    errata: Option<String>,
    note: String,
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

pub fn run(args: Args) -> Result<(), Failure> {
    if args.list {
        for s in cases::catalogue() {
            println!("{:32} {:28} {}", s.id, s.rules.join(","), s.title);
        }
        return Ok(());
    }
    let target = args.target.clone().expect("clap requires a target");
    let mut deviations = Vec::new();
    for path in &args.deviations {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
        deviations.extend(
            toml::from_str::<Deviations>(&text)
                .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?
                .deviation,
        );
    }
    let started = Instant::now();
    let (cases, mut results, release) = probe(
        &target,
        &args.cases,
        Duration::from_secs_f64(args.timeout),
        Duration::from_secs_f64(args.fault_wait),
        |i, n, r| {
            eprintln!(
                "[{i:2}/{n}] {:32} {:13} {:5.1}s  {}",
                r.case,
                r.outcome.name(),
                r.adapter.seconds,
                r.progress_note()
            )
        },
    );
    let name = args.name.clone().unwrap_or_else(|| match &release {
        Some(r) => format!("{target} ({r})"),
        None => target.clone(),
    });
    let mut unexpected = Vec::new();
    for r in &mut results {
        r.driver = name.clone();
        let known = deviations.iter().find(|d| d.case == r.case);
        match (r.outcome, known) {
            (Outcome::Fail, Some(d)) => {
                r.checks.push(Check {
                    rule: d.rule.clone(),
                    level: "MUST".into(),
                    status: "info".into(),
                    message: format!(
                        "known deviation of this server{}: {}",
                        d.errata
                            .as_ref()
                            .map(|e| format!(" (spec errata: {e})"))
                            .unwrap_or_default(),
                        d.note
                    ),
                });
                r.summary = format!("known deviation ({}): {}", d.rule, r.summary);
            }
            (Outcome::Fail, None) => unexpected.push(r.case.clone()),
            (_, Some(d)) => eprintln!(
                "probe: {} is listed as a known deviation ({}) but did not fail",
                d.case, d.rule
            ),
            _ => {}
        }
    }
    let drivers = [Driver {
        name: name.clone(),
        run: PathBuf::new(),
        self_check: Some(127),
        self_check_ok: true,
    }];
    let run = report::Run {
        cases: &cases,
        drivers: &drivers,
        results: &results,
        seconds: started.elapsed().as_secs_f64(),
    };
    report::publish(&run, &args.report_dir)?;
    if !unexpected.is_empty() {
        eprintln!(
            "probe: FAIL outside the known deviations: {}",
            unexpected.join(", ")
        );
        return Err(Failure::Rule);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
