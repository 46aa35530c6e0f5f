//! An adapter that breaks its contract is never a driver verdict: each way of breaking it
//! gives ADAPTER-BROKEN, names what broke (the exit status, the schema path, the last lines of
//! standard error), and fails the run.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a self-check asks; the adapters below answer it as the contract says, so that only
/// the case itself shows the breakage (unless the adapter breaks before anything).
const ANSWER_SELF_CHECK: &str = r#"case "$*" in *conformance.unknown-case*) echo '{"unsupported": "unknown case"}'; exit 127;; esac"#;

struct Run {
    status: i32,
    outcome: String,
    summary: String,
    stderr: String,
}

fn run(name: &str, body: &str, extra: &[&str]) -> Run {
    let dir = std::env::temp_dir().join(format!("cqlframe-broken-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let run = dir.join("run");
    std::fs::write(&run, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let reports = dir.join("reports");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_cqlframe"))
        .current_dir(&root)
        .args(["conformance", "--adapter"])
        .arg(format!("{name}={}", dir.display()))
        .args(["--cases", "handshake.switch-after-ready", "--report-dir"])
        .arg(&reports)
        .args(["--run-timeout", "3", "--setup-timeout", "10"])
        .args(extra)
        .output()
        .expect("cqlframe runs");
    let report = read_json(&reports.join("report.json"));
    let result = &report["results"][0];
    let r = Run {
        status: out.status.code().expect("exit status"),
        outcome: result["outcome"].as_str().unwrap_or_default().to_string(),
        summary: result["summary"].as_str().unwrap_or_default().to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    std::fs::remove_dir_all(&dir).unwrap();
    r
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("report.json is JSON")
}

fn assert_broken(name: &str, body: &str, says: &[&str]) {
    let r = run(name, body, &[]);
    assert_eq!(
        r.outcome, "ADAPTER-BROKEN",
        "{name}: {}\n{}",
        r.summary, r.stderr
    );
    assert_eq!(r.status, 1, "{name}: the run must fail\n{}", r.stderr);
    for s in says {
        assert!(r.summary.contains(s), "{name}: {:?} lacks {s:?}", r.summary);
    }
    assert!(
        !r.summary.contains("Some("),
        "{name}: Debug output in {:?}",
        r.summary
    );
    assert!(
        r.stderr
            .contains("ADAPTER-BROKEN: an adapter breaks the contract"),
        "{name}: {}",
        r.stderr
    );
}

#[test]
fn an_adapter_that_cannot_start_its_driver() {
    // A failed install or an ImportError: even the self-check breaks.
    assert_broken(
        "crash",
        "echo 'ImportError: no module named cassandra' >&2; exit 1",
        &[
            "self-check",
            "exit status 1",
            "ImportError: no module named cassandra",
        ],
    );
}

#[test]
fn an_adapter_that_prints_nothing() {
    assert_broken(
        "silent",
        &format!("{ANSWER_SELF_CHECK}\necho 'driver log' >&2; exit 0"),
        &["printed no JSON report", "exit status 0", "driver log"],
    );
}

#[test]
fn an_adapter_that_prints_invalid_json() {
    assert_broken(
        "invalid",
        &format!("{ANSWER_SELF_CHECK}\necho '{{\"driver\": \"x\", \"results\": ['; exit 0"),
        &["not valid JSON", "exit status 0"],
    );
}

#[test]
fn an_adapter_whose_report_breaks_the_schema() {
    let digest = "AB".repeat(32);
    assert_broken(
        "schema",
        &format!(
            "{ANSWER_SELF_CHECK}\necho '{{\"driver\": \"x\", \"results\": [{{\"rows\": 1, \"digest\": \"{digest}\"}}]}}'; exit 0"
        ),
        &["/results/0/digest", "adapter-report.schema.json"],
    );
}

#[test]
fn an_adapter_that_hangs_before_connecting() {
    assert_broken(
        "hang",
        &format!("{ANSWER_SELF_CHECK}\nsleep 30"),
        &["hung before the driver connected", "3 s limit"],
    );
}

#[test]
fn exit_127_without_a_reason_is_not_unsupported() {
    // What a shell does when the driver's command is missing.
    assert_broken(
        "notfound",
        &format!("{ANSWER_SELF_CHECK}\necho 'run: 3: no-such-driver: not found' >&2; exit 127"),
        &[
            "exited 127 with no JSON report",
            "command is not found",
            "no-such-driver: not found",
        ],
    );
}

#[test]
fn an_adapter_that_says_unsupported_is_unsupported() {
    // The control: the same harness, an adapter keeping the contract.
    let r = run(
        "unsupported",
        "echo '{\"unsupported\": \"this driver has no v5\"}'; exit 127",
        &[],
    );
    assert_eq!(r.outcome, "UNSUPPORTED", "{}\n{}", r.summary, r.stderr);
    assert!(r.summary.contains("this driver has no v5"), "{}", r.summary);
    assert_eq!(r.status, 0, "{}", r.stderr);
}
