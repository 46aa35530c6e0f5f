//! The conformance server's handling of what a client sends, without its listener: fuzzer bytes
//! as the client's stream, in fuzzer-chosen reads, through the server of a fuzzer-chosen case
//! of conformance/cases.toml (its answers, split sizes and faults); the server's answers go to a
//! socket drained by a thread.
//!
//! Input layout:
//! ```text
//! byte 0  the case (index into the catalogue's cases without write pauses, modulo their count)
//! byte 1+ chunk spec (cqlframe_fuzz::ChunkSpec), then the client's bytes
//! ```
//! Errors are the client's findings; panics are not. Checked: the server records one
//! connection, and the bytes it recorded from the client are the front of what was sent.
#![no_main]

use cqlframe_fuzz::ChunkSpec;
use cqlframe_harness::conformance::cases::ServerScript;
use cqlframe_harness::conformance::{load, server};
use libfuzzer_sys::fuzz_target;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::sync::OnceLock;

/// The server end of one loopback connection whose client end a thread drains forever.
fn sink() -> TcpStream {
    static SINK: OnceLock<TcpStream> = OnceLock::new();
    SINK.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while matches!(client.read(&mut buf), Ok(n) if n > 0) {}
        });
        server
    })
    .try_clone()
    .expect("clone")
}

fn scripts() -> &'static [ServerScript] {
    static SCRIPTS: OnceLock<Vec<ServerScript>> = OnceLock::new();
    SCRIPTS.get_or_init(|| {
        load(None)
            .expect("conformance/cases.toml")
            .cases
            .into_iter()
            .map(|c| c.server)
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Some((chunking, stream)) = ChunkSpec::parse(rest) else {
        return;
    };
    let scripts = scripts();
    let script = scripts[usize::from(pick) % scripts.len()].clone();
    let reads = chunking.chunks(stream);
    let obs = server::replay(script, sink(), &reads);
    assert_eq!(obs.connections.len(), 1);
    let received: Vec<u8> = obs.connections[0]
        .turns
        .iter()
        .filter(|(from_client, _)| *from_client)
        .flat_map(|(_, b)| b.iter().copied())
        .collect();
    assert!(
        stream.starts_with(&received),
        "recorded bytes differ from those sent"
    );
});
