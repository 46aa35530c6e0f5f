//! The `cqlframe` binary on hostile inputs and a closed output pipe (issue 18): a clean
//! failure (no panic, no exit 101, a message naming the byte offset) and bounded memory, the
//! peak resident set of the child process measured by `wait4`.
//!
//! Linux counts the parent's resident set at the spawn into the child's peak, so the tests
//! never hold their inputs whole: they are written to the child a chunk at a time, and each
//! measured peak is an upper bound of the child's own.

#![cfg(unix)]

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cqlframe() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cqlframe"));
    c.current_dir(root());
    c
}

/// Exit status, peak resident set in bytes, stdout and stderr of `cmd` fed by `feed`.
fn run(
    mut cmd: Command,
    feed: impl FnOnce(&mut dyn Write) -> std::io::Result<()> + Send + 'static,
) -> (ExitStatus, u64, String, String) {
    // Waited for by `wait4`, which also gives the peak resident set.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cqlframe");
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
    let (status, peak) = wait4(child.id());
    let _ = feeder.join();
    let err = errors.join().expect("stderr");
    (status, peak, String::from_utf8_lossy(&out).into(), err)
}

/// Waits for the child and returns its status and peak resident set (bytes).
fn wait4(pid: u32) -> (ExitStatus, u64) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own child, not yet waited for; both pointers are valid.
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(r, pid as libc::pid_t, "wait4");
    (ExitStatus::from_raw(status), usage.ru_maxrss as u64 * 1024)
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
        let mut child = cqlframe()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // The reader goes away before the first byte is written.
        drop(child.stdout.take());
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
    let mut cmd = cqlframe();
    cmd.arg("check").arg(&path);
    let result = run(cmd, |_| Ok(()));
    let _ = std::fs::remove_file(path);
    result
}

#[test]
fn check_reports_a_record_cut_by_the_end_of_the_file_without_allocating_its_claim() {
    // Issue 18's reproducer: 140 bytes claiming a 200 MB record.
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
    let mut gen = cqlframe();
    gen.arg("check")
        .arg("--generate")
        .arg(&path)
        .args(["--megabytes", "96", "--from"])
        .arg("vectors/pcap/session.v5-lz4.pcap,vectors/pcap/session.v5-crc32c.pcap");
    let (status, _, _, err) = run(gen, |_| Ok(()));
    assert!(status.success(), "{err}");
    let mut cmd = cqlframe();
    cmd.args(["check", "--quiet", "--no-progress"]).arg(&path);
    let (status, peak, out, err) = run(cmd, |_| Ok(()));
    let _ = std::fs::remove_file(&path);
    assert!(status.success(), "{out}{err}");
    assert!(peak < 32 * MIB, "96 MiB capture, peak {peak}");
}

#[test]
fn decode_reads_no_further_than_the_first_error() {
    // 256 MiB that break RECV-1 at byte 0: only the first chunk is read.
    let mut cmd = cqlframe();
    cmd.args(["decode", "-"]);
    let (status, peak, out, _) = run(cmd, |w| {
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
    let mut cmd = cqlframe();
    cmd.args(["decode", "-"]);
    let (status, peak, out, err) = run(cmd, move |w| {
        for _ in 0..512 {
            w.write_all(&frame)?;
        }
        Ok(())
    });
    assert!(status.success(), "{err}");
    assert_eq!(out.lines().filter(|l| l.starts_with("frame ")).count(), 512);
    assert!(peak < 32 * MIB, "peak {peak}");
}
