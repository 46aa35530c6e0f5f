//! `cqlframe probe` against the reference's own conformance server: every case passes (or is
//! informational or unsupported where the server's script leaves nothing to test).

use super::probe;
use crate::conformance::cases::ServerScript;
use crate::conformance::runner::Outcome;
use crate::conformance::server::Server;
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
