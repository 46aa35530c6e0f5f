//! The adapter: the executable between the kit and a driver (conformance/README.md, "Writing
//! an adapter"). Where adapters are found, how one is run (its own process group, a time
//! limit), and what its output says: a report that keeps the contract, or how it broke it.

use super::cases::Case;
use super::contract;
use crate::verdict::EXIT_UNSUPPORTED;
use serde::Serialize;
use serde_json::Value;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A driver adapter: `conformance/drivers/<name>/run`, or one given by `--adapter NAME=PATH`.
#[derive(Clone, Debug, Serialize)]
pub struct Driver {
    pub name: String,
    pub run: PathBuf,
    /// Given by `--adapter` (it lives outside the kit's `drivers/`).
    pub external: bool,
    /// The self-check the adapter passed or failed before its cases.
    pub self_check: SelfCheck,
}

/// The result of [`self_check`].
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum SelfCheck {
    NotRun,
    Passed,
    Failed { why: String },
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
                self_check: SelfCheck::NotRun,
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
        self_check: SelfCheck::NotRun,
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

/// One run of an adapter: how it ended, and its report.
#[derive(Clone, Debug, Serialize)]
pub struct AdapterRun {
    pub command: Vec<String>,
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub seconds: f64,
    /// The time limit the run had (the harness's per-run limit, or the self-check's).
    pub limit_seconds: f64,
    /// The report, when the adapter kept the contract; else null.
    pub report: Value,
    /// How the adapter's output broke the contract (no report, invalid JSON, a field that
    /// breaks the schema, an exit status the contract does not know).
    pub broken: Option<String>,
    pub stderr_tail: String,
}

impl AdapterRun {
    /// How the run ended, in words.
    pub fn ending(&self) -> String {
        if self.timed_out {
            format!(
                "killed at its {:.0} s limit with its process group",
                self.limit_seconds
            )
        } else {
            match self.exit {
                Some(code) => format!("exit status {code}"),
                None => "killed by a signal".into(),
            }
        }
    }

    /// The last `n` lines of its standard error, or a note that it wrote none.
    pub fn stderr_last(&self, n: usize) -> String {
        let lines: Vec<&str> = self.stderr_tail.lines().collect();
        match lines.len() {
            0 => "(nothing on standard error)".into(),
            len => lines[len.saturating_sub(n)..].join(" | "),
        }
    }

    /// Why this run is no verdict on the driver, if it is none: the adapter broke its
    /// contract, or hung before the driver connected (`connected`: the server saw a
    /// connection). A hang after connecting is the driver's.
    pub fn broken(&self, connected: bool) -> Option<String> {
        let why = if self.timed_out {
            (!connected).then(|| "it hung before the driver connected".to_string())?
        } else {
            self.broken.clone()?
        };
        Some(format!(
            "the adapter broke its contract: {why} ({}; standard error: {})",
            self.ending(),
            self.stderr_last(3)
        ))
    }
}

/// The rule name of a broken adapter contract (the adapter, not the driver, is at fault).
pub const CONTRACT_RULE: &str = "adapter-contract";

/// The self-check every adapter passes before its cases: asked for a case it cannot know, it
/// exits 127 with a valid `{"unsupported": ...}` report (it also builds or installs the driver
/// on first use, hence its own `limit`). Why not, in words.
pub fn self_check(driver: &Driver, limit: Duration) -> (AdapterRun, Result<(), String>) {
    let run = run_adapter(
        driver,
        &[
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            "9".into(),
            "--case".into(),
            "conformance.unknown-case".into(),
            "--action".into(),
            "unknown-action".into(),
        ],
        limit,
    );
    let verdict = if run.timed_out {
        Err(format!(
            "the self-check (an unknown case) did not finish within its {:.0} s limit (--setup-timeout); its process group was killed",
            run.limit_seconds
        ))
    } else if let Some(why) = &run.broken {
        Err(format!(
            "asked for an unknown case: {why} ({}; standard error: {})",
            run.ending(),
            run.stderr_last(3)
        ))
    } else if run.exit != Some(EXIT_UNSUPPORTED) {
        Err(format!(
            "asked for an unknown case it answered as a case it runs ({}); the contract wants exit status {EXIT_UNSUPPORTED} and {{\"unsupported\": \"why\"}}",
            run.ending()
        ))
    } else {
        Ok(())
    };
    (run, verdict)
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
                broken: Some(format!("it cannot be started: {e}")),
                stderr_tail: String::new(),
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
    let exit = status.and_then(|s| s.code());
    let (report, broken) = match read_report(&stdout, exit) {
        Ok(report) => (report, None),
        Err(why) => (Value::Null, Some(why)),
    };
    let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
    AdapterRun {
        command,
        exit,
        timed_out,
        seconds: start.elapsed().as_secs_f64(),
        limit_seconds: timeout.as_secs_f64(),
        report,
        broken,
        stderr_tail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
    }
}

/// The report in an adapter's standard output: its last line that starts with `{`, checked
/// against the contract (the schema, and exit status 127 exactly when it says unsupported).
fn read_report(stdout: &str, exit: Option<i32>) -> Result<Value, String> {
    let line = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with('{'))
        .ok_or(match exit {
            Some(EXIT_UNSUPPORTED) => "it exited 127 with no JSON report (a shell exits 127 when a command is not found; an unsupported case prints {\"unsupported\": \"why\"})",
            _ => "it printed no JSON report on standard output",
        })?;
    let report: Value = serde_json::from_str(line)
        .map_err(|e| format!("its report (the last line of standard output that starts with '{{') is not valid JSON: {e}"))?;
    contract::validate(&report)
        .map_err(|e| format!("its report breaks conformance/adapter-report.schema.json: {e}"))?;
    let unsupported = report.get("unsupported").is_some();
    match exit {
        Some(EXIT_UNSUPPORTED) if !unsupported => Err(format!(
            "it exited {EXIT_UNSUPPORTED} (unsupported) but its report gives no reason: an unsupported case prints {{\"unsupported\": \"why\"}}"
        )),
        Some(code) if unsupported && code != EXIT_UNSUPPORTED => Err(format!(
            "its report says the case is unsupported, but it exited {code}, not {EXIT_UNSUPPORTED}"
        )),
        Some(0 | 1 | EXIT_UNSUPPORTED) => Ok(report),
        Some(code) => Err(format!(
            "it exited {code}: the contract's exit statuses are 0 (success), 1 (the driver failed) and {EXIT_UNSUPPORTED} (unsupported)"
        )),
        None => Err("it was killed by a signal".into()),
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

    /// The report is the last line that starts with `{`, and its exit status must be the
    /// contract's: a driver's log lines before it are fine.
    #[test]
    fn the_report_and_the_exit_status_keep_the_contract() {
        let ok = r#"{"driver": "d", "results": [{"ok": true}]}"#;
        assert!(read_report(&format!("log {{ line\n{ok}\n"), Some(0)).is_ok());
        assert!(read_report(&format!("{ok}\n{{broken"), Some(0))
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(read_report("", Some(0))
            .unwrap_err()
            .contains("no JSON report"));
        assert!(read_report(ok, Some(127))
            .unwrap_err()
            .contains("gives no reason"));
        assert!(read_report(ok, Some(2)).unwrap_err().contains("exited 2"));
        assert!(read_report(ok, None).unwrap_err().contains("signal"));
        let unsupported = r#"{"unsupported": "no v6"}"#;
        assert!(read_report(unsupported, Some(127)).is_ok());
        assert!(read_report(unsupported, Some(0))
            .unwrap_err()
            .contains("exited 0, not 127"));
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
        let broken = run
            .broken(true)
            .expect("rows without digest breaks the schema");
        assert!(broken.contains("/results/0/digest"), "{broken}");
        assert!(broken.contains("exit status 0"), "{broken}");
        assert!(external("noequals").is_err());
        assert!(external("bad name=/x").is_err());
        assert!(external(&format!("x={}", dir.join("missing").display())).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
