//! The `cqlframe` binary on hostile inputs and a closed output pipe: a clean
//! failure (no panic, no exit 101, a message naming the byte offset) and bounded memory, the
//! peak resident set of the child process measured by GNU time.

#![cfg(unix)]

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cqlframe() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cqlframe"));
    c.current_dir(root());
    c
}

/// Held while a child is spawned: a child forked by another test before its exec holds copies
/// of this process's pipe ends, and would keep a pipe this test closed open for a moment.
static SPAWN: Mutex<()> = Mutex::new(());

/// Exit status, peak resident set in bytes, stdout and stderr of `cqlframe` with the arguments
/// `args` adds, fed by `feed`. The peak is GNU time's (`/usr/bin/time`, package `time`): the
/// child's own, where `wait4` here would count this test process's peak in.
fn run(
    args: impl FnOnce(&mut Command),
    feed: impl FnOnce(&mut dyn Write) -> std::io::Result<()> + Send + 'static,
) -> (ExitStatus, u64, String, String) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, Ordering::SeqCst);
    let rss = std::env::temp_dir().join(format!("cqlframe-{}-rss-{n}", std::process::id()));
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%M", "-o"])
        .arg(&rss)
        .arg(env!("CARGO_BIN_EXE_cqlframe"))
        .current_dir(root());
    args(&mut cmd);
    let guard = SPAWN.lock().unwrap();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("/usr/bin/time (Debian package time) runs cqlframe");
    drop(guard);
    let mut input = child.stdin.take().expect("stdin");
    let feeder = std::thread::spawn(move || {
        let _ = feed(&mut input);
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut out = Vec::new();
    stdout.read_to_end(&mut out).expect("stdout");
    let status = child.wait().expect("wait");
    let _ = feeder.join();
    let err = errors.join().expect("stderr");
    let report = std::fs::read_to_string(&rss).expect("time's report");
    let _ = std::fs::remove_file(&rss);
    let kib: u64 = report
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("time's report: {report:?}"));
    (
        status,
        kib * 1024,
        String::from_utf8_lossy(&out).into(),
        err,
    )
}

const MIB: u64 = 1 << 20;

