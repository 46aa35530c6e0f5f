//! The examples run: the client against conformance servers, whose rules engine judges every
//! byte it sends, and against the example server, in each framing a client can ask for.

use cqlframe_harness::conformance::{load, server::Server};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The settings a client asks for: its flags, and the conformance case that offers them.
const SETTINGS: [(&[&str], &str, &str); 4] = [
    (&[], "handshake.uncompressed", "v5 uncompressed crc32"),
    (&["--lz4"], "handshake.lz4", "v5 lz4 crc32"),
    (
        &["--crc32c"],
        "negotiate.crc32c-offered",
        "v5 uncompressed crc32c",
    ),
    (
        &["--lz4", "--crc32c"],
        "negotiate.crc32c-lz4",
        "v5 lz4 crc32c",
    ),
];

/// An example's binary. `cargo test` builds the examples with the tests, into `examples/`
/// beside the `deps/` folder that holds this test.
fn example(name: &str) -> Command {
    let exe = std::env::current_exe().unwrap();
    let path: PathBuf = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo test -p cqlframe` whole, which builds the examples",
        path.display()
    );
    Command::new(path)
}

fn run_client(address: &str, flags: &[&str]) -> String {
    let Output {
        status,
        stdout,
        stderr,
    } = example("client").arg(address).args(flags).output().unwrap();
    let stdout = String::from_utf8(stdout).unwrap();
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(
        status.success(),
        "client {flags:?}: {status}\n{stdout}{stderr}"
    );
    stdout
}

#[test]
fn the_client_passes_the_conformance_servers_judge() {
    let catalogue = load(None).unwrap();
    for (flags, case, negotiated) in SETTINGS {
        let case = catalogue.cases.iter().find(|c| c.id == case).unwrap();
        let server = Server::start(case.server.clone(), 0).unwrap();
        let stdout = run_client(&format!("127.0.0.1:{}", server.port), flags);
        assert!(
            stdout.contains(&format!("READY, framed: {negotiated}\n")),
            "{stdout}"
        );
        assert!(stdout.contains("RESULT kind 2"), "rows from ks.t: {stdout}");
        let seen = server.stop(Duration::from_millis(100));
        let [conn] = seen.connections.as_slice() else {
            panic!("one connection, not {}", seen.connections.len());
        };
        assert_eq!(
            conn.negotiated.map(|n| n.to_string()).as_deref(),
            Some(negotiated)
        );
        assert_eq!(conn.framing_error, None, "{}", case.id);
        assert!(
            conn.findings.rules().is_empty(),
            "{}: {:?}",
            case.id,
            conn.findings
        );
        assert_eq!(conn.requests, 3, "OPTIONS, STARTUP, QUERY");
    }
}

#[test]
fn the_client_and_the_example_server_agree() {
    for (flags, _, negotiated) in SETTINGS {
        let mut server = example("server")
            .arg("127.0.0.1:0")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let address = first.strip_prefix("listening on ").unwrap();
        let stdout = run_client(address, flags);
        assert!(
            stdout.contains(&format!("READY, framed: {negotiated}\n")),
            "{stdout}"
        );
        assert!(stdout.contains("RESULT kind 1, 4 bytes"), "Void: {stdout}");
        let said: Vec<String> = lines.map(Result::unwrap).collect();
        assert!(server.wait().unwrap().success(), "server: {said:?}");
        assert!(said.contains(&format!("framed: {negotiated}")), "{said:?}");
        assert_eq!(
            said.last().map(String::as_str),
            Some("client closed the connection")
        );
    }
}
