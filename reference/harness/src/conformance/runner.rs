//! The harness: for each driver and case, start the server with the case's script, run the
//! driver's adapter against it, and judge the outcome from what the server saw and what the
//! application saw.

use super::cases::{Case, Expect, OptIn};
use super::contract;
use super::server::{Observations, Server};
use crate::cql::expected_digest;
use crate::verdict::{Check, Level, Outcome, Status, EXIT_UNSUPPORTED};
use cqlframe::checksum::PayloadChecksum;
use cqlframe::Format;
use serde::Serialize;
use serde_json::Value;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize)]
pub struct AdapterRun {
    pub command: Vec<String>,
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub seconds: f64,
    /// The time limit the run had (the harness's per-run limit, or the self-check's).
    pub limit_seconds: f64,
    pub report: Value,
    pub stderr_tail: String,
}

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
            self.summary.chars().take(110).collect()
        }
    }

    /// The command that re-runs this case for this driver, for an outcome worth looking into
    /// (FAIL or NON-STRICT).
    pub fn rerun_shown(&self) -> Option<&str> {
        match self.outcome {
            Outcome::Fail | Outcome::NonStrict => self.rerun.as_deref(),
            _ => None,
        }
    }
}

/// A driver adapter: `conformance/drivers/<name>/run`, or one given by `--adapter NAME=PATH`.
#[derive(Clone, Debug, Serialize)]
pub struct Driver {
    pub name: String,
    pub run: PathBuf,
    /// Given by `--adapter` (it lives outside the kit's `drivers/`).
    pub external: bool,
    /// Exit code of the unknown-case self-check (the contract wants 127).
    pub self_check: Option<i32>,
    pub self_check_ok: bool,
}

pub fn discover(dir: &Path, only: &[String]) -> Result<Vec<Driver>, String> {
    let mut drivers = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let run = entry.path().join("run");
        let name = entry.file_name().to_string_lossy().into_owned();
        if run.is_file() && (only.is_empty() || only.contains(&name)) {
            drivers.push(Driver {
                name,
                run,
                external: false,
                self_check: None,
                self_check_ok: false,
            });
        }
    }
    for want in only {
        if !drivers.iter().any(|d| &d.name == want) {
            return Err(format!("no adapter {}/{want}/run", dir.display()));
        }
    }
    // The reference first, then by name.
    drivers.sort_by_key(|d| (d.name != "reference", d.name.clone()));
    Ok(drivers)
}

/// An adapter outside the kit, from `NAME=PATH`: PATH is its `run` executable or a folder
/// holding one. A relative PATH is taken from the current directory.
pub fn external(spec: &str) -> Result<Driver, String> {
    let (name, path) = spec
        .split_once('=')
        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        .ok_or_else(|| format!("--adapter {spec:?}: expected NAME=PATH"))?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(format!(
            "--adapter {spec:?}: the name may hold letters, digits, '-', '_' and '.' (it names report folders)"
        ));
    }
    let path = PathBuf::from(path);
    let run = if path.is_dir() {
        path.join("run")
    } else {
        path
    };
    let run = std::path::absolute(&run).map_err(|e| format!("{}: {e}", run.display()))?;
    if !run.is_file() {
        return Err(format!("--adapter {name}: no executable {}", run.display()));
    }
    Ok(Driver {
        name: name.to_string(),
        run,
        external: true,
        self_check: None,
        self_check_ok: false,
    })
}

