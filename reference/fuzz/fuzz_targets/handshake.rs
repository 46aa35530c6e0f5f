//! One end of a connection (server or client) driven through the handshake and into framing
//! with fuzzer bytes as the peer's stream, cut into fuzzer-chosen chunks.
//!
//! Input layout:
//! ```text
//! byte 0  bit 0: role (0 server, 1 client)        bit 1: valid handshake prefix first
//!         bit 2: STARTUP asks COMPRESSION=lz4      bit 3: STARTUP asks FRAME_CHECKSUM=crc32c
//!         bits 4-5: version: 5, 6 with USE_BETA, 4, 6 without USE_BETA
//!         bits 6-7: the STARTUP response: READY, AUTHENTICATE, ERROR, READY
//! byte 1  server options: bit 0 no lz4; bits 1-2 checksums: both, none (pre-FRAME_CHECKSUM),
//!         crc32 only, crc32c only; bits 3-5 max envelope body (cqlframe_fuzz::MAX_BODY);
//!         bit 6: the server holds bytes received after STARTUP and decodes them as frames after
//!         its response (EarlyBytes::AsFrames) instead of refusing them (LIFE-12)
//! byte 2+ chunk spec (cqlframe_fuzz::ChunkSpec), then the peer's bytes
//! ```
//! The prefix: for a server, the client's OPTIONS and STARTUP (received, then answered); for a
//! client, the server's SUPPORTED and the STARTUP response (after the client sent OPTIONS and
//! STARTUP). A server answers every unframed STARTUP it receives; both ends echo every framed
//! envelope back with `send`. Errors are fine; panics are not. Checked: unframed envelopes and
//! frames are contiguous in the stream, the negotiation never changes once made, and what an end
//! sends framed decodes, under the negotiated settings, to exactly the envelopes it sent.
#![no_main]

use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::connection::{
    Connection, ConnectionEvent, EarlyBytes, Negotiated, Role, ServerOptions,
};
use cqlframe::decoder::{Decoder, Event};
use cqlframe::encoder::SplitPolicy;
use cqlframe::envelope::{envelope_bytes, Opcode, FLAG_USE_BETA, RESPONSE_BIT};
use cqlframe::{ErrorKind, FramingError};
use cqlframe_fuzz::{ChunkSpec, MAX_BODY};
use libfuzzer_sys::fuzz_target;

struct Driver {
    conn: Connection,
    role: Role,
    version: u8,
    flags: u8,
    response: Opcode,
    /// Stream offset the next unframed envelope or frame must start at.
    next_offset: u64,
    negotiated: Option<Negotiated>,
    /// Unframed STARTUPs received and not answered yet: their stream ids.
    startups: Vec<i16>,
    /// Framed envelopes received, to echo.
    echo: Vec<Vec<u8>>,
    /// Envelopes sent framed, and the bytes they became.
    sent_framed: Vec<Vec<u8>>,
    framed_wire: Vec<u8>,
    max_body: u32,
}

impl Driver {
    fn receive(&mut self, bytes: &[u8]) -> Result<(), FramingError> {
        let Driver {
            conn,
            next_offset,
            negotiated,
            startups,
            echo,
            ..
        } = self;
        let result = conn.receive(bytes, |event| {
            match event {
                ConnectionEvent::Refused { offset, envelope } => {
                    assert!(negotiated.is_none(), "version probe after the switch");
                    assert_eq!(offset, *next_offset, "refused envelope offset");
                    *next_offset += envelope.to_unframed_bytes().len() as u64;
                }
                ConnectionEvent::Unframed { offset, envelope } => {
                    assert!(negotiated.is_none(), "unframed envelope after the switch");
                    assert_eq!(offset, *next_offset, "unframed envelope offset");
                    *next_offset += envelope.to_unframed_bytes().len() as u64;
                    if envelope.header.opcode == Opcode::Startup as u8 {
                        startups.push(envelope.header.stream);
                    }
                }
                ConnectionEvent::Switched {
                    offset,
                    negotiated: n,
                } => {
                    assert_eq!(offset, *next_offset, "switch offset");
                    assert!(negotiated.replace(n).is_none(), "switched twice");
                }
                ConnectionEvent::Frame(frame) => {
                    assert_eq!(frame.offset, *next_offset, "frame offset");
                    *next_offset += frame.header.frame_len() as u64;
                }
                ConnectionEvent::Envelope(envelope) => echo.push(envelope.to_bytes()),
                // Refused on its own (ENV-2, ENV-5): consumed, not delivered, not echoed.
                ConnectionEvent::Rejected { envelope, error } => {
                    assert!(
                        matches!(error.rule(), "ENV-2" | "ENV-5"),
                        "rejected for {error}"
                    );
                    if negotiated.is_none() {
                        *next_offset += envelope.to_unframed_bytes().len() as u64;
                    }
                }
                // The offsets above account for every event; a new one must be added here.
                other => panic!("an event this target does not know: {other:?}"),
            }
            Ok(())
        });
        self.check_negotiation();
        result
    }

