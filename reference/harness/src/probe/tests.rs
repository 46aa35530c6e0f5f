//! `cqlframe probe` against the reference's own conformance server: every case passes (or is
//! informational or unsupported where the server's script leaves nothing to test).

use super::probe;
use crate::conformance::cases::ServerScript;
use crate::conformance::server::Server;
use crate::verdict::Outcome;
use std::time::Duration;

/// The results of every case against a server running `script`, none of them FAIL or
/// NON-STRICT.
fn run(script: ServerScript) -> Vec<(String, Outcome, String)> {
    let server = Server::start(script, 0).expect("server");
    let target = format!("127.0.0.1:{}", server.port);
    let (_, results, _) = probe(
        &target,
        &[],
        Duration::from_secs(5),
        Duration::from_secs(2),
        |_, _, _| {},
    );
    server.stop(Duration::from_millis(10));
    let results: Vec<_> = results
        .into_iter()
        .map(|r| (r.case, r.outcome, r.summary))
        .collect();
    let failed: Vec<_> = results
        .iter()
        .filter(|(_, o, _)| matches!(o, Outcome::Fail | Outcome::NonStrict))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    results
}

#[test]
fn the_reference_server_passes_every_case() {
    let results = run(ServerScript::default());
    let passed = results
        .iter()
        .filter(|(_, o, _)| *o == Outcome::Pass)
        .count();
    assert!(passed >= 20, "{results:#?}");
}

#[test]
fn a_server_without_frame_checksums() {
    let script: ServerScript = toml::from_str("checksums = \"absent\"").expect("script");
    let results = run(script);
    let asked = results
        .iter()
        .find(|(id, _, _)| id == "probe.crc32c-asked-anyway")
        .expect("case");
    assert_eq!(asked.1, Outcome::Pass, "{asked:?}");
}

/// A server that refuses STARTUP and then receives as the spec says takes a sequence on the
/// framed connection short of READY; one that accepts STARTUP leaves the case nothing to test.
#[test]
fn a_sequence_before_ready_is_taken_by_the_reference_receiver() {
    for (script, want) in [
        ("startup_error = true", Outcome::Pass),
        ("", Outcome::Unsupported),
    ] {
        let script: ServerScript = toml::from_str(script).expect("script");
        let server = Server::start(script, 0).expect("server");
        let (_, results, _) = probe(
            &format!("127.0.0.1:{}", server.port),
            &["probe.sequence-before-ready".to_string()],
            Duration::from_secs(5),
            Duration::from_secs(2),
            |_, _, _| {},
        );
        server.stop(Duration::from_millis(10));
        let r = results
            .iter()
            .find(|r| r.case == "probe.sequence-before-ready")
            .expect("case");
        assert_eq!(r.outcome, want, "{}", r.summary);
    }
}

/// The catalogue (data) and the cases' code name the same cases: each case has its function in
/// its section's file, and each function is a case of that section.
#[test]
fn every_catalogue_case_has_its_code_and_back() {
    let catalogue = super::cases::catalogue();
    for case in &catalogue {
        assert!(
            super::cases::code(case).is_some(),
            "{} has no code",
            case.id
        );
    }
    let functions = super::cases::functions();
    for (section, name) in &functions {
        let id = format!("probe.{}", name.replace('_', "-"));
        assert!(
            catalogue
                .iter()
                .any(|c| c.id == id && c.section == *section),
            "{name} is not a case of section {section:?} in conformance/probe.toml"
        );
    }
    assert_eq!(catalogue.len(), functions.len());
}

