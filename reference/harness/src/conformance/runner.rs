//! The harness: for each driver and case, start the server with the case's script, run the
//! driver's adapter against it, and judge the outcome from what the server saw and what the
//! application saw.

use super::cases::{Case, Expect, Level, OptIn};
use super::server::{Observations, Server};
use crate::cql::expected_digest;
use serde::Serialize;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The five outcomes of a case for one driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, PartialOrd, Ord)]
pub enum Outcome {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "INFORMATIONAL")]
    Informational,
    #[serde(rename = "UNSUPPORTED")]
    Unsupported,
    #[serde(rename = "NON-STRICT")]
    NonStrict,
    #[serde(rename = "FAIL")]
    Fail,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Informational => "INFORMATIONAL",
            Outcome::Unsupported => "UNSUPPORTED",
            Outcome::NonStrict => "NON-STRICT",
            Outcome::Fail => "FAIL",
        }
    }
}

/// One judged statement about the run.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub rule: String,
    pub level: String,
    /// `pass`, `fail`, `info` or `unsupported`.
    pub status: String,
    pub message: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct AdapterRun {
    pub command: Vec<String>,
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub seconds: f64,
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
}

/// A driver adapter: `conformance/drivers/<name>/run`.
#[derive(Clone, Debug, Serialize)]
pub struct Driver {
    pub name: String,
    pub run: PathBuf,
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

/// Runs an adapter with `args`; kills it after `timeout`.
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
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
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

/// Runs one case for one driver.
pub fn run_case(driver: &Driver, case: &Case, timeout: Duration) -> CaseResult {
    let server = match Server::start(case.server.clone(), 0) {
        Ok(s) => s,
        Err(e) => {
            let adapter = AdapterRun {
                command: vec![],
                exit: None,
                timed_out: false,
                seconds: 0.0,
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
            };
        }
    };
    let request_timeout = (timeout.as_secs_f64() / 4.0).clamp(2.0, 10.0);
    let args = adapter_args(case, server.port, request_timeout);
    let adapter = run_adapter(driver, &args, timeout);
    let observations = server.stop(Duration::from_millis(100));
    judge(driver, case, adapter, observations)
}

fn check(rule: &str, level: &str, status: &str, message: impl Into<String>) -> Check {
    Check {
        rule: rule.into(),
        level: level.into(),
        status: status.into(),
        message: message.into(),
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Must => "MUST",
        Level::Should => "SHOULD",
    }
}

/// Judges a run: the server's checks of the driver's bytes, then the case's expectation of
/// what the application saw.
pub fn judge(driver: &Driver, case: &Case, adapter: AdapterRun, obs: Observations) -> CaseResult {
    let mut checks = Vec::new();
    let main_rule = case.rules[0].clone();
    let level = level_name(case.level);
    let report = &adapter.report;
    let mut unsupported = None;

    if adapter.exit == Some(127) {
        let why = report
            .get("unsupported")
            .and_then(|v| v.as_str())
            .unwrap_or("adapter reported the case unsupported");
        unsupported = Some(why.to_string());
    }

    // A case about framing cannot judge a driver that never tried protocol v5 or later.
    if case.needs_framing() && unsupported.is_none() {
        let tried_v5 = obs.connections.iter().any(|c| {
            c.negotiated.is_some()
                || c.startup_version.is_some_and(|v| (5..=6).contains(&v))
                || c.refused_version.is_some_and(|v| (5..=6).contains(&v))
        });
        if !tried_v5 {
            let versions: Vec<String> = obs
                .connections
                .iter()
                .filter_map(|c| c.startup_version)
                .map(|v| format!("v{v}"))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let refused: Vec<String> = obs
                .connections
                .iter()
                .filter_map(|c| c.refused_version)
                .map(|v| format!("{v:#04x}"))
                .collect();
            unsupported = Some(format!(
                "the case needs framing, but no connection switched to it: the driver never sent a v5 or v6 STARTUP (STARTUP versions: {}{})",
                if versions.is_empty() { "none".to_string() } else { versions.join(", ") },
                if refused.is_empty() {
                    String::new()
                } else {
                    format!("; refused probes: {}", refused.join(", "))
                }
            ));
        }
    }
    // What the driver sent: every byte went through the server's Connection.
    for (conn, receiver_rule, sender_rule, text) in &obs.client_errors {
        checks.push(check(
            sender_rule,
            "MUST",
            "fail",
            format!("connection {conn}: the server's receiver rejected the driver's bytes under {receiver_rule}: {text}"),
        ));
    }
    for f in &obs.findings {
        let status = "fail";
        checks.push(check(
            &f.rule,
            &f.level,
            status,
            format!("connection {}: {}", f.conn, f.message),
        ));
    }
    // NEG-4: FRAME_CHECKSUM only when listed.
    for c in &obs.connections {
        let asked = c
            .startup_options
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("FRAME_CHECKSUM"))
            .map(|(_, v)| v.to_ascii_lowercase());
        if let Some(v) = asked {
            let listed = match case.server.checksums.as_str() {
                "absent" => false,
                "crc32" => v == "crc32",
                _ => v == "crc32" || v == "crc32c",
            };
            if !listed {
                checks.push(check(
                    "NEG-4",
                    "MUST",
                    "fail",
                    format!("connection {}: STARTUP asks FRAME_CHECKSUM={v}, which SUPPORTED did not list", c.id),
                ));
            }
        }
    }
    let framed: Vec<&String> = obs
        .connections
        .iter()
        .filter_map(|c| c.negotiated.as_ref())
        .collect();
    let any_crc32c = framed.iter().any(|n| n.ends_with("crc32c"));
    let any_lz4 = framed.iter().any(|n| n.contains("lz4"));
    if let Some(why) = &obs.fault_not_applicable {
        unsupported.get_or_insert_with(|| format!("fault not applicable: {why}"));
    }

