//! The harness: for each driver and case, start the server with the case's script, run the
//! driver's adapter against it, and judge the outcome from what the server saw and what the
//! application saw.

use super::adapter::{adapter_args, run_adapter, AdapterRun, Driver, CONTRACT_RULE};
use super::cases::{Case, Expect, OptIn};
use super::server::{Observations, Server};
use crate::cql::database::expected_digest;
use crate::pcap::session::{session_pcap, Recorded};
use crate::verdict::{Check, Level, Outcome, Status, EXIT_UNSUPPORTED};
use cqlframe::checksum::PayloadChecksum;
use cqlframe::Format;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// One case run for one driver, judged.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub driver: String,
    pub case: String,
    pub outcome: Outcome,
    pub summary: String,
    pub checks: Vec<Check>,
    pub adapter: AdapterRun,
    pub server: Observations,
    /// The session's capture, relative to the report folder (`pcap/<driver>/<case>.pcap`).
    pub pcap: Option<String>,
    /// The command that runs just this case for this driver again.
    pub rerun: Option<String>,
}

impl CaseResult {
    /// What a progress line shows after the outcome: nothing for a PASS, else the summary's start.
    pub fn progress_note(&self) -> String {
        if self.outcome == Outcome::Pass {
            String::new()
        } else {
            self.summary.chars().take(160).collect()
        }
    }

    /// The command that re-runs this case for this driver, for an outcome worth looking into
    /// (any but PASS, INFORMATIONAL and UNSUPPORTED).
    pub fn rerun_shown(&self) -> Option<&str> {
        match self.outcome {
            Outcome::Pass | Outcome::Informational | Outcome::Unsupported => None,
            _ => self.rerun.as_deref(),
        }
    }

    /// The result of a case whose adapter was not run, because its self-check showed the
    /// adapter broken.
    pub fn not_run(driver: &Driver, case: &Case, self_check: &AdapterRun, why: &str) -> CaseResult {
        let checks = vec![Check::new(
            CONTRACT_RULE,
            Level::Must,
            Status::AdapterBroken,
            format!("not run: the adapter's self-check failed: {why}"),
        )];
        CaseResult {
            driver: driver.name.clone(),
            case: case.id.clone(),
            outcome: Outcome::AdapterBroken,
            summary: summary(Outcome::AdapterBroken, &checks, ""),
            checks,
            adapter: self_check.clone(),
            server: Observations::default(),
            pcap: None,
            rerun: None,
        }
    }
}

/// The two time limits of a case, kept apart: the harness's limit on the whole adapter run
/// (`--run-timeout`), and the connect and request timeouts the adapter sets in its driver
/// (`--request-timeout`, passed to the adapter as `--timeout`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub run: Duration,
    pub request_seconds: f64,
}

impl Limits {
    /// The request timeout when none is given: a quarter of the run limit, 2 to 10 s, so that
    /// a driver's own timeout fires (and is reported as such) well before the run is killed.
    pub fn default_request_seconds(run: Duration) -> f64 {
        (run.as_secs_f64() / 4.0).clamp(2.0, 10.0)
    }
}

/// Runs one case for one driver: the case's server, the adapter against it, the judgement.
pub fn run_case(driver: &Driver, case: &Case, limits: Limits) -> Result<CaseResult, String> {
    let server = Server::start(case.server.clone(), 0)
        .map_err(|e| format!("the conformance server did not start: {e}"))?;
    let args = adapter_args(case, server.port, limits.request_seconds);
    let adapter = run_adapter(driver, &args, limits.run);
    let observations = server.stop(Duration::from_millis(100));
    Ok(judge(driver, case, adapter, observations))
}

/// A result's one-line summary: for a PASS what was negotiated, otherwise the check that
/// decided the outcome (the most severe one).
fn summary(outcome: Outcome, checks: &[Check], negotiated: &str) -> String {
    match outcome {
        Outcome::Pass => format!("as expected ({negotiated})"),
        _ => outcome
            .deciding(checks)
            .map(|c| format!("{}: {}", c.rule, c.message))
            .unwrap_or_default(),
    }
}

fn check(rule: &str, level: Level, status: Status, message: impl Into<String>) -> Check {
    Check::new(rule, level, status, message)
}