/// A server that answers the handshake (v5, uncompressed, CRC32), then writes only the first
/// `cut` bytes of the framed answer to the next request and stalls.
fn stalling_server(cut: usize) -> (u16, std::thread::JoinHandle<()>) {
    use cqlframe::body;
    use cqlframe::encoder::{FrameEncoder, SplitPolicy};
    use cqlframe::envelope::{envelope_bytes, Opcode};
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut request = || {
            let mut h = [0u8; 9];
            s.read_exact(&mut h).expect("header");
            let len = u32::from_be_bytes(h[5..9].try_into().unwrap()) as usize;
            let mut body = vec![0u8; len];
            s.read_exact(&mut body).expect("body");
            (
                i16::from_be_bytes([h[2], h[3]]),
                s.try_clone().expect("clone"),
            )
        };
        let (stream, mut w) = request();
        let options = body::string_multimap::<&str, &str>(&[]);
        w.write_all(&envelope_bytes(
            0x85,
            0,
            stream,
            Opcode::Supported,
            &options,
        ))
        .expect("SUPPORTED");
        let (stream, mut w) = request();
        w.write_all(&envelope_bytes(0x85, 0, stream, Opcode::Ready, &[]))
            .expect("READY");
        let mut frame_header = [0u8; 6];
        w.read_exact(&mut frame_header).expect("framed request");
        let answer = envelope_bytes(0x85, 0, 1, Opcode::Result, &[0, 0, 0, 1]);
        let mut frames = Vec::new();
        FrameEncoder::new(Default::default(), SplitPolicy::SERVER)
            .write_envelopes([&answer[..]], &mut frames);
        w.write_all(&frames[..cut]).expect("partial frame");
        // Stalls until the probe gives up and closes.
        while matches!(w.read(&mut [0u8; 64]), Ok(n) if n > 0) {}
    });
    (port, handle)
}

#[test]
fn a_server_stalling_inside_a_frame_is_reported_with_the_partial_frame() {
    use super::client::{query_body, Probe, Wait};
    use cqlframe::envelope::Opcode;
    for cut in [3, 10] {
        let (port, server) = stalling_server(cut);
        let target = format!("127.0.0.1:{port}");
        let mut probe =
            Probe::connect(&target, 5, Duration::from_millis(400), &[]).expect("connect");
        probe
            .handshake(&[("CQL_VERSION", "3.0.0")])
            .expect("handshake");
        match probe.call(Opcode::Query, &query_body("SELECT 1")) {
            Err(Wait::Stalled(e)) => assert!(
                e.contains("stream ends inside") && e.contains("more bytes needed"),
                "cut {cut}: {e}"
            ),
            other => panic!("cut {cut}: {:?}", other.map(|(h, _)| h)),
        }
        drop(probe);
        server.join().expect("server");
    }
}

/// A server that answers every OPTIONS with SUPPORTED (LZ4; CRC32 and CRC32C) and every STARTUP
/// with READY, whatever it asks, on every connection, then reads until the probe closes.
fn agreeable_server() -> u16 {
    use cqlframe::body;
    use cqlframe::envelope::{envelope_bytes, EnvelopeHeader, Opcode, RESPONSE_BIT};
    use std::io::{Read, Write};
    fn serve(mut s: std::net::TcpStream) -> std::io::Result<()> {
        loop {
            let mut h = [0u8; 9];
            s.read_exact(&mut h)?;
            let h = EnvelopeHeader::parse(&h);
            s.read_exact(&mut vec![0u8; h.length.max(0) as usize])?;
            let version = h.protocol_version() | RESPONSE_BIT;
            let answer = match Opcode::from_u8(h.opcode) {
                Some(Opcode::Options) => {
                    let map = [
                        ("COMPRESSION", vec!["lz4"]),
                        ("FRAME_CHECKSUMS", vec!["crc32", "crc32c"]),
                    ];
                    envelope_bytes(
                        version,
                        0,
                        h.stream,
                        Opcode::Supported,
                        &body::string_multimap(&map),
                    )
                }
                _ => envelope_bytes(version, 0, h.stream, Opcode::Ready, &[]),
            };
            s.write_all(&answer)?;
            if h.opcode == Opcode::Startup as u8 {
                while s.read(&mut [0u8; 256])? > 0 {}
                return Ok(());
            }
        }
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            std::thread::spawn(move || serve(s));
        }
    });
    port
}