impl Driver {
    /// The command-line arguments that select this driver again.
    pub fn selector(&self) -> Vec<String> {
        if self.external {
            vec![
                "--adapter".into(),
                format!("{}={}", self.name, self.run.display()),
            ]
        } else {
            vec!["--drivers".into(), self.name.clone()]
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

/// Kills the adapter's process group (the adapter and every process it started, e.g. a JVM
/// or a driver built as a child rather than `exec`ed), so that nothing outlives the run and
/// holds its output open.
fn kill_group(child: &Child) {
    let Ok(pgid) = libc::pid_t::try_from(child.id()) else {
        return;
    };
    // SAFETY: kill(2) with a negative pid signals the process group the child leads (it was
    // started with process_group(0)); no memory is involved. ESRCH (already gone) is fine.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Runs an adapter with `args` in its own process group; kills the group after `timeout` (and
/// any process the adapter left behind when it exits).
pub fn run_adapter(driver: &Driver, args: &[String], timeout: Duration) -> AdapterRun {
    let start = Instant::now();
    let mut command = vec![driver.run.display().to_string()];
    command.extend(args.iter().cloned());
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let child = Command::new(&driver.run)
        .args(args)
        .env("CQLFRAME_BIN", exe)
        .env("CQLFRAME_CONTRACT", contract::CONTRACT.to_string())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return AdapterRun {
                command,
                exit: None,
                timed_out: false,
                seconds: 0.0,
                limit_seconds: timeout.as_secs_f64(),
                report: Value::Null,
                stderr_tail: format!("cannot start adapter: {e}"),
            }
        }
    };
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() > timeout => {
                timed_out = true;
                kill_group(&child);
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    kill_group(&child);
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    let report = stdout
        .lines()
        .rev()
        .find_map(|l| {
            serde_json::from_str::<Value>(l.trim())
                .ok()
                .filter(|v| v.is_object())
        })
        .unwrap_or(Value::Null);
    let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
    AdapterRun {
        command,
        exit: status.and_then(|s| s.code()),
        timed_out,
        seconds: start.elapsed().as_secs_f64(),
        limit_seconds: timeout.as_secs_f64(),
        report,
        stderr_tail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
    }
}

/// The adapter's command line for a case.
pub fn adapter_args(case: &Case, port: u16, request_timeout: f64) -> Vec<String> {
    let c = &case.client;
    let mut args = vec![
        "--host".to_string(),
        "127.0.0.1".into(),
        "--port".into(),
        port.to_string(),
        "--case".into(),
        case.id.clone(),
        "--action".into(),
        c.action.clone(),
        "--compression".into(),
        c.compression.clone(),
        "--checksum".into(),
        c.checksum.clone(),
        "--protocol".into(),
        c.protocol.clone(),
        "--timeout".into(),
        format!("{request_timeout}"),
    ];
    if c.auth {
        args.push("--auth".into());
    }
    if c.blob_size > 0 {
        args.extend(["--blob-size".into(), c.blob_size.to_string()]);
    }
    if c.requests > 0 {
        args.extend(["--requests".into(), c.requests.to_string()]);
    }
    args
}

/// Runs one case for one driver, then checks the adapter's report against the contract.
pub fn run_case(driver: &Driver, case: &Case, limits: Limits) -> CaseResult {
    let server = match Server::start(case.server.clone(), 0) {
        Ok(s) => s,
        Err(e) => {
            let adapter = AdapterRun {
                command: vec![],
                exit: None,
                timed_out: false,
                seconds: 0.0,
                limit_seconds: limits.run.as_secs_f64(),
                report: Value::Null,
                stderr_tail: format!("server did not start: {e}"),
            };
            return CaseResult {
                driver: driver.name.clone(),
                case: case.id.clone(),
                outcome: Outcome::Fail,
                summary: "server did not start".into(),
                checks: vec![],
                adapter,
                server: Observations::default(),
                pcap: None,
                rerun: None,
            };
        }
    };
    let args = adapter_args(case, server.port, limits.request_seconds);
    let adapter = run_adapter(driver, &args, limits.run);
    let observations = server.stop(Duration::from_millis(100));
    let breach = contract_breach(&adapter);
    let mut result = judge(driver, case, adapter, observations);
    if let Some(breach) = breach {
        result.checks.push(breach);
        let unsupported = result
            .checks
            .iter()
            .any(|c| c.status == Status::Unsupported);
        let informational = result.checks.iter().any(|c| c.status == Status::Info);
        result.outcome = Outcome::rate(&result.checks, unsupported, informational);
        result.summary = summary(result.outcome, &result.checks, "");
    }
    result
}

/// The rule name of a broken adapter contract (the adapter, not the driver, is at fault).
pub const CONTRACT_RULE: &str = "adapter-contract";

/// A check failing the case when the adapter printed a report that breaks
/// `conformance/adapter-report.schema.json` (a missing report is judged as such already).
pub fn contract_breach(adapter: &AdapterRun) -> Option<Check> {
    if adapter.timed_out || adapter.report.is_null() {
        return None;
    }
    contract::validate(&adapter.report).err().map(|e| {
        Check::new(
            CONTRACT_RULE,
            Level::Must,
            Status::Fail,
            format!("the adapter's report breaks conformance/adapter-report.schema.json: {e}"),
        )
    })
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
    if adapter.timed_out {
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
    } else if unsupported.is_none() && adapter.report.is_null() {
        checks.push(check(
            main_rule,
            case.level,
            Status::Fail,
            format!(
                "the adapter printed no JSON report (exit {:?})",
                adapter.exit
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

/// The adapter said it cannot run the case (exit 127), and why.
fn declared_unsupported(adapter: &AdapterRun) -> Option<String> {
    (adapter.exit == Some(EXIT_UNSUPPORTED)).then(|| {
        adapter
            .report
            .get("unsupported")
            .and_then(|v| v.as_str())
            .unwrap_or("adapter reported the case unsupported")
            .to_string()
    })
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
    let file = crate::pcap::session::session_pcap(&result.server.connections)
        .map_err(|e| e.to_string())?;
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
    use std::os::unix::fs::PermissionsExt;

    /// An adapter script in a fresh temporary folder.
    fn adapter(name: &str, body: &str) -> (PathBuf, Driver) {
        let dir =
            std::env::temp_dir().join(format!("cqlframe-runner-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let run = dir.join("run");
        std::fs::write(&run, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
        let driver = external(&format!("{name}={}", dir.display())).unwrap();
        (dir, driver)
    }

    /// A driver started as a child (not exec'ed) holds the output pipes open; the limit must
    /// stop it too, and the run must report the limit, not the elapsed time.
    #[test]
    fn the_limit_stops_the_whole_process_group() {
        let (dir, driver) = adapter("child", "sleep 30\necho '{}'");
        let started = Instant::now();
        let run = run_adapter(&driver, &[], Duration::from_millis(500));
        assert!(run.timed_out);
        assert_eq!(run.limit_seconds, 0.5);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_external_adapter_is_named_and_its_report_checked() {
        let (dir, driver) = adapter(
            "ext",
            "echo '{\"driver\": \"x\", \"results\": [{\"rows\": 1}]}'",
        );
        assert!(driver.external);
        assert_eq!(driver.selector()[0], "--adapter");
        let run = run_adapter(&driver, &[], Duration::from_secs(20));
        assert_eq!(run.exit, Some(0));
        let breach = contract_breach(&run).expect("rows without digest breaks the schema");
        assert!(
            breach.message.contains("/results/0/digest"),
            "{}",
            breach.message
        );
        assert!(external("noequals").is_err());
        assert!(external("bad name=/x").is_err());
        assert!(external(&format!("x={}", dir.join("missing").display())).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