/// Judges a run: the rules engine's findings in the driver's bytes, then the case's expectation
/// of what the application saw, then the connection-level SHOULDs and the opt-ins.
pub fn judge(driver: &Driver, case: &Case, adapter: AdapterRun, obs: Observations) -> CaseResult {
    let mut unsupported = declared_unsupported(&adapter).or_else(|| never_framed(case, &obs));
    // What the driver sent, as the judge found it: one check per rule per connection.
    let mut checks: Vec<Check> = obs
        .connections
        .iter()
        .flat_map(|c| {
            let whose = format!("connection {}", c.id);
            c.findings.rules().iter().map(move |r| r.as_check(&whose))
        })
        .collect();
    if let Some(why) = &obs.fault_not_applicable {
        unsupported.get_or_insert_with(|| format!("fault not applicable: {why}"));
    }
    let main_rule = case.rules[0].as_str();
    let connected = !obs.connections.is_empty();
    if let Some(why) = adapter.broken(connected) {
        checks.push(check(
            CONTRACT_RULE,
            Level::Must,
            Status::AdapterBroken,
            why,
        ));
    } else if adapter.timed_out {
        let rule = match case.expect {
            Expect::Reject => "ERR-2",
            _ => main_rule,
        };
        checks.push(check(
            rule,
            case.level,
            Status::Fail,
            format!(
                "the adapter did not finish within its {:.0} s limit (--run-timeout); its process group was killed (driver hung)",
                adapter.limit_seconds
            ),
        ));
    } else if unsupported.is_none() {
        let app = Application::of(&adapter.report);
        match case.expect {
            Expect::Rows | Expect::Ok => workload_checks(case, &app, &obs, &mut checks),
            Expect::Any => {}
            Expect::Reject => fault_checks(case, &app, &obs, &mut checks),
        }
    }
    checks.extend(unexercised(&obs));
    provocation_checks(case, &obs, unsupported.is_some(), &mut checks);
    // UNSUPPORTED says why; not opting in is moot then.
    let informational = opt_in(case, &obs, &mut checks).filter(|_| unsupported.is_none());
    if let Some(i) = &informational {
        checks.push(check(main_rule, case.level, Status::Info, i.clone()));
    }
    if let Some(u) = &unsupported {
        checks.push(check(main_rule, case.level, Status::Unsupported, u.clone()));
    }
    let outcome = Outcome::rate(&checks, unsupported.is_some(), informational.is_some());
    let negotiated = obs
        .connections
        .iter()
        .find_map(|c| c.negotiated)
        .map_or_else(|| "unframed".to_string(), |n| n.to_string());
    let summary = summary(outcome, &checks, &negotiated);
    CaseResult {
        driver: driver.name.clone(),
        case: case.id.clone(),
        outcome,
        summary,
        checks,
        adapter,
        server: obs,
        pcap: None,
        rerun: None,
    }
}

