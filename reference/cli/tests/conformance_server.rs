//! `cqlframe conformance server` prints what it saw when it is stopped by SIGTERM, as its help
//! says: a run stopped from a shell or by CI still reports.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};

/// `conformance server` of one case, its stdout, and the line that announces its port.
fn serve_one_case() -> (Child, BufReader<ChildStdout>, String) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cqlframe"))
        .current_dir(&root)
        .args(["conformance", "server", "--case", "handshake.uncompressed"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("first line");
    (child, out, first)
}

/// Sends SIGTERM and returns the observations printed after it; the exit must be a success.
fn stop_with_sigterm(mut child: Child, mut out: BufReader<ChildStdout>) -> serde_json::Value {
    // SAFETY: sending a signal to our own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("rest of stdout");
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    let json = &rest[rest.find('{').expect("observations")..];
    serde_json::from_str(json).expect("observations are JSON")
}

#[test]
fn sigterm_prints_the_observations() {
    let (child, out, first) = serve_one_case();
    let port: u16 = first
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("listening line: {first:?}"));
    // An unframed v5 OPTIONS, answered by SUPPORTED.
    let mut client = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    client
        .write_all(&[5, 0, 0, 1, 5, 0, 0, 0, 0])
        .expect("OPTIONS");
    let mut answer = [0u8; 9];
    client.read_exact(&mut answer).expect("SUPPORTED");
    assert_eq!(answer[4], 6, "SUPPORTED opcode");
    let obs = stop_with_sigterm(child, out);
    let conn = &obs["connections"][0];
    assert_eq!(conn["client_port"], client.local_addr().unwrap().port());
    assert!(conn["log"].to_string().contains("OPTIONS"), "{conn}");
}

/// A signal sent the moment the port is announced still ends the run with its report: the
/// handlers are installed before the announcement, never after.
#[test]
fn sigterm_right_after_the_announcement_still_reports() {
    let (child, out, first) = serve_one_case();
    assert!(first.starts_with("listening on "), "{first:?}");
    let obs = stop_with_sigterm(child, out);
    assert_eq!(
        obs["connections"].as_array().map(Vec::len),
        Some(0),
        "{obs}"
    );
}