// NEG-2, NEG-6 and NEG-9 against a server that takes every STARTUP: the judge's finding is the case's
// one check of the rule (the probe's own NEG-4, asking for xxhash, does not hide it).
#[test]
fn a_server_taking_a_startup_it_must_refuse_fails_the_rule_once() {
    use crate::verdict::Status;
    let target = format!("127.0.0.1:{}", agreeable_server());
    let selected = [
        "probe.compression-snappy",
        "probe.frame-checksum-unknown",
        "probe.startup-repeated-key",
    ]
    .map(String::from);
    let wait = Duration::from_millis(300);
    let (_, results, _) = probe(&target, &selected, wait, wait, |_, _, _| {});
    for (case, rule) in [
        ("probe.compression-snappy", "NEG-2"),
        ("probe.frame-checksum-unknown", "NEG-6"),
        ("probe.startup-repeated-key", "NEG-9"),
    ] {
        let r = results.iter().find(|r| r.case == case).expect("case run");
        assert_eq!(r.outcome, Outcome::Fail, "{case}: {r:?}");
        let checks: Vec<_> = r.checks.iter().filter(|c| c.rule == rule).collect();
        assert_eq!(checks.len(), 1, "{case}: {checks:?}");
        assert_eq!(checks[0].status, Status::Fail);
        assert!(checks[0].message.contains("READY"), "{checks:?}");
    }
}

/// A server that answers every connection's first request, read in the layout its version byte
/// names, with `answer(version byte, stream)`, then closes.
fn refusing_server(answer: fn(u8, i16) -> Vec<u8>) -> u16 {
    use cqlframe::envelope::{header_len, EnvelopeHeader};
    use std::io::{Read, Write};
    fn serve(mut s: std::net::TcpStream, answer: fn(u8, i16) -> Vec<u8>) -> std::io::Result<()> {
        let mut h = vec![0u8; 1];
        s.read_exact(&mut h)?;
        h.resize(header_len(h[0]), 0);
        s.read_exact(&mut h[1..])?;
        let (h, _) = EnvelopeHeader::read(&h).expect("whole header");
        s.read_exact(&mut vec![0u8; h.length.max(0) as usize])?;
        s.write_all(&answer(h.version, h.stream))
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            std::thread::spawn(move || serve(s, answer));
        }
    });
    port
}

/// The checks of rule `rule` in the retired-version cases against the server on `port`.
fn retired_checks(port: u16, rule: &str) -> Vec<(String, Outcome, crate::verdict::Check)> {
    let selected = ["probe.retired-version-v1", "probe.retired-version-v2"].map(String::from);
    let wait = Duration::from_millis(300);
    let target = format!("127.0.0.1:{port}");
    let (_, results, _) = probe(&target, &selected, wait, wait, |_, _, _| {});
    let retired: Vec<_> = results
        .into_iter()
        .filter(|r| selected.contains(&r.case))
        .collect();
    assert_eq!(retired.len(), 2);
    retired
        .into_iter()
        .flat_map(|r| {
            let (case, outcome) = (r.case, r.outcome);
            r.checks
                .into_iter()
                .filter(|c| c.rule == rule)
                .map(move |c| (case.clone(), outcome, c))
        })
        .collect()
}

// LIFE-14: the reference server refuses v1 and v2 in their own version and 8-byte layout.
#[test]
fn the_reference_server_refuses_retired_versions_in_their_layout() {
    let server = Server::start(ServerScript::default(), 0).expect("server");
    let checks = retired_checks(server.port, "LIFE-14");
    server.stop(Duration::from_millis(10));
    for (version, case) in [
        (1, "probe.retired-version-v1"),
        (2, "probe.retired-version-v2"),
    ] {
        let refusal = checks
            .iter()
            .find(|(c, _, check)| c == case && check.message.contains("8-byte layout"))
            .unwrap_or_else(|| panic!("{case}: {checks:#?}"));
        assert_eq!(refusal.1, Outcome::Pass, "{refusal:?}");
        assert!(
            refusal
                .2
                .message
                .contains(&format!("`{:02x} 00 ", 0x80 | version)),
            "{refusal:?}"
        );
    }
}