/// The adapter said, in a report that keeps the contract, that it cannot run the case, and why.
fn declared_unsupported(adapter: &AdapterRun) -> Option<String> {
    if adapter.exit != Some(EXIT_UNSUPPORTED) {
        return None;
    }
    adapter
        .report
        .get("unsupported")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The name of the check that a read boundary a case needed was not confirmed (NOT-EXERCISED):
/// the run, not the driver, fell short.
pub const READ_BOUNDARIES_RULE: &str = "read-boundaries";

/// A read boundary the case needed and the driver's reads could not be made to follow: the
/// case did not run as written (see [`super::delivery`]).
fn unexercised(obs: &Observations) -> Option<Check> {
    let (c, boundary) = obs
        .connections
        .iter()
        .find_map(|c| c.reads.unconfirmed.map(|b| (c, b)))?;
    let why = match boundary {
        super::delivery::Boundary::Unconfirmed {
            written,
            received,
            unread,
        } => format!(
            "the driver did not read up to byte {written} within {} s (its socket had received {received} bytes, {unread} of them unread), so later reads could merge writes",
            super::delivery::BOUND.as_secs()
        ),
        _ => "the driver's reads cannot be observed on this machine (no socket diagnostics)".into(),
    };
    Some(Check::new(
        READ_BOUNDARIES_RULE,
        Level::Must,
        Status::NotExercised,
        format!(
            "connection {}: {why}; {} earlier boundaries were confirmed. Run the case again on a less loaded machine",
            c.id, c.reads.confirmed
        ),
    ))
}

/// A case about framing cannot judge a driver that never tried protocol v5 or later.
fn never_framed(case: &Case, obs: &Observations) -> Option<String> {
    let framing_version = |v: Option<u8>| v.is_some_and(|v| (5..=6).contains(&v));
    let tried_v5 = obs.connections.iter().any(|c| {
        c.negotiated.is_some()
            || framing_version(c.startup_version)
            || framing_version(c.refused_version)
    });
    if !case.needs_framing() || tried_v5 {
        return None;
    }
    let versions: std::collections::BTreeSet<String> = obs
        .connections
        .iter()
        .filter_map(|c| c.startup_version)
        .map(|v| format!("v{v}"))
        .collect();
    let refused: Vec<String> = obs
        .connections
        .iter()
        .filter_map(|c| c.refused_version)
        .map(|v| format!("{v:#04x}"))
        .collect();
    Some(format!(
        "the case needs framing, but no connection switched to it: the driver never sent a v5 or v6 STARTUP (STARTUP versions: {}{})",
        if versions.is_empty() {
            "none".to_string()
        } else {
            versions.into_iter().collect::<Vec<_>>().join(", ")
        },
        if refused.is_empty() {
            String::new()
        } else {
            format!("; refused probes: {}", refused.join(", "))
        }
    ))
}

/// What the application saw, from the adapter's report: one result per request, or an error
/// that stopped the workload.
struct Application {
    results: Vec<Value>,
    error: Option<String>,
}

impl Application {
    fn of(report: &Value) -> Application {
        Application {
            results: report
                .get("results")
                .and_then(|r| r.as_array())
                .cloned()
                .unwrap_or_default(),
            error: report
                .get("error")
                .and_then(|e| e.as_str())
                .map(str::to_string),
        }
    }

    /// The workload's error, or `default` when the adapter gave none.
    fn error_or(&self, default: &str) -> String {
        self.error.clone().unwrap_or_else(|| default.into())
    }
}

fn error_text(error: &Value) -> String {
    error
        .as_str()
        .map_or_else(|| error.to_string(), str::to_string)
}

/// A case that expects the workload to succeed: every request answered, rows equal to the
/// server's, a large insert received whole.
fn workload_checks(case: &Case, app: &Application, obs: &Observations, checks: &mut Vec<Check>) {
    let rule = case.rules[0].as_str();
    let fail = |message: String| check(rule, case.level, Status::Fail, message);
    if app.results.is_empty() {
        checks.push(fail(format!(
            "the workload did not run: {}",
            app.error_or("no results")
        )));
    }
    let truth = expected_digest(case.server.rows, case.server.row_size);
    for (i, r) in app.results.iter().enumerate() {
        if let Some(e) = r.get("error") {
            checks.push(fail(format!("request {i} failed: {}", error_text(e))));
        } else if case.expect == Expect::Rows {
            let digest = r.get("digest").and_then(|d| d.as_str()).unwrap_or("");
            if digest != truth {
                checks.push(fail(format!(
                    "request {i}: the application got {} rows that differ from the server's (digest {digest})",
                    r.get("rows").unwrap_or(&Value::Null)
                )));
            }
        }
    }
    if case.client.action == "insert-large" {
        match obs.inserts.as_slice() {
            [] => checks.push(fail("the server received no blob".into())),
            inserts if inserts.iter().all(|(n, ok)| *ok && *n == case.client.blob_size) => {}
            inserts => checks.push(fail(format!(
                "the server received blobs {inserts:?} (size, equal to the pattern), expected {} bytes",
                case.client.blob_size
            ))),
        }
    }
}

/// A case that injects a fault: the driver must detect it (an error, not a timeout), must not
/// hand the faulty rows to the application, and must stop using the connection.
fn fault_checks(case: &Case, app: &Application, obs: &Observations, checks: &mut Vec<Check>) {
    let rule = case
        .server
        .fault
        .as_ref()
        .map_or(case.rules[0].as_str(), |f| f.kind.rule());
    let judged = |status: Status, message: String| check(rule, case.level, status, message);
    let Some(fault) = &obs.fault else {
        checks.push(judged(
            Status::Fail,
            format!(
                "the fault was never injected: no query on ks.t reached the server ({})",
                app.error_or("no error reported")
            ),
        ));
        return;
    };
    let truth = expected_digest(case.server.rows, case.server.row_size);
    for (i, r) in app.results.iter().enumerate() {
        if let Some(e) = r.get("error") {
            let e = error_text(e);
            let lower = e.to_ascii_lowercase();
            checks.push(if lower.contains("timeout") || lower.contains("timed out") {
                judged(
                    Status::Fail,
                    format!(
                        "request {i} failed only when its client timeout expired ({e}): the driver did not detect the fault ({})",
                        fault.note
                    ),
                )
            } else {
                judged(Status::Pass, format!("request {i} failed as it should: {e}"))
            });
        } else if let Some(digest) = r.get("digest").and_then(|d| d.as_str()) {
            checks.push(if digest != truth {
                check(
                    "ERR-2",
                    Level::Must,
                    Status::Fail,
                    format!("request {i}: the application got corrupted rows (digest {digest})"),
                )
            } else if obs.target_served <= 1 {
                judged(
                    Status::Fail,
                    format!(
                        "request {i}: the application got the rows of the faulty response ({}): the driver accepted it",
                        fault.note
                    ),
                )
            } else {
                judged(
                    Status::Pass,
                    format!(
                        "request {i}: rows from a clean retry ({} responses served)",
                        obs.target_served
                    ),
                )
            });
        }
    }
    if app.results.is_empty() {
        checks.push(judged(
            Status::Pass,
            format!("the workload failed: {}", app.error_or("")),
        ));
    }
    if let Some(c) = obs.connections.get(fault.conn) {
        if c.requests_after_fault > 0 {
            checks.push(check(
                "ERR-2",
                Level::Must,
                Status::Fail,
                format!(
                    "connection {}: {} more requests after the fault; the driver kept using a connection that failed a check",
                    c.id, c.requests_after_fault
                ),
            ));
        }
    }
}

/// LIFE-10, LIFE-13: after the server's provocation (an ERROR response to STARTUP, a response to
/// no request) the client closes the connection; and a case scripted with one must have made it.
fn provocation_checks(case: &Case, obs: &Observations, unsupported: bool, checks: &mut Vec<Check>) {
    for c in &obs.connections {
        let Some(p) = c.provocation else {
            continue;
        };
        let (id, conn) = (c.id, p.connection());
        let framed = if c.negotiated.is_some() {
            "framed, "
        } else {
            ""
        };
        let (status, message) = if c.requests_after_provocation > 0 {
            (
                Status::Fail,
                format!(
                    "connection {id}: the driver sent {} more requests, {framed}on the connection {conn} instead of closing it",
                    c.requests_after_provocation
                ),
            )
        } else if c
            .closed_by
            .as_deref()
            .is_some_and(|b| b.starts_with("server"))
        {
            (
                Status::Fail,
                format!("connection {id}: the driver kept the connection {conn} open until the end of the case"),
            )
        } else {
            (
                Status::Pass,
                format!("connection {id}: the driver closed the connection {conn}, sending nothing more"),
            )
        };
        checks.push(check(p.rule(), p.level(), status, message));
    }
    if let Some(p) = case.server.provocation() {
        if !unsupported && !obs.connections.iter().any(|c| c.provocation == Some(p)) {
            checks.push(check(
                &case.rules[0],
                case.level,
                Status::Fail,
                format!(
                    "no STARTUP reached the server: the case's {} was never sent",
                    p.what()
                ),
            ));
        }
    }
}

/// A case about something a driver may opt in to (CRC32C, LZ4, heartbeats): why it is only
/// INFORMATIONAL when the driver did not; a heartbeat that was sent is a LIFE-5 check.
fn opt_in(case: &Case, obs: &Observations, checks: &mut Vec<Check>) -> Option<String> {
    let framed = || obs.connections.iter().filter_map(|c| c.negotiated);
    match case.informational_unless? {
        OptIn::Options => {
            let framed_options: u32 = obs.connections.iter().map(|c| c.framed_options).sum();
            if framed_options == 0 {
                return Some(
                    "the driver sent no OPTIONS after the switch (no heartbeat while idle)".into(),
                );
            }
            checks.push(check(
                "LIFE-5",
                Level::Must,
                Status::Pass,
                format!("the driver sent {framed_options} OPTIONS after the switch, framed; the server answered each with a framed SUPPORTED"),
            ));
            None
        }
        OptIn::Crc32c => (!framed().any(|n| n.settings.checksum == PayloadChecksum::Crc32c))
            .then(|| "did not opt in to CRC32C (FRAME_CHECKSUM): its frames use CRC32".into()),
        OptIn::Lz4 => (!framed().any(|n| n.settings.format == Format::Lz4))
            .then(|| "did not opt in to LZ4 frames".into()),
    }
}

/// Writes the session's capture to `<report_dir>/pcap/<driver>/<case>.pcap`, records its
/// relative path in the result and frees the recorded bytes.
pub fn write_pcap(result: &mut CaseResult, report_dir: &Path) -> Result<(), String> {
    let rel = format!("pcap/{}/{}.pcap", result.driver, result.case);
    let path = report_dir.join(&rel);
    let connections: Vec<Recorded> = result
        .server
        .connections
        .iter()
        .map(|c| Recorded {
            client_port: c.client_port,
            turns: &c.turns,
        })
        .collect();
    let file = session_pcap(&connections).map_err(|e| e.to_string())?;
    for c in &mut result.server.connections {
        c.turns = Vec::new();
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&path, file).map_err(|e| format!("{}: {e}", path.display()))?;
    result.pcap = Some(rel);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::adapter::SelfCheck;
    use crate::conformance::delivery::Boundary;
    use crate::conformance::server::{ConnRecord, ReadBoundaries};

    fn chop_case() -> Case {
        crate::conformance::load(None)
            .unwrap()
            .cases
            .into_iter()
            .find(|c| c.id == "recv.chop-1")
            .unwrap()
    }

    fn adapter_run(report: Value, exit: i32) -> AdapterRun {
        AdapterRun {
            command: vec![],
            exit: Some(exit),
            timed_out: false,
            seconds: 1.0,
            limit_seconds: 40.0,
            report,
            broken: None,
            stderr_tail: String::new(),
        }
    }

    /// A boundary the driver's reads did not follow makes the case NOT-EXERCISED, whatever the
    /// application saw: right rows or a failure under other reads are no verdict on this case.
    #[test]
    fn an_unconfirmed_read_boundary_is_no_verdict() {
        let case = chop_case();
        let driver = Driver {
            name: "d".into(),
            run: "run".into(),
            external: true,
            self_check: SelfCheck::Passed,
        };
        let rows = expected_digest(case.server.rows, case.server.row_size);
        let good = serde_json::json!({"driver": "d", "results": [{"rows": case.server.rows, "digest": rows}]});
        let failed = serde_json::json!({"driver": "d", "results": [{"error": "CRC24 mismatch"}]});
        let obs = |unconfirmed: Option<Boundary>| Observations {
            connections: vec![ConnRecord {
                startup_version: Some(5),
                reads: ReadBoundaries {
                    confirmed: 12,
                    unconfirmed,
                },
                ..ConnRecord::default()
            }],
            ..Observations::default()
        };
        let late = Boundary::Unconfirmed {
            written: 13,
            received: 14,
            unread: 2,
        };
        for (report, exit) in [(good.clone(), 0), (failed.clone(), 1)] {
            let r = judge(&driver, &case, adapter_run(report, exit), obs(Some(late)));
            assert_eq!(r.outcome, Outcome::NotExercised, "{}", r.summary);
            assert!(
                r.summary.contains("did not read up to byte 13"),
                "{}",
                r.summary
            );
            assert!(r.summary.contains("12 earlier boundaries"), "{}", r.summary);
        }
        let r = judge(&driver, &case, adapter_run(failed, 1), obs(None));
        assert_eq!(r.outcome, Outcome::Fail, "{}", r.summary);
    }
}