#[test]
fn every_listing_ends_quietly_on_a_closed_pipe() {
    for args in [
        &[
            "decode",
            "--json",
            "vectors/cases/uncompressed.crc32.length-131071.bin",
        ][..],
        &[
            "decode",
            "vectors/cases/uncompressed.crc32.length-131071.bin",
        ],
        &["conformance", "list"],
        &["probe", "--list"],
        &["check", "vectors/pcap/session.v5-lz4.pcap"],
        &["crc", "--algorithm", "crc32", "--hex", "00"],
    ] {
        // The reader is gone before the child exists, so its first write meets a closed pipe
        // (closing it after the spawn raced with a child that writes its few bytes at once).
        let guard = SPAWN.lock().unwrap();
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let child = cqlframe()
            .args(args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        drop(guard);
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {:?} {stderr}",
            out.status
        );
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// A classic pcap header (microseconds, little-endian) of `linktype`.
fn pcap_header(linktype: u32) -> Vec<u8> {
    let mut f = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    f.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&linktype.to_le_bytes());
    f
}

fn check_file(name: &str, bytes: &[u8]) -> (ExitStatus, u64, String, String) {
    let path = std::env::temp_dir().join(format!("cqlframe-{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).expect("write capture");
    let result = run(
        |c| {
            c.arg("check").arg(&path);
        },
        |_| Ok(()),
    );
    let _ = std::fs::remove_file(path);
    result
}

#[test]
fn check_reports_a_record_cut_by_the_end_of_the_file_without_allocating_its_claim() {
    // 140 bytes claiming a 200 MB record: a reader that trusted the claim would allocate it.
    let mut f = pcap_header(1);
    for v in [0u32, 0, 200_000_000, 200_000_000] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&[0; 100]);
    let (status, peak, _, err) = check_file("claim.pcap", &f);
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(err.contains("at byte 24"), "{err}");
    assert!(peak < 32 * MIB, "peak {peak}");
    // `head -c 200` of a vector capture.
    let whole = std::fs::read(root().join("vectors/pcap/session.v5-lz4.pcap")).expect("vector");
    let (status, _, out, err) = check_file("head.pcap", &whole[..200]);
    assert_eq!(status.code(), Some(3), "{out}{err}");
    assert!(err.contains("cut short at byte 200"), "{err}");
    assert!(
        out.contains("1 CQL connections"),
        "what came before is reported: {out}"
    );
}

#[test]
fn check_warns_of_packets_on_link_types_it_does_not_decode() {
    let whole = std::fs::read(root().join("vectors/pcap/session.v5-lz4.pcap")).expect("vector");
    let mut f = pcap_header(147);
    f.extend_from_slice(&whole[24..]);
    let (status, _, out, err) = check_file("linktype.pcap", &f);
    assert!(err.contains("link types {147}"), "{err}");
    assert!(err.contains("nothing checked"), "{err}");
    assert_eq!(status.code(), Some(3), "{out}{err}");
}

#[test]
fn check_memory_stays_flat_on_a_large_capture() {
    let path = std::env::temp_dir().join(format!("cqlframe-{}-large.pcap", std::process::id()));
    let generate = |c: &mut Command| {
        c.args(["check", "--generate"])
            .arg(&path)
            .args(["--megabytes", "96", "--from"])
            .arg("vectors/pcap/session.v5-lz4.pcap,vectors/pcap/session.v5-crc32c.pcap");
    };
    let (status, _, _, err) = run(generate, |_| Ok(()));
    assert!(status.success(), "{err}");
    let check = |c: &mut Command| {
        c.args(["check", "--quiet", "--no-progress"]).arg(&path);
    };
    let (status, peak, out, err) = run(check, |_| Ok(()));
    let _ = std::fs::remove_file(&path);
    assert!(status.success(), "{out}{err}");
    assert!(peak < 32 * MIB, "96 MiB capture, peak {peak}");
}

/// Vector captures whose connections break rules (MUST and SHOULD), small enough that a
/// capture generated from them holds tens of thousands of connections.
const CAPTURES_WITH_FINDINGS: &str = "vectors/pcap/session.unframed-after-switch.pcap,\
    vectors/pcap/session.lz4-compression-flag.pcap,\
    vectors/pcap/session.crc32c-asked-of-old-server.pcap,\
    vectors/pcap/session.pipelined-after-orphaned-startup.pcap,\
    vectors/pcap/session.server-takes-unlisted-checksum.pcap,\
    vectors/pcap/session.wrong-version-envelope.pcap";

/// A capture of about `megabytes` MiB repeating [`CAPTURES_WITH_FINDINGS`] as new connections.
fn generate_with_findings(name: &str, megabytes: u32) -> PathBuf {
    let path = std::env::temp_dir().join(format!("cqlframe-{}-{name}", std::process::id()));
    let generate = |c: &mut Command| {
        c.args(["check", "--generate"])
            .arg(&path)
            .args(["--megabytes", &megabytes.to_string(), "--from"])
            .arg(CAPTURES_WITH_FINDINGS);
    };
    let (status, _, _, err) = run(generate, |_| Ok(()));
    assert!(status.success(), "{err}");
    path
}

#[test]
fn check_json_lines_streams_a_large_capture_in_bounded_memory() {
    // 96 MiB of connections of about a kilobyte each, every one with findings: --json would
    // hold all their summaries until the end; --json-lines writes each as it closes.
    let path = generate_with_findings("lines.pcap", 96);
    let check = |c: &mut Command| {
        c.args(["check", "--json-lines", "--no-progress"])
            .arg(&path);
    };
    let (status, peak, out, err) = run(check, |_| Ok(()));
    let _ = std::fs::remove_file(&path);
    assert_eq!(status.code(), Some(1), "MUST violations: {err}");
    let connections = out
        .lines()
        .filter(|l| l.contains(r#""type":"connection""#))
        .count();
    assert!(connections > 50_000, "{connections} connections");
    let totals: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("a totals line")).expect("JSON");
    assert_eq!(totals["type"], "totals");
    assert_eq!(totals["totals"]["connections"], connections);
    assert!(peak < 32 * MIB, "96 MiB capture, peak {peak}");
}

#[test]
fn check_json_lines_carries_the_findings_and_summaries_of_json() {
    let path = generate_with_findings("both.pcap", 2);
    let output = |flag: &str| {
        let out = cqlframe()
            .args(["check", flag, "--no-progress"])
            .arg(&path)
            .output()
            .expect("cqlframe check");
        assert_eq!(out.status.code(), Some(1), "{flag}: {out:?}");
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let (document, lines) = (output("--json"), output("--json-lines"));
    let _ = std::fs::remove_file(&path);
    let document: serde_json::Value = serde_json::from_str(&document).expect("JSON");
    // Rebuild the --json document from the lines: each connection's findings are the finding
    // lines that precede its connection line.
    let mut connections = Vec::new();
    let mut findings = Vec::new();
    let mut run = None;
    for line in lines.lines() {
        let mut line: serde_json::Value = serde_json::from_str(line).expect("one JSON per line");
        let object = line.as_object_mut().expect("an object");
        assert_eq!(object.remove("format"), Some(1.into()), "{object:?}");
        let kind = object.remove("type").expect("a type");
        assert!(run.is_none(), "the totals line comes last");
        match kind.as_str().expect("a string") {
            "finding" => findings.push(line),
            "connection" => {
                let id = &line["id"];
                assert!(
                    findings.iter().all(|f| f["connection"] == *id),
                    "a finding of another connection precedes connection {id}"
                );
                line["rules"] = std::mem::take(&mut findings).into();
                connections.push(line);
            }
            "totals" => run = Some(line),
            other => panic!("line of type {other}"),
        }
    }
    assert!(findings.is_empty(), "findings after the last connection");
    let mut rebuilt = run.expect("a totals line");
    connections.sort_by_key(|c| c["id"].as_u64());
    rebuilt["connections"] = connections.into();
    // The two documents have versions of their own; the run's time is the only field that
    // differs from one run to the next.
    rebuilt["format"] = document["format"].clone();
    rebuilt["totals"]["seconds"] = 0.into();
    let mut expected = document;
    expected["totals"]["seconds"] = 0.into();
    let count = expected["connections"].as_array().map_or(0, Vec::len);
    assert!(count > 1_000, "{count} connections");
    assert!(expected["totals"]["violations"].as_u64() > Some(0));
    assert!(expected["totals"]["findings"].as_u64() > Some(0));
    assert!(rebuilt == expected, "--json-lines and --json differ");
}

#[test]
fn decode_reads_no_further_than_the_first_error() {
    // 256 MiB that break RECV-1 at byte 0: only the first chunk is read.
    let decode = |c: &mut Command| {
        c.args(["decode", "-"]);
    };
    let (status, peak, out, _) = run(decode, |w| {
        let mut chunk = vec![0u8; 1 << 20];
        for i in 0..256u32 {
            for (j, b) in chunk.iter_mut().enumerate() {
                *b = ((j as u32 ^ i).wrapping_mul(2_654_435_761) >> 13) as u8;
            }
            w.write_all(&chunk)?;
        }
        Ok(())
    });
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("RECV-1") && out.contains("at byte 0"), "{out}");
    assert!(peak < 32 * MIB, "peak {peak}");
}

#[test]
fn decode_streams_a_long_valid_input_in_bounded_memory() {
    // 512 copies of a 131071-byte self-contained frame: a 64 MiB valid stream.
    let frame = std::fs::read(root().join("vectors/cases/uncompressed.crc32.length-131071.bin"))
        .expect("vector");
    let decode = |c: &mut Command| {
        c.args(["decode", "-"]);
    };
    let (status, peak, out, err) = run(decode, move |w| {
        for _ in 0..512 {
            w.write_all(&frame)?;
        }
        Ok(())
    });
    assert!(status.success(), "{err}");
    assert_eq!(out.lines().filter(|l| l.starts_with("frame ")).count(), 512);
    assert!(peak < 32 * MIB, "peak {peak}");
}

#[test]
fn check_follow_on_standard_input_streams_in_bounded_memory_with_the_findings_of_a_file() {
    // A live capture never ends: --follow on `-` must forget each connection as it closes.
    let path = generate_with_findings("follow.pcap", 96);
    let file = path.clone();
    let follow = |c: &mut Command| {
        c.args(["check", "-", "--follow", "--json-lines"]);
    };
    let (status, peak, out, err) = run(follow, move |input| {
        let mut f = std::fs::File::open(file)?;
        std::io::copy(&mut f, input)?;
        Ok(())
    });
    let whole = cqlframe()
        .args(["check", "--json-lines", "--no-progress"])
        .arg(&path)
        .output()
        .expect("cqlframe check");
    let _ = std::fs::remove_file(&path);
    assert_eq!(status.code(), Some(1), "MUST violations: {err}");
    assert!(peak < 32 * MIB, "96 MiB capture on stdin, peak {peak}");
    // Without its `found` lines, and but for the capture's name and the time taken, the
    // followed run writes what the run on the file writes.
    let comparable = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON"))
            .filter(|l| l["type"] != "found")
            .map(|mut l| {
                if l["type"] == "totals" {
                    l["capture"] = "".into();
                    l["totals"]["seconds"] = 0.into();
                }
                l
            })
            .collect()
    };
    let found = out
        .lines()
        .filter(|l| l.contains(r#""type":"found""#))
        .count();
    let findings = out
        .lines()
        .filter(|l| l.contains(r#""type":"finding""#))
        .count();
    assert!(findings > 10_000, "{findings} findings");
    assert_eq!(
        found, findings,
        "one found line per rule broken per direction"
    );
    let whole = String::from_utf8(whole.stdout).expect("UTF-8");
    assert!(
        comparable(&out) == comparable(&whole),
        "--follow on - differs"
    );
}

#[test]
fn proxy_memory_stays_flat_whatever_its_clients_send() {
    // A node that takes whatever it is sent.
    let node = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = node.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in node.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut &s, &mut std::io::sink());
            });
        }
    });
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = free.local_addr().unwrap();
    drop(free);
    let proxy = |c: &mut Command| {
        c.args(["proxy", "--quiet", "--duration", "12", "--listen"])
            .arg(listen.to_string())
            .args(["--upstream", &upstream.to_string(), "--report-dir"])
            .arg(std::env::temp_dir().join(format!("cqlframe-{}-proxy", std::process::id())));
    };
    // 400 connections, 8 at a time, each claiming a 1 GB envelope and sending 2 MB of it.
    let (status, peak, _, err) = run(proxy, move |_| {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let mut claim = vec![0x05, 0, 0, 0, 0x07, 0x3b, 0x9a, 0xca, 0x00];
        claim.resize(2 << 20, 0x41);
        let workers: Vec<_> = (0..8)
            .map(|_| {
                let claim = claim.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        if let Ok(mut s) = std::net::TcpStream::connect(listen) {
                            let _ = s.write_all(&claim);
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        Ok(())
    });
    assert_eq!(status.code(), Some(1), "the garbage breaks rules: {err}");
    // Each one served or, past the 64 open at once, refused: none lost.
    let count = |what: &str| -> u64 {
        let at = err.find(what).unwrap_or_else(|| panic!("{what}: {err}"));
        let head = err[..at].trim_end();
        head[head
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |i| i + 1)..]
            .parse()
            .expect("a count")
    };
    assert_eq!(count(" connections,") + count(" refused"), 400, "{err}");
    assert!(
        peak < 64 * MIB,
        "up to 800 MB through the proxy, peak {peak}"
    );
}