    fn check_negotiation(&mut self) {
        match (self.negotiated, self.conn.negotiated()) {
            (Some(a), b) => assert_eq!(Some(a), b, "negotiation changed"),
            (None, b) => self.negotiated = b,
        }
    }

    fn send(&mut self, envelope: &[u8]) -> Result<(), FramingError> {
        let framed = self.conn.negotiated().is_some();
        let mut out = Vec::new();
        let result = self.conn.send(&[envelope], &mut out);
        if framed {
            result.as_ref().expect("framed send fails");
            self.sent_framed.push(envelope.to_vec());
            self.framed_wire.extend_from_slice(&out);
        } else if result.is_ok() {
            assert_eq!(out, envelope, "unframed send changed the bytes");
        }
        self.check_negotiation();
        result
    }

    /// Answers received STARTUPs (server) and echoes received envelopes (both ends).
    fn respond(&mut self) {
        for stream in std::mem::take(&mut self.startups) {
            if self.role == Role::Server {
                let body = if self.response == Opcode::Error {
                    body::error(body::PROTOCOL_ERROR, "no")
                } else {
                    Vec::new()
                };
                let resp = envelope_bytes(
                    self.version | RESPONSE_BIT,
                    self.flags,
                    stream,
                    self.response,
                    &body,
                );
                let _ = self.send(&resp);
            }
        }
        for envelope in std::mem::take(&mut self.echo) {
            let _ = self.send(&envelope);
        }
    }

    /// ERR-1: the server's answer to a framing error is one ERROR envelope (PROTOCOL_ERROR,
    /// stream 0), framed with the negotiated settings once the connection is framed.
    fn check_error_response(&mut self, error: &FramingError) {
        let bytes = self.conn.error_response(error);
        let envelope = match self.conn.negotiated() {
            None => bytes,
            Some(n) => {
                let mut decoder = Decoder::new(n.settings, u32::MAX);
                let mut envelopes = Vec::new();
                decoder
                    .decode(&bytes, |event| {
                        if let Event::Envelope(e) = event {
                            envelopes.push(e.to_bytes());
                        }
                        Ok(())
                    })
                    .and_then(|()| decoder.finish())
                    .expect("error response decodes");
                assert_eq!(envelopes.len(), 1, "error response is one envelope");
                assert_eq!(
                    envelopes[0][0],
                    n.version | RESPONSE_BIT,
                    "error response version"
                );
                envelopes.pop().unwrap()
            }
        };
        assert!(
            envelope.len() >= 9,
            "error response shorter than an envelope header"
        );
        assert_eq!(
            (envelope[2], envelope[3], envelope[4]),
            (0, 0, Opcode::Error as u8),
            "error response header"
        );
        assert_eq!(
            i32::from_be_bytes(envelope[5..9].try_into().unwrap()) as usize,
            envelope.len() - 9
        );
        let (code, _) = body::read_error(&envelope[9..]).expect("error response body");
        assert_eq!(code, body::PROTOCOL_ERROR);
    }