    let results: Vec<Value> = report
        .get("results")
        .and_then(|r| r.as_array())
        .cloned()
        .unwrap_or_default();
    let top_error = report
        .get("error")
        .and_then(|e| e.as_str())
        .map(str::to_string);
    let truth = expected_digest(case.server.rows, case.server.row_size);
    let fault_rule = case
        .server
        .fault
        .as_ref()
        .map_or(main_rule.as_str(), |f| f.kind.rule())
        .to_string();

    if adapter.timed_out {
        checks.push(check(
            if case.expect == Expect::Reject {
                "ERR-2"
            } else {
                &main_rule
            },
            level,
            "fail",
            format!(
                "the adapter did not finish within {:.0} s (driver hung)",
                adapter.seconds
            ),
        ));
    } else if unsupported.is_none() && report.is_null() {
        checks.push(check(
            &main_rule,
            level,
            "fail",
            format!(
                "the adapter printed no JSON report (exit {:?})",
                adapter.exit
            ),
        ));
    } else if unsupported.is_none() {
        match case.expect {
            Expect::Rows | Expect::Ok => {
                if results.is_empty() {
                    checks.push(check(
                        &main_rule,
                        level,
                        "fail",
                        format!(
                            "the workload did not run: {}",
                            top_error.clone().unwrap_or_else(|| "no results".into())
                        ),
                    ));
                }
                for (i, r) in results.iter().enumerate() {
                    if let Some(e) = r.get("error") {
                        checks.push(check(
                            &main_rule,
                            level,
                            "fail",
                            format!(
                                "request {i} failed: {}",
                                e.as_str().unwrap_or(&e.to_string())
                            ),
                        ));
                    } else if case.expect == Expect::Rows {
                        let digest = r.get("digest").and_then(|d| d.as_str()).unwrap_or("");
                        if digest != truth {
                            checks.push(check(
                                &main_rule,
                                level,
                                "fail",
                                format!("request {i}: the application got {} rows that differ from the server's (digest {digest})", r.get("rows").unwrap_or(&Value::Null)),
                            ));
                        }
                    }
                }
                if case.client.action == "insert-large" {
                    match obs.inserts.as_slice() {
                        [] => checks.push(check(&main_rule, level, "fail", "the server received no blob")),
                        inserts if inserts.iter().all(|(n, ok)| *ok && *n == case.client.blob_size) => {}
                        inserts => checks.push(check(
                            &main_rule,
                            level,
                            "fail",
                            format!("the server received blobs {inserts:?} (size, equal to the pattern), expected {} bytes", case.client.blob_size),
                        )),
                    }
                }
            }
            Expect::Any => {}
            Expect::Reject => match &obs.fault {
                None => checks.push(check(
                    &fault_rule,
                    level,
                    "fail",
                    format!(
                        "the fault was never injected: no query on ks.t reached the server ({})",
                        top_error
                            .clone()
                            .unwrap_or_else(|| "no error reported".into())
                    ),
                )),
                Some(fault) => {
                    for (i, r) in results.iter().enumerate() {
                        let timed_out = r.get("error").and_then(|e| e.as_str()).is_some_and(|e| {
                            let e = e.to_ascii_lowercase();
                            e.contains("timeout") || e.contains("timed out")
                        });
                        if timed_out {
                            checks.push(check(
                                &fault_rule,
                                level,
                                "fail",
                                format!(
                                    "request {i} failed only when its client timeout expired ({}): the driver did not detect the fault ({})",
                                    r["error"].as_str().unwrap_or_default(),
                                    fault.note
                                ),
                            ));
                        } else if let Some(e) = r.get("error") {
                            checks.push(check(
                                &fault_rule,
                                level,
                                "pass",
                                format!(
                                    "request {i} failed as it should: {}",
                                    e.as_str().unwrap_or(&e.to_string())
                                ),
                            ));
                        } else if let Some(digest) = r.get("digest").and_then(|d| d.as_str()) {
                            if digest != truth {
                                checks.push(check("ERR-2", "MUST", "fail", format!("request {i}: the application got corrupted rows (digest {digest})")));
                            } else if obs.target_served <= 1 {
                                checks.push(check(
                                        &fault_rule,
                                        level,
                                        "fail",
                                        format!("request {i}: the application got the rows of the faulty response ({}): the driver accepted it", fault.note),
                                    ));
                            } else {
                                checks.push(check(&fault_rule, level, "pass", format!("request {i}: rows from a clean retry ({} responses served)", obs.target_served)));
                            }
                        }
                    }
                    if results.is_empty() {
                        checks.push(check(
                            &fault_rule,
                            level,
                            "pass",
                            format!(
                                "the workload failed: {}",
                                top_error.clone().unwrap_or_default()
                            ),
                        ));
                    }
                    if let Some(c) = obs.connections.get(fault.conn) {
                        if c.requests_after_fault > 0 {
                            checks.push(check(
                                    "ERR-2",
                                    "MUST",
                                    "fail",
                                    format!("connection {}: {} more requests after the fault; the driver kept using a connection that failed a check", c.id, c.requests_after_fault),
                                ));
                        }
                    }
                }
            },
        }
    }
    // LIFE-10: after an ERROR response to STARTUP the client should close the connection.
    for c in obs.connections.iter().filter(|c| c.startup_error) {
        let after = if c.negotiated.is_some() {
            "framed (LIFE-8), "
        } else {
            ""
        };
        if c.requests_after_startup_error > 0 {
            checks.push(check(
                "LIFE-10",
                "SHOULD",
                "fail",
                format!(
                    "connection {}: the driver sent {} more requests, {after}on the connection whose STARTUP got ERROR instead of closing it",
                    c.id, c.requests_after_startup_error
                ),
            ));
        } else if c
            .closed_by
            .as_deref()
            .is_some_and(|b| b.starts_with("server"))
        {
            checks.push(check(
                "LIFE-10",
                "SHOULD",
                "fail",
                format!(
                    "connection {}: the driver kept the connection whose STARTUP got ERROR open until the end of the case",
                    c.id
                ),
            ));
        } else {
            checks.push(check(
                "LIFE-10",
                "SHOULD",
                "pass",
                format!(
                    "connection {}: the driver closed the connection after the ERROR response to STARTUP, sending nothing more",
                    c.id
                ),
            ));
        }
    }
    if case.server.startup_error
        && unsupported.is_none()
        && !obs.connections.iter().any(|c| c.startup_error)
    {
        checks.push(check(
            &main_rule,
            level,
            "fail",
            "no STARTUP reached the server: the case's ERROR response was never sent",
        ));
    }
    let framed_options: u32 = obs.connections.iter().map(|c| c.framed_options).sum();
    if case.informational_unless == Some(OptIn::Options) && framed_options > 0 {
        checks.push(check(
            "LIFE-5",
            "MUST",
            "pass",
            format!("the driver sent {framed_options} OPTIONS after the switch, framed; the server answered each with a framed SUPPORTED"),
        ));
    }
    let mut informational = None;
    match case.informational_unless {
        Some(OptIn::Options) if framed_options == 0 => {
            informational = Some(
                "the driver sent no OPTIONS after the switch (no heartbeat while idle)".to_string(),
            );
        }
        Some(OptIn::Crc32c) if !any_crc32c => {
            informational =
                Some("did not opt in to CRC32C (FRAME_CHECKSUM): its frames use CRC32".to_string());
        }
        Some(OptIn::Lz4) if !any_lz4 => {
            informational = Some("did not opt in to LZ4 frames".to_string());
        }
        _ => {}
    }
    if unsupported.is_some() {
        // UNSUPPORTED says why; not opting in is moot then.
        informational = None;
    }
    if let Some(i) = &informational {
        checks.push(check(&main_rule, level, "info", i.clone()));
    }
    if let Some(u) = &unsupported {
        checks.push(check(&main_rule, level, "unsupported", u.clone()));
    }
    let must_fail = checks
        .iter()
        .any(|c| c.status == "fail" && c.level.starts_with("MUST"));
    let should_fail = checks
        .iter()
        .any(|c| c.status == "fail" && !c.level.starts_with("MUST"));
    let outcome = if must_fail {
        Outcome::Fail
    } else if unsupported.is_some() {
        Outcome::Unsupported
    } else if should_fail {
        Outcome::NonStrict
    } else if informational.is_some() {
        Outcome::Informational
    } else {
        Outcome::Pass
    };
    let summary = match outcome {
        Outcome::Pass => {
            let framed = framed.first().map(|s| s.as_str()).unwrap_or("unframed");
            format!("as expected ({framed})")
        }
        _ => checks
            .iter()
            .find(|c| c.status != "pass")
            .map(|c| format!("{}: {}", c.rule, c.message))
            .unwrap_or_default(),
    };
    CaseResult {
        driver: driver.name.clone(),
        case: case.id.clone(),
        outcome,
        summary,
        checks,
        adapter,
        server: obs,
        pcap: None,
    }
}

/// Writes the session's capture to `<report_dir>/pcap/<driver>/<case>.pcap`, records its
/// relative path in the result and frees the recorded bytes.
pub fn write_pcap(result: &mut CaseResult, report_dir: &Path) -> Result<(), String> {
    let rel = format!("pcap/{}/{}.pcap", result.driver, result.case);
    let path = report_dir.join(&rel);
    let file = crate::pcap::session::session_pcap(&result.server.connections)?;
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
