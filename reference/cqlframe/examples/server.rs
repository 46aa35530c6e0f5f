//! A minimal blocking CQL server on [`Connection`]: it serves one connection, answering the
//! handshake (OPTIONS with SUPPORTED, STARTUP with READY) and each QUERY with an empty (Void)
//! RESULT, framed after READY with what STARTUP chose: LZ4 or not, CRC32 or CRC32C.
//!
//! ```text
//! cargo run --example server -- 127.0.0.1:9042
//! ```
//!
//! It prints `listening on ADDRESS` first; `cargo run --example client -- ADDRESS` talks to it.

mod socket;

use cqlframe::connection::negotiate;
use cqlframe::envelope::{envelope_bytes, RESPONSE_BIT};
use cqlframe::{body, Connection, Opcode, ServerOptions, SplitPolicy, DEFAULT_MAX_ENVELOPE_BODY};
use socket::{Error, Peer};
use std::io::{ErrorKind, Write};
use std::net::TcpListener;
use std::time::Duration;

/// The one protocol version served: v5, the first with framing.
const VERSION: u8 = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let address = std::env::args().nth(1).unwrap_or("127.0.0.1:9042".into());
    let listener = TcpListener::bind(address)?;
    println!("listening on {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let (stream, client) = listener.accept()?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    println!("connection from {client}");

    // LZ4, and both payload checksums: what a client may ask for in STARTUP.
    let options = ServerOptions::default();
    let conn = Connection::server(
        options.clone(),
        DEFAULT_MAX_ENVELOPE_BODY,
        SplitPolicy::SERVER,
    );
    let mut peer = Peer::new(stream, conn);
    loop {
        let request = match peer.receive() {
            Ok(request) => request,
            Err(Error::Io(e)) if e.kind() == ErrorKind::UnexpectedEof => {
                println!("client closed the connection");
                return Ok(());
            }
            // The client broke a framing rule: tell it which and where (ERR-1), then close.
            Err(Error::Framing(e)) => {
                let report = peer.conn.error_response(&e);
                peer.stream.write_all(&report)?;
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        let h = request.header;
        let opcode = Opcode::from_u8(h.opcode);
        println!(
            "{} on stream {}",
            opcode.map_or("an unknown opcode", Opcode::name),
            h.stream
        );
        let (response, body) = match opcode {
            _ if h.protocol_version() != VERSION => refusal("this server speaks protocol v5 only"),
            Some(Opcode::Options) => (Opcode::Supported, supported(&options)),
            // The Connection switches to framing as READY goes out, with what STARTUP chose.
            Some(Opcode::Startup) => {
                let startup = body::read_string_map(&request.body).unwrap_or_default();
                match negotiate(VERSION, &startup, &options) {
                    Ok(_) => (Opcode::Ready, Vec::new()),
                    Err(kind) => refusal(&kind.to_string()),
                }
            }
            // A real server would run the query; RESULT kind 1 is Void.
            Some(Opcode::Query) => (Opcode::Result, 1i32.to_be_bytes().to_vec()),
            _ => refusal("this example answers OPTIONS, STARTUP and QUERY only"),
        };
        let version = h.protocol_version() | RESPONSE_BIT;
        peer.send(&envelope_bytes(version, 0, h.stream, response, &body))?;
        if let (Some(Opcode::Startup), Some(negotiated)) = (opcode, peer.conn.negotiated()) {
            println!("framed: {negotiated}");
        }
    }
}

/// SUPPORTED's body: what `options` accept, as a string multimap.
fn supported(options: &ServerOptions) -> Vec<u8> {
    let checksums = options
        .checksums
        .iter()
        .flatten()
        .map(|c| c.name())
        .collect();
    let compression = if options.lz4 { vec!["lz4"] } else { vec![] };
    body::string_multimap(&[
        ("CQL_VERSION", vec!["3.0.0"]),
        ("PROTOCOL_VERSIONS", vec!["5/v5"]),
        ("COMPRESSION", compression),
        ("FRAME_CHECKSUMS", checksums),
    ])
}

/// An ERROR response (PROTOCOL_ERROR) saying why.
fn refusal(message: &str) -> (Opcode, Vec<u8>) {
    (Opcode::Error, body::error(body::PROTOCOL_ERROR, message))
}