    /// What this end sent framed decodes to exactly the envelopes it sent.
    fn check_sent(&self) {
        let Some(n) = self.negotiated else {
            assert!(self.sent_framed.is_empty());
            return;
        };
        let mut decoder = Decoder::new(n.settings, self.max_body);
        let mut decoded = Vec::new();
        decoder
            .decode(&self.framed_wire, |event| {
                if let Event::Envelope(e) = event {
                    decoded.push(e.to_bytes());
                }
                Ok(())
            })
            .and_then(|()| decoder.finish())
            .expect("own framed output decodes");
        assert_eq!(decoded, self.sent_framed, "framed output round trip");
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (b0, b1) = (data[0], data[1]);
    let Some((chunking, stream)) = ChunkSpec::parse(&data[2..]) else {
        return;
    };
    let role = if b0 & 1 == 0 {
        Role::Server
    } else {
        Role::Client
    };
    let (version, flags) = [(5, 0), (6, FLAG_USE_BETA), (4, 0), (6, 0)][usize::from(b0 >> 4 & 3)];
    let response = [
        Opcode::Ready,
        Opcode::Authenticate,
        Opcode::Error,
        Opcode::Ready,
    ][usize::from(b0 >> 6)];
    let mut options = vec![("CQL_VERSION", "3.0.0")];
    if b0 & 4 != 0 {
        options.push(("COMPRESSION", "lz4"));
    }
    if b0 & 8 != 0 {
        options.push(("FRAME_CHECKSUM", "crc32c"));
    }
    let server_options = ServerOptions {
        lz4: b1 & 1 == 0,
        checksums: match b1 >> 1 & 3 {
            0 => Some(vec![PayloadChecksum::Crc32, PayloadChecksum::Crc32c]),
            1 => None,
            2 => Some(vec![PayloadChecksum::Crc32]),
            _ => Some(vec![PayloadChecksum::Crc32c]),
        },
    };
    let max_body = MAX_BODY[usize::from(b1 >> 3 & 7)].max(1024);
    let policy = SplitPolicy::with_capacity(64).expect("valid capacity");
    let conn = match role {
        Role::Server => {
            let early = if b1 & 0x40 == 0 {
                EarlyBytes::Refuse
            } else {
                EarlyBytes::AsFrames
            };
            Connection::server(server_options, max_body, policy).with_early_bytes(early)
        }
        Role::Client => Connection::new(Role::Client, max_body, policy),
    };
    let mut d = Driver {
        conn,
        role,
        version,
        flags,
        response,
        next_offset: 0,
        negotiated: None,
        startups: Vec::new(),
        echo: Vec::new(),
        sent_framed: Vec::new(),
        framed_wire: Vec::new(),
        max_body,
    };
    let options_env = envelope_bytes(version, flags, 0, Opcode::Options, &[]);
    let startup_env = envelope_bytes(
        version,
        flags,
        1,
        Opcode::Startup,
        &body::string_map(&options),
    );
    match role {
        Role::Client => {
            d.send(&options_env).expect("client sends OPTIONS");
            d.send(&startup_env).expect("client sends STARTUP");
            if b0 & 2 != 0 {
                let resp = version | RESPONSE_BIT;
                let supported = body::string_multimap(&[
                    ("COMPRESSION", vec!["lz4"]),
                    ("FRAME_CHECKSUMS", vec!["crc32", "crc32c"]),
                ]);
                let mut prefix = envelope_bytes(resp, flags, 0, Opcode::Supported, &supported);
                let body = if response == Opcode::Error {
                    body::error(body::PROTOCOL_ERROR, "no")
                } else {
                    Vec::new()
                };
                prefix.extend(envelope_bytes(resp, flags, 1, response, &body));
                d.receive(&prefix).expect("valid handshake prefix");
                d.respond();
            }
        }
        Role::Server => {
            if b0 & 2 != 0 {
                d.receive(&options_env).expect("valid OPTIONS");
                match d.receive(&startup_env) {
                    Ok(()) => d.respond(),
                    // ENV-5: a v6 STARTUP without USE_BETA is the one prefix the server refuses.
                    Err(e) => {
                        assert_eq!(
                            (version, flags, e.kind),
                            (6, 0, ErrorKind::MissingBetaFlag),
                            "prefix refused"
                        );
                        let _ = d.conn.finish();
                        return;
                    }
                }
            }
        }
    }
    for chunk in chunking.chunks(stream) {
        if let Err(e) = d.receive(chunk) {
            if role == Role::Server {
                d.check_error_response(&e);
            }
            break;
        }
        d.respond();
    }
    // The end of the stream, after an error too (a server closing the socket reports both).
    let _ = d.conn.finish();
    d.check_sent();
});
