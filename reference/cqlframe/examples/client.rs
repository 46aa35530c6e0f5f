//! A minimal blocking CQL client on [`Connection`]: the handshake (OPTIONS, STARTUP, READY),
//! then one QUERY, framed as protocol v5 requires, with LZ4 and CRC32C when asked and offered.
//!
//! ```text
//! cargo run --example client -- 127.0.0.1:9042 [--lz4] [--crc32c]
//! ```
//!
//! Try it on the example server (`cargo run --example server`) or on a conformance case's
//! server (`cqlframe conformance server --case handshake.lz4`), which judges every byte sent.

mod socket;

use cqlframe::envelope::envelope_bytes;
use cqlframe::{body, Connection, Opcode, Role, SplitPolicy, DEFAULT_MAX_ENVELOPE_BODY};
use socket::{Peer, Received};
use std::error::Error;
use std::net::TcpStream;
use std::time::Duration;

/// Protocol v5: the first with framing.
const VERSION: u8 = 5;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let address = args.first().map_or("127.0.0.1:9042", String::as_str);
    let lz4 = args.iter().any(|a| a == "--lz4");
    let crc32c = args.iter().any(|a| a == "--crc32c");

    let stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let conn = Connection::new(
        Role::Client,
        DEFAULT_MAX_ENVELOPE_BODY,
        SplitPolicy::DRIVERS,
    );
    let mut peer = Peer::new(stream, conn);

    // OPTIONS: what does the server support? Unframed, like everything before the switch.
    peer.send(&envelope_bytes(VERSION, 0, 1, Opcode::Options, &[]))?;
    let supported = expect(peer.receive()?, Opcode::Supported)?;
    let offered = body::read_string_multimap(&supported.body)?;
    println!("SUPPORTED {offered:?}");

    // STARTUP asks for LZ4 if wanted, and for CRC32C only if SUPPORTED lists it: a server
    // that predates FRAME_CHECKSUM ignores the key and frames with CRC32 (NEG-4).
    let mut options = vec![("CQL_VERSION", "3.0.0")];
    if lz4 {
        options.push(("COMPRESSION", "lz4"));
    }
    let crc32c_offered = peer
        .conn
        .advertised_checksums()
        .is_some_and(|c| c.iter().any(|c| c.eq_ignore_ascii_case("crc32c")));
    if crc32c && crc32c_offered {
        options.push(("FRAME_CHECKSUM", "crc32c"));
    }
    let startup = body::string_map(&options);
    peer.send(&envelope_bytes(VERSION, 0, 2, Opcode::Startup, &startup))?;

    // READY switches both directions to framing: from the byte after it, the connection
    // decodes frames, and `send` frames.
    expect(peer.receive()?, Opcode::Ready)?;
    let negotiated = peer
        .conn
        .negotiated()
        .ok_or("READY did not switch to framing")?;
    println!("READY, framed: {negotiated}");

    // QUERY: [long string] query, [short] consistency ONE, [int] flags (an int from v5 on).
    let query = "SELECT * FROM ks.t";
    let mut request = (query.len() as i32).to_be_bytes().to_vec();
    request.extend_from_slice(query.as_bytes());
    request.extend_from_slice(&1u16.to_be_bytes());
    request.extend_from_slice(&0u32.to_be_bytes());
    peer.send(&envelope_bytes(VERSION, 0, 3, Opcode::Query, &request))?;
    let result = expect(peer.receive()?, Opcode::Result)?;
    let kind = result
        .body
        .get(..4)
        .map_or(0, |b| i32::from_be_bytes(b.try_into().unwrap()));
    println!("RESULT kind {kind}, {} bytes", result.body.len());
    Ok(())
}

/// `envelope` if it is the response `opcode` names; an ERROR's message otherwise.
fn expect(envelope: Received, opcode: Opcode) -> Result<Received, Box<dyn Error>> {
    match Opcode::from_u8(envelope.header.opcode) {
        Some(op) if op == opcode => Ok(envelope),
        Some(Opcode::Error) => {
            let (code, message) = body::read_error(&envelope.body)?;
            Err(format!("ERROR {code:#06x} instead of {}: {message}", opcode.name()).into())
        }
        _ => Err(format!(
            "opcode {:#04x} instead of {}",
            envelope.header.opcode,
            opcode.name()
        )
        .into()),
    }
}
