//! `cqlframe check - --follow`: a capture read from standard input as it is written, each rule
//! reported when the packet that breaks it arrives, not when the input ends, and the same
//! findings as the run on the file.

#![cfg(unix)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn captures() -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = std::fs::read_dir(root().join("vectors/pcap"))
        .expect("vectors/pcap")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    all.sort();
    all
}

/// The records of a classic pcap file: its 24-byte header, then each record's bytes.
fn records(capture: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut at = 24;
    let mut out = Vec::new();
    while at < capture.len() {
        let incl = u32::from_le_bytes(capture[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(capture[at..at + 16 + incl].to_vec());
        at += 16 + incl;
    }
    (capture[..24].to_vec(), out)
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// Each `found` line is the `finding` line of its rule as the connection's close lists it, but
/// for the count (one when found), and every finding was found first.
fn assert_found_first(followed: &[Value]) {
    let mut pending: Vec<Value> = Vec::new();
    for line in followed {
        match line["type"].as_str().expect("type") {
            "found" => {
                assert_eq!(line["count"], 1, "{line}");
                pending.push(line.clone());
            }
            "finding" => {
                let mut as_found = line.clone();
                as_found["type"] = "found".into();
                as_found["count"] = 1.into();
                let i = pending
                    .iter()
                    .position(|f| *f == as_found)
                    .unwrap_or_else(|| panic!("{line} not found before it was listed"));
                pending.remove(i);
            }
            _ => {}
        }
    }
    assert!(pending.is_empty(), "found but never listed: {pending:?}");
}

#[test]
fn follow_on_standard_input_reports_what_the_run_on_the_file_reports() {
    let mut broken = 0;
    for path in captures() {
        let file = Command::new(env!("CARGO_BIN_EXE_cqlframe"))
            .args(["check", "--json-lines"])
            .arg(&path)
            .output()
            .expect("cqlframe check");
        let followed = Command::new(env!("CARGO_BIN_EXE_cqlframe"))
            .args(["check", "-", "--follow", "--json-lines"])
            .stdin(std::fs::File::open(&path).expect("capture"))
            .output()
            .expect("cqlframe check -");
        let name = path.display();
        assert_eq!(file.status.code(), followed.status.code(), "{name}");
        let followed = lines(&String::from_utf8(followed.stdout).expect("UTF-8"));
        assert_found_first(&followed);
        let comparable = |all: Vec<Value>| -> Vec<Value> {
            all.into_iter()
                .filter(|l| l["type"] != "found")
                .map(|mut l| {
                    if l["type"] == "totals" {
                        assert!(l["totals"]["connections"].as_u64() >= Some(1), "{name}");
                        l["capture"] = "".into();
                        l["totals"]["seconds"] = 0.into();
                    }
                    l
                })
                .collect()
        };
        let file = lines(&String::from_utf8(file.stdout).expect("UTF-8"));
        broken += file.iter().filter(|l| l["type"] == "finding").count();
        assert_eq!(comparable(followed), comparable(file), "{name}");
    }
    assert!(broken > 10, "the vectors' captures break rules: {broken}");
}

#[test]
fn follow_reports_a_rule_before_the_input_ends() {
    let path = root().join("vectors/pcap/session.client-unframed-after-switch.pcap");
    let (header, packets) = records(&std::fs::read(&path).expect("capture"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_cqlframe"))
        .args(["check", "-", "--follow", "--json-lines"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("cqlframe check -");
    let mut input = child.stdin.take().expect("stdin");
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let _ = tx.send(line.expect("a line"));
        }
    });
    input.write_all(&header).unwrap();
    // Packet by packet, standard input left open: the rule is reported once the packet that
    // breaks it is in, without waiting for the end of the input.
    let mut sent = 0;
    let first = loop {
        if sent == packets.len() {
            break rx
                .recv_timeout(Duration::from_secs(20))
                .expect("a line, input still open");
        }
        input.write_all(&packets[sent]).unwrap();
        input.flush().unwrap();
        sent += 1;
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(300)) {
            break line;
        }
    };
    let first: Value = serde_json::from_str(&first).expect("JSON");
    assert_eq!(first["type"], "found", "{first}");
    let detected = first["detected_in_packet"].as_u64().expect("a packet") as usize;
    assert!(detected <= sent && detected < packets.len(), "{first}");
    for p in &packets[sent..] {
        input.write_all(p).unwrap();
    }
    drop(input);
    let rest: Vec<String> = rx.iter().collect();
    assert_eq!(child.wait().expect("exit").code(), Some(1));
    let kinds: Vec<Value> = rest
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON")["type"].clone())
        .collect();
    assert_eq!(kinds, ["finding", "connection", "totals"]);
}