// LIFE-14: a refusal in the 9-byte layout, or in a version the server supports, fails the rule.
#[test]
fn a_retired_version_refused_in_another_layout_or_version_fails() {
    use crate::verdict::Status;
    use cqlframe::body;
    use cqlframe::envelope::{EnvelopeHeader, Opcode};
    let nine_bytes: fn(u8, i16) -> Vec<u8> = |version, stream| {
        let e = body::error(
            body::PROTOCOL_ERROR,
            "Invalid or unsupported protocol version",
        );
        let header = EnvelopeHeader {
            version: version | 0x80,
            flags: 0,
            stream,
            opcode: Opcode::Error as u8,
            length: e.len() as i32,
        };
        [&header.to_bytes()[..], &e].concat()
    };
    let current: fn(u8, i16) -> Vec<u8> = |_, stream| {
        let e = body::error(
            body::PROTOCOL_ERROR,
            "Invalid or unsupported protocol version",
        );
        cqlframe::envelope::envelope_bytes(0x85, 0, stream, Opcode::Error, &e)
    };
    for (answer, says) in [
        (nine_bytes, "not an ERROR whose code and message fill it"),
        (current, "answered in version 0x85"),
    ] {
        let checks = retired_checks(refusing_server(answer), "LIFE-14");
        for case in ["probe.retired-version-v1", "probe.retired-version-v2"] {
            let failed: Vec<_> = checks
                .iter()
                .filter(|(c, _, check)| c == case && check.status == Status::Fail)
                .collect();
            assert_eq!(failed.len(), 1, "{case}: {checks:#?}");
            assert_eq!(failed[0].1, Outcome::Fail);
            assert!(failed[0].2.message.contains(says), "{failed:?}");
        }
    }
}

/// `probe.startup-auth` alone against the server on `port`: its outcome and checks.
fn startup_auth_against(port: u16) -> (Outcome, Vec<crate::verdict::Check>) {
    let wait = Duration::from_millis(500);
    let target = format!("127.0.0.1:{port}");
    let (_, results, _) = probe(
        &target,
        &["probe.startup-auth".to_string()],
        wait,
        wait,
        |_, _, _| {},
    );
    let r = results
        .into_iter()
        .find(|r| r.case == "probe.startup-auth")
        .expect("case run");
    (r.outcome, r.checks)
}

// LIFE-4: the reference server with a PasswordAuthenticator frames the whole SASL exchange (from
// the AUTH_RESPONSE after AUTHENTICATE on), and one without authentication leaves the case
// nothing to check.
#[test]
fn the_reference_server_frames_the_sasl_exchange() {
    for (script, want) in [("auth = true", Outcome::Pass), ("", Outcome::Informational)] {
        let script: ServerScript = toml::from_str(script).expect("script");
        let server = Server::start(script, 0).expect("server");
        let (outcome, checks) = startup_auth_against(server.port);
        server.stop(Duration::from_millis(10));
        assert_eq!(outcome, want, "{checks:#?}");
    }
}

// LIFE-4: a server that answers STARTUP with AUTHENTICATE but stays unframed until after
// AUTH_SUCCESS (it reads the framed AUTH_RESPONSE as it comes and answers it unframed) fails.
#[test]
fn a_server_switching_after_auth_success_fails_life_4() {
    use crate::verdict::Status;
    use cqlframe::body;
    use cqlframe::envelope::{envelope_bytes, EnvelopeHeader, Opcode};
    use std::io::{Read, Write};
    /// Reads one unframed request and answers it unframed with `opcode`, `body`.
    fn answer(s: &mut std::net::TcpStream, opcode: Opcode, body: &[u8]) -> std::io::Result<()> {
        let mut h = [0u8; 9];
        s.read_exact(&mut h)?;
        let h = EnvelopeHeader::parse(&h);
        s.read_exact(&mut vec![0u8; h.length.max(0) as usize])?;
        s.write_all(&envelope_bytes(0x85, 0, h.stream, opcode, body))
    }
    fn serve(mut s: std::net::TcpStream) -> std::io::Result<()> {
        answer(
            &mut s,
            Opcode::Supported,
            &body::string_multimap::<&str, &str>(&[]),
        )?;
        let authenticator = body::string("org.apache.cassandra.auth.PasswordAuthenticator");
        answer(&mut s, Opcode::Authenticate, &authenticator)?;
        // The framed AUTH_RESPONSE of the probe: its first bytes, read as an envelope.
        s.read_exact(&mut [0u8; 9])?;
        s.write_all(&envelope_bytes(
            0x85,
            0,
            2,
            Opcode::AuthSuccess,
            &(-1i32).to_be_bytes(),
        ))?;
        std::thread::sleep(Duration::from_secs(1));
        Ok(())
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            std::thread::spawn(move || serve(s));
        }
    });
    let (outcome, checks) = startup_auth_against(port);
    assert_eq!(outcome, Outcome::Fail, "{checks:#?}");
    assert!(
        checks
            .iter()
            .any(|c| c.rule == "LIFE-4" && c.status == Status::Fail),
        "{checks:#?}"
    );
}
