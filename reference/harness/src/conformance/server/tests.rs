//! The server held to its [`Limits`]: what a hostile or broken driver cannot make it take on;
//! and its refusal of a version it does not speak, whose version byte a case may choose.

use super::Server;
use crate::conformance::cases::ServerScript;
use crate::conformance::limits::Limits;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn script() -> ServerScript {
    toml::from_str("").expect("the default script")
}

/// Reads until the server closes; how long that took.
fn until_closed(mut s: TcpStream) -> Duration {
    let started = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 4096];
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    started.elapsed()
}

#[test]
fn a_connection_past_the_limit_is_closed_on_accept() {
    let limits = Limits {
        connections: 2,
        ..Limits::DEFAULT
    };
    let server = Server::start_with(script(), 0, limits).expect("server");
    let open: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(("127.0.0.1", server.port)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let third = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    assert!(until_closed(third) < Duration::from_secs(2));
    drop(open);
    let obs = server.stop(Duration::from_millis(100));
    assert_eq!(obs.refused_connections, 1);
    assert_eq!(obs.connections.len(), 2);
}

#[test]
fn bytes_past_the_cap_close_the_connection_that_sends_them() {
    let limits = Limits {
        held_bytes: 1 << 20,
        ..Limits::DEFAULT
    };
    let server = Server::start_with(script(), 0, limits).expect("server");
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    // An unframed v4 QUERY announcing a 10 MB body (under the server's envelope limit),
    // then its body a chunk at a time: the server would hold it all.
    let mut header = vec![4, 0, 0, 1, 7];
    header.extend_from_slice(&10_000_000u32.to_be_bytes());
    s.write_all(&header).unwrap();
    let chunk = vec![0x5a; 64 << 10];
    // Far more than the kernel's socket buffers take in (tcp_rmem allows 32 MiB here).
    let mut sent = 0usize;
    while sent < 256 << 20 && s.write_all(&chunk).is_ok() {
        sent += chunk.len();
    }
    assert!(sent < 128 << 20, "the server kept reading past its cap");
    let obs = server.stop(Duration::from_millis(100));
    let c = &obs.connections[0];
    assert_eq!(c.closed_by.as_deref(), Some("server (memory cap)"), "{c:?}");
    let held: usize = c.turns.iter().map(|(_, b)| b.len()).sum();
    assert!(held <= 1 << 20, "{held} bytes held");
}

#[test]
fn an_idle_connection_is_closed() {
    let limits = Limits {
        idle: Duration::from_millis(300),
        ..Limits::DEFAULT
    };
    let server = Server::start_with(script(), 0, limits).expect("server");
    let s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let waited = until_closed(s);
    assert!(waited >= Duration::from_millis(250) && waited < Duration::from_secs(3));
    let obs = server.stop(Duration::ZERO);
    assert_eq!(
        obs.connections[0].closed_by.as_deref(),
        Some("server (idle)")
    );
}

/// The first 9 bytes the server answers to an unframed OPTIONS of `version` on stream 3.
fn answer_to_options(script: ServerScript, version: u8) -> [u8; 9] {
    let server = Server::start_with(script, 0, Limits::DEFAULT).expect("server");
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&[version, 0, 0, 3, 5, 0, 0, 0, 0]).unwrap();
    let mut header = [0u8; 9];
    s.read_exact(&mut header).expect("the refusal's header");
    server.stop(Duration::ZERO);
    header
}

#[test]
fn a_refusal_is_in_the_highest_non_beta_version_unless_the_script_names_one() {
    // DSE_V2, which the Java and Python drivers try first, on a server of v3 to v6-beta.
    let default = answer_to_options(script(), 0x42);
    assert_eq!((default[0], default[4]), (0x85, 0x00), "ERROR in v5");
    assert_eq!(
        i16::from_be_bytes([default[2], default[3]]),
        3,
        "on the request's stream"
    );
    let rc1: ServerScript =
        toml::from_str("refusal_version = 6\nrefusal_stream = \"zero\"").expect("script");
    let beta = answer_to_options(rc1, 0x42);
    assert_eq!(
        (beta[0], beta[4]),
        (0x86, 0x00),
        "ERROR in v6-beta, as Cassandra 4.0-rc1"
    );
    assert_eq!(i16::from_be_bytes([beta[2], beta[3]]), 0, "on stream 0");
}

#[test]
fn a_negative_length_script_answers_startup_with_a_bare_header() {
    let script: ServerScript = toml::from_str("negative_length = true").expect("script");
    let server = Server::start_with(script, 0, Limits::DEFAULT).expect("server");
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // STARTUP in v5 on stream 7: {"CQL_VERSION": "3.0.0"}.
    let mut body = 1u16.to_be_bytes().to_vec();
    for word in ["CQL_VERSION", "3.0.0"] {
        body.extend((word.len() as u16).to_be_bytes());
        body.extend(word.as_bytes());
    }
    let mut startup = vec![0x05, 0, 0, 7, 0x01];
    startup.extend((body.len() as u32).to_be_bytes());
    startup.extend(body);
    s.write_all(&startup).unwrap();
    let mut header = [0u8; 9];
    s.read_exact(&mut header).expect("the answer's header");
    assert_eq!(
        (header[0], header[4]),
        (0x85, 0x02),
        "an unframed READY in v5"
    );
    assert_eq!(
        i16::from_be_bytes([header[2], header[3]]),
        7,
        "on STARTUP's stream"
    );
    assert_eq!(
        i32::from_be_bytes([header[5], header[6], header[7], header[8]]),
        -2,
        "a negative body length"
    );
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut more = [0u8; 1];
    assert!(
        !matches!(s.read(&mut more), Ok(1)),
        "nothing follows the header"
    );
    let obs = server.stop(Duration::ZERO);
    assert_eq!(
        obs.connections[0].provocation,
        Some(crate::conformance::cases::Provocation::NegativeLength)
    );
}
