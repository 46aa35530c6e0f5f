//! The connection lifecycle end to end: a reference client and server talk through the
//! handshake and switch to framing at the STARTUP response (LIFE-*, NEG-*).

use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::connection::{
    Connection, ConnectionEvent, EarlyBytes, Negotiated, Role, ServerOptions,
};
use cqlframe::encoder::SplitPolicy;
use cqlframe::envelope::{envelope_bytes, EnvelopeHeader, Opcode, FLAG_USE_BETA};
use cqlframe::{ErrorKind, Format, FrameSettings, FramingError};

const MAX: u32 = 1 << 24;
const CQL: (&str, &str) = ("CQL_VERSION", "3.0.0");

/// What one side saw: (framed?, opcode) per envelope, and the switch.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    envelopes: Vec<(bool, u8, usize)>,
    switched: Option<(u64, Negotiated)>,
    /// Rules of envelopes refused on their own.
    rejected: Vec<&'static str>,
    /// Versions of requests refused as version probes.
    refused: Vec<u8>,
}

fn receive(conn: &mut Connection, bytes: &[u8], seen: &mut Seen) -> Result<(), FramingError> {
    conn.receive(bytes, |event| {
        match event {
            ConnectionEvent::Unframed { envelope, .. } => {
                seen.envelopes
                    .push((false, envelope.header.opcode, envelope.body.len()))
            }
            ConnectionEvent::Envelope(envelope) => {
                seen.envelopes
                    .push((true, envelope.header.opcode, envelope.body.len()))
            }
            ConnectionEvent::Switched { offset, negotiated } => {
                seen.switched = Some((offset, negotiated))
            }
            ConnectionEvent::Rejected { error, .. } => seen.rejected.push(error.rule()),
            ConnectionEvent::Refused { envelope, .. } => {
                seen.refused.push(envelope.header.protocol_version())
            }
            _ => {}
        }
        Ok(())
    })
}

/// The rule `conn` reports refusing `bytes`.
fn refused(conn: &mut Connection, bytes: &[u8]) -> &'static str {
    receive(conn, bytes, &mut Seen::default())
        .unwrap_err()
        .rule()
}

/// `envelope` sent on `conn`: its bytes appended to `wire`.
fn send(conn: &mut Connection, wire: &mut Vec<u8>, envelope: &[u8]) {
    conn.send(&[envelope], wire).unwrap();
}

fn client() -> Connection {
    Connection::new(Role::Client, MAX, SplitPolicy::DRIVERS)
}

fn server() -> Connection {
    Connection::server(ServerOptions::default(), MAX, SplitPolicy::SERVER)
}

fn startup(version: u8, flags: u8, options: &[(&str, &str)]) -> Vec<u8> {
    envelope_bytes(
        version,
        flags,
        1,
        Opcode::Startup,
        &body::string_map(options),
    )
}

/// Runs OPTIONS, SUPPORTED, STARTUP, `response`, then a framed QUERY and a large RESULT.
fn session(version: u8, flags: u8, options: &[(&str, &str)], response: Opcode) -> (Seen, Seen) {
    let (mut client, mut srv) = (client(), server());
    let (mut c_seen, mut s_seen) = (Seen::default(), Seen::default());
    let resp = version | 0x80;
    let mut wire = Vec::new();
    send(
        &mut client,
        &mut wire,
        &envelope_bytes(version, flags, 0, Opcode::Options, &[]),
    );
    send(&mut client, &mut wire, &startup(version, flags, options));
    receive(&mut srv, &wire, &mut s_seen).unwrap();
    let supported = body::string_multimap(&[("FRAME_CHECKSUMS", vec!["crc32", "crc32c"])]);
    let mut back = Vec::new();
    send(
        &mut srv,
        &mut back,
        &envelope_bytes(resp, flags, 0, Opcode::Supported, &supported),
    );
    send(
        &mut srv,
        &mut back,
        &envelope_bytes(resp, flags, 1, response, &[]),
    );
    // Framed from here on (for v5+): a large result spanning several frames.
    let rows = vec![0x42u8; 300_000];
    send(
        &mut srv,
        &mut back,
        &envelope_bytes(resp, flags, 2, Opcode::Result, &rows),
    );
    for chunk in back.chunks(777) {
        receive(&mut client, chunk, &mut c_seen).unwrap();
    }
    let mut query = Vec::new();
    send(
        &mut client,
        &mut query,
        &envelope_bytes(version, flags, 2, Opcode::Query, b"SELECT 1"),
    );
    receive(&mut srv, &query, &mut s_seen).unwrap();
    client.finish().unwrap();
    srv.finish().unwrap();
    (c_seen, s_seen)
}

// LIFE-1, LIFE-3, LIFE-4, LIFE-5, NEG-1, NEG-3, NEG-5, FMT-13: CRC32C with LZ4 end to end.
#[test]
fn v5_lz4_crc32c_switches_after_ready() {
    let options = [CQL, ("COMPRESSION", "lz4"), ("FRAME_CHECKSUM", "CRC32C")];
    let (c, s) = session(5, 0, &options, Opcode::Ready);
    let expected = Negotiated {
        version: 5,
        settings: FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32c),
    };
    assert_eq!(c.switched.map(|s| s.1), Some(expected));
    let supported_len =
        body::string_multimap(&[("FRAME_CHECKSUMS", vec!["crc32", "crc32c"])]).len();
    assert_eq!(
        c.envelopes,
        vec![
            (false, 0x06, supported_len),
            (false, 0x02, 0),
            (true, 0x08, 300_000)
        ]
    );
    let startup_len = body::string_map(&options).len();
    assert_eq!(
        s.envelopes,
        vec![
            (false, 0x05, 0),
            (false, 0x01, startup_len),
            (true, 0x07, 8)
        ]
    );
}

// LIFE-4, LIFE-5: AUTHENTICATE switches like READY.
#[test]
fn authenticate_switches_too() {
    let (c, _) = session(5, 0, &[CQL], Opcode::Authenticate);
    assert_eq!(
        c.switched.map(|s| s.1.settings),
        Some(FrameSettings::default())
    );
    assert_eq!(c.envelopes.last(), Some(&(true, 0x08, 300_000)));
}

// LIFE-8: after ERROR to STARTUP both sides frame uncompressed with CRC32, whatever was asked.
#[test]
fn error_response_switches_to_defaults() {
    let (c, s) = session(
        5,
        0,
        &[("COMPRESSION", "lz4"), ("FRAME_CHECKSUM", "crc32c")],
        Opcode::Error,
    );
    assert_eq!(
        c.switched.map(|s| s.1.settings),
        Some(FrameSettings::default())
    );
    assert_eq!(s.envelopes.last(), Some(&(true, 0x07, 8)));
}

// LIFE-2: a v4 connection never frames.
#[test]
fn v4_stays_unframed() {
    let (c, s) = session(4, 0, &[CQL], Opcode::Ready);
    assert_eq!(c.switched, None);
    assert_eq!(c.envelopes.last(), Some(&(false, 0x08, 300_000)));
    assert_eq!(s.envelopes.last(), Some(&(false, 0x07, 8)));
}

// ENV-5: v6-beta frames like v5 when USE_BETA is set; without it the server refuses the
// envelope on its own (unframed ERROR in its version, with USE_BETA) and nothing switches.
#[test]
fn v6_beta_needs_use_beta() {
    let (c, _) = session(6, FLAG_USE_BETA, &[CQL], Opcode::Ready);
    assert_eq!(c.switched.map(|s| s.1.version), Some(6));
    let mut srv = server();
    let mut seen = Seen::default();
    let mut refused = None;
    srv.receive(&startup(6, 0, &[]), |event| {
        if let ConnectionEvent::Rejected { envelope, error } = event {
            refused = Some((envelope.header, error));
        }
        Ok(())
    })
    .unwrap();
    let (header, error) = refused.expect("STARTUP refused");
    assert_eq!(
        (error.kind.clone(), error.rule()),
        (ErrorKind::MissingBetaFlag, "ENV-5")
    );
    assert_eq!(srv.negotiated(), None);
    let answer = srv.reject_response(&header, &error);
    assert_eq!(
        &answer[..5],
        &[0x86, FLAG_USE_BETA, 0, 1, Opcode::Error as u8]
    );
    // The connection goes on unframed: a proper v6-beta STARTUP still works.
    receive(&mut srv, &startup(6, FLAG_USE_BETA, &[]), &mut seen).unwrap();
    assert_eq!(seen.envelopes, vec![(false, Opcode::Startup as u8, 2)]);
}

// NEG-2, NEG-6, NEG-7, NEG-9: what the server decides from STARTUP.
#[test]
fn negotiation_decisions() {
    let decide = |version: u8, options: &[(&str, &str)], server: &ServerOptions| {
        let options: Vec<_> = options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        cqlframe::connection::negotiate(version, &options, server)
    };
    let refusal = |options: &[(&str, &str)], server: &ServerOptions| {
        decide(5, options, server).unwrap_err().rule()
    };
    let all = ServerOptions::default();
    assert_eq!(
        decide(5, &[("compression", "LZ4")], &all).unwrap().format,
        Format::Lz4
    );
    assert_eq!(refusal(&[("COMPRESSION", "snappy")], &all), "NEG-2");
    assert_eq!(refusal(&[("COMPRESSION", "")], &all), "NEG-2");
    assert_eq!(refusal(&[("FRAME_CHECKSUM", "adler")], &all), "NEG-6");
    let crc32_only = ServerOptions {
        checksums: Some(vec![PayloadChecksum::Crc32]),
        ..all.clone()
    };
    assert_eq!(
        refusal(&[("FRAME_CHECKSUM", "crc32c")], &crc32_only),
        "NEG-6"
    );
    let old = ServerOptions {
        checksums: None,
        ..all.clone()
    };
    assert_eq!(
        decide(5, &[("FRAME_CHECKSUM", "crc32c")], &old).unwrap(),
        FrameSettings::default()
    );
    assert_eq!(
        decide(4, &[("FRAME_CHECKSUM", "whatever")], &all).unwrap(),
        FrameSettings::default()
    );
    let repeated = [("COMPRESSION", "lz4"), ("compression", "lz4")];
    assert_eq!(refusal(&repeated, &all), "NEG-9");
    let no_lz4 = ServerOptions {
        lz4: false,
        ..all.clone()
    };
    assert_eq!(refusal(&[("COMPRESSION", "lz4")], &no_lz4), "NEG-2");
}

// NEG-4 / RECV-3: a client that asks an old server for CRC32C anyway gets frames with the bit
// clear, and rejects the first one.
#[test]
fn crc32c_asked_of_old_server_fails_on_first_frame() {
    let mut client = client();
    let mut srv = Connection::server(
        ServerOptions {
            checksums: None,
            ..ServerOptions::default()
        },
        MAX,
        SplitPolicy::SERVER,
    );
    let mut back = startup_answered(&mut client, &mut srv, &[("FRAME_CHECKSUM", "crc32c")]);
    send(
        &mut srv,
        &mut back,
        &envelope_bytes(0x85, 0, 0, Opcode::Event, b"x"),
    );
    assert_eq!(refused(&mut client, &back), "RECV-3");
}

// LIFE-6: nothing between STARTUP and its response, on either side.
#[test]
fn pipelining_after_startup_is_refused() {
    let mut client = client();
    let mut wire = Vec::new();
    send(&mut client, &mut wire, &startup(5, 0, &[]));
    let err = client
        .send(&[&envelope_bytes(5, 0, 2, Opcode::Query, b"q")], &mut wire)
        .unwrap_err();
    assert_eq!(err.rule(), "LIFE-6");
    wire.extend(envelope_bytes(5, 0, 2, Opcode::Query, b"q"));
    assert_eq!(refused(&mut server(), &wire), "LIFE-6");
}

// LIFE-1, LIFE-3: a framed STARTUP is not an envelope; LIFE-7: an unframed one after the switch
// fails the header CRC.
#[test]
fn framing_on_the_wrong_side_of_the_switch() {
    let mut framed = Vec::new();
    cqlframe::encoder::FrameEncoder::new(FrameSettings::default(), SplitPolicy::DRIVERS)
        .write_envelopes([startup(5, 0, &[CQL]).as_slice()], &mut framed);
    assert_eq!(refused(&mut server(), &framed), "LIFE-3");

    let mut client = client();
    send(&mut client, &mut Vec::new(), &startup(5, 0, &[]));
    let mut back = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
    back.extend(envelope_bytes(0x85, 0, 0, Opcode::Event, b"unframed"));
    assert_eq!(refused(&mut client, &back), "RECV-1");
}

// RECV-9: the stream ending inside an unframed envelope is reported, at that envelope's first
// byte; ENV-3: so is an unframed envelope with a negative body length, as soon as its header is in.
#[test]
fn truncated_handshake() {
    let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
    let s = startup(5, 0, &[CQL]);
    for cut in [4, 9, s.len() - 1] {
        let mut srv = server();
        let input = [options.as_slice(), &s[..cut]].concat();
        receive(&mut srv, &input, &mut Seen::default()).unwrap();
        let error = srv.finish().unwrap_err();
        assert_eq!((error.rule(), error.offset), ("RECV-9", 9), "cut at {cut}");
    }
    let mut negative = s.clone();
    negative[5..9].copy_from_slice(&(-1i32).to_be_bytes());
    let mut srv = server();
    let error = receive(
        &mut srv,
        &[options.as_slice(), &negative[..9]].concat(),
        &mut Seen::default(),
    )
    .unwrap_err();
    assert_eq!((error.rule(), error.offset), ("ENV-3", 9));
}

/// The client's STARTUP with `options` received by the server; returns the server's READY
/// (framing starts after it), not yet received by the client.
fn startup_answered(
    client: &mut Connection,
    srv: &mut Connection,
    options: &[(&str, &str)],
) -> Vec<u8> {
    let mut wire = Vec::new();
    send(client, &mut wire, &startup(5, 0, options));
    receive(srv, &wire, &mut Seen::default()).unwrap();
    let mut back = Vec::new();
    send(
        srv,
        &mut back,
        &envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]),
    );
    back
}

/// A server and client framed with defaults after READY; returns the client and server.
fn framed_pair() -> (Connection, Connection) {
    let (mut client, mut srv) = (client(), server());
    let back = startup_answered(&mut client, &mut srv, &[]);
    receive(&mut client, &back, &mut Seen::default()).unwrap();
    (client, srv)
}

/// Frames `envelopes` as the negotiated default settings do, feeds them to `conn`, and returns
/// what it saw.
fn receive_framed(conn: &mut Connection, envelopes: &[Vec<u8>]) -> Seen {
    let mut wire = Vec::new();
    cqlframe::encoder::FrameEncoder::new(FrameSettings::default(), SplitPolicy::DRIVERS)
        .write_envelopes(envelopes.iter().map(Vec::as_slice), &mut wire);
    let mut seen = Seen::default();
    receive(conn, &wire, &mut seen).unwrap();
    seen
}

// ENV-2: a framed envelope of another version or the wrong direction is refused on its own;
// the connection goes on. The server's ERROR is in the connection's version, on the refused
// envelope's stream, so the client takes it.
#[test]
fn framed_envelope_version_is_checked() {
    let (mut client, mut srv) = framed_pair();
    let v4_query = envelope_bytes(4, 0, 2, Opcode::Query, b"q");
    let seen = receive_framed(
        &mut srv,
        &[
            v4_query.clone(),
            envelope_bytes(5, 0, 3, Opcode::Query, b"q"),
        ],
    );
    assert_eq!(seen.rejected, vec!["ENV-2"]);
    assert_eq!(seen.envelopes, vec![(true, Opcode::Query as u8, 1)]);
    let refused = EnvelopeHeader::parse(v4_query[..9].try_into().unwrap());
    let error = cqlframe::FramingError::new(
        ErrorKind::UnexpectedVersion {
            found: 4,
            expected: 5,
        },
        0,
    );
    let answer = srv.reject_response(&refused, &error);
    let mut answered = Vec::new();
    client
        .receive(&answer, |event| {
            if let ConnectionEvent::Envelope(e) = event {
                answered.push((e.header.version, e.header.stream, e.header.opcode));
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(answered, vec![(0x85, 2, Opcode::Error as u8)]);
    let (mut client, _) = framed_pair();
    let seen = receive_framed(
        &mut client,
        &[envelope_bytes(5, 0, 2, Opcode::Result, b"r")],
    );
    assert_eq!(seen.rejected, vec!["ENV-2"]);
}

// ENV-6: a receiver ignores the envelope COMPRESSION flag (the envelope is delivered, its body as
// it is); ENV-4: the reference never sets it (its error responses included).
#[test]
fn envelope_compression_flag_ignored_and_never_sent() {
    let (mut client, mut srv) = framed_pair();
    let seen = receive_framed(&mut srv, &[envelope_bytes(5, 0x01, 2, Opcode::Query, b"q")]);
    assert_eq!(seen.envelopes, vec![(true, Opcode::Query as u8, 1)]);
    let err = cqlframe::FramingError::new(ErrorKind::MissingBetaFlag, 0);
    let answer = srv.reject_response(
        &cqlframe::envelope::EnvelopeHeader {
            version: 5,
            flags: 0,
            stream: 2,
            opcode: 7,
            length: 1,
        },
        &err,
    );
    let mut flags = Vec::new();
    client
        .receive(&answer, |event| {
            if let ConnectionEvent::Envelope(e) = event {
                flags.push(e.header.flags);
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(flags, vec![0]);
}

// LIFE-11: an ERROR in another version, on any stream, refuses the version: no switch, and the
// connection stays unframed.
#[test]
fn version_refusal_does_not_switch() {
    let mut client = client();
    send(&mut client, &mut Vec::new(), &startup(5, 0, &[]));
    let refusal = envelope_bytes(
        0x84,
        0,
        0,
        Opcode::Error,
        &body::error(
            body::PROTOCOL_ERROR,
            "Invalid or unsupported protocol version (5)",
        ),
    );
    let mut seen = Seen::default();
    receive(&mut client, &refusal, &mut seen).unwrap();
    assert_eq!(seen.switched, None);
    assert_eq!(client.negotiated(), None);
    receive(
        &mut client,
        &envelope_bytes(0x84, 0, 0, Opcode::Event, b"e"),
        &mut seen,
    )
    .unwrap();
    assert_eq!(
        seen.envelopes.last(),
        Some(&(false, Opcode::Event as u8, 1))
    );
}

// ERR-1, ERR-3, ERR-4: a server answers a framing error with one framed PROTOCOL_ERROR on
// stream 0 whose message names the rule and offset.
#[test]
fn server_error_response_is_framed_protocol_error() {
    let (mut client, mut srv) = framed_pair();
    let err = receive(&mut srv, &[0xFF; 12], &mut Seen::default()).unwrap_err();
    assert_eq!(err.rule(), "RECV-1");
    let response = srv.error_response(&err);
    let mut seen = Vec::new();
    client
        .receive(&response, |event| {
            if let ConnectionEvent::Envelope(e) = event {
                seen.push((
                    e.header.stream,
                    e.header.opcode,
                    body::read_error(e.body).unwrap(),
                ));
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(seen.len(), 1);
    let (stream, opcode, (code, message)) = &seen[0];
    assert_eq!(
        (*stream, *opcode, *code),
        (0, Opcode::Error as u8, body::PROTOCOL_ERROR)
    );
    assert!(message.contains("RECV-1 at byte"), "{message}");
}

// RECV-11: after an error the connection decodes nothing more, and finishing does not panic
// (found by the handshake fuzz target: bytes left behind by a failed receive).
#[test]
fn nothing_after_an_error_and_finish_is_safe() {
    let mut srv = server();
    assert_eq!(refused(&mut srv, &[0u8; 10]), "LIFE-3");
    assert_eq!(refused(&mut srv, &startup(5, 0, &[])), "RECV-11");
    assert_eq!(srv.finish(), Ok(()));
}

// A request of a version the server does not speak (DSE_V2, as drivers try first) is a version
// probe: refused without a framing error, so the server can answer it and the client retry
// (LIFE-9); a byte that is no version at all before the switch is still LIFE-3.
#[test]
fn version_probes_are_refused_not_errors() {
    let mut srv = server();
    let mut seen = Seen::default();
    receive(
        &mut srv,
        &envelope_bytes(0x42, 0, 0, Opcode::Options, &[]),
        &mut seen,
    )
    .unwrap();
    receive(
        &mut srv,
        &envelope_bytes(0x01, 0, 0, Opcode::Options, &[]),
        &mut seen,
    )
    .unwrap();
    assert_eq!(seen.refused, vec![0x42, 0x01]);
    assert!(seen.envelopes.is_empty());
    assert_eq!(
        refused(
            &mut server(),
            &envelope_bytes(0x1a, 0, 0, Opcode::Options, &[])
        ),
        "LIFE-3"
    );
    // A client does not take a response of such a version for a version probe.
    assert_eq!(
        refused(
            &mut client(),
            &envelope_bytes(0xc2, 0, 0, Opcode::Error, &[])
        ),
        "LIFE-4"
    );
}

// LIFE-14: a v1 or v2 envelope has an 8-byte header with a one-byte stream, on the server's side
// (the probe) and the client's (its refusal in the same version and layout, on any stream); the
// envelope after it is read where it starts. A retired version's response is no probe.
#[test]
fn retired_versions_have_an_8_byte_header() {
    for v in [1u8, 2] {
        let probe = envelope_bytes(v, 0, 7, Opcode::Options, &[]);
        assert_eq!(probe, [v, 0, 7, Opcode::Options as u8, 0, 0, 0, 0]);
        let mut srv = server();
        let mut seen = Seen::default();
        let wire = [probe.clone(), envelope_bytes(5, 0, 1, Opcode::Options, &[])].concat();
        receive(&mut srv, &wire, &mut seen).unwrap();
        assert_eq!(seen.refused, vec![v]);
        assert_eq!(seen.envelopes, vec![(false, Opcode::Options as u8, 0)]);
        assert_eq!(srv.finish(), Ok(()));

        let mut c = client();
        c.await_answer(7, v);
        let mut seen = Seen::default();
        receive(&mut c, &error_on(v | 0x80, 0, 0), &mut seen).unwrap();
        assert_eq!(seen.envelopes, vec![(false, Opcode::Error as u8, 8)]);
        assert_eq!(c.finish(), Ok(()));
        assert_eq!(refused(&mut server(), &error_on(v | 0x80, 0, 0)), "LIFE-3");
    }
}

// A caller's bytes shorter than an envelope header are its bug, not a rule of the wire: send
// panics instead of naming a receiver's RECV-9.
#[test]
#[should_panic(expected = "are not a whole envelope")]
fn sending_less_than_an_envelope_header_is_a_caller_bug() {
    let _ = client().send(&[&[5, 0, 0, 1]], &mut Vec::new());
}

/// An unframed SUPPORTED on `stream`, as a v5 server answers OPTIONS.
fn supported_on(stream: i16) -> Vec<u8> {
    let options = body::string_multimap(&[("COMPRESSION", vec!["lz4"])]);
    envelope_bytes(0x85, 0, stream, Opcode::Supported, &options)
}

/// An unframed PROTOCOL_ERROR with this version byte and flags on `stream`.
fn error_on(version: u8, flags: u8, stream: i16) -> Vec<u8> {
    let error = body::error(body::PROTOCOL_ERROR, "no");
    envelope_bytes(version, flags, stream, Opcode::Error, &error)
}

/// A client that sent a v6-beta OPTIONS on stream 3.
fn asked_v6_options() -> Connection {
    let mut c = client();
    let options = envelope_bytes(6, FLAG_USE_BETA, 3, Opcode::Options, &[]);
    send(&mut c, &mut Vec::new(), &options);
    c
}

// LIFE-13 before STARTUP too: an answer pairs with an OPTIONS sent, once; anything else (an
// answer with nothing asked, a second answer, an EVENT, an ERROR of the request's version on
// another stream) is the server's violation, while the refusal of the OPTIONS's version comes
// on any stream (LIFE-11).
#[test]
fn answers_before_startup_pair_with_requests() {
    let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
    assert_eq!(refused(&mut client(), &supported_on(0)), "LIFE-13");

    let mut c = client();
    send(&mut c, &mut Vec::new(), &options);
    receive(&mut c, &supported_on(0), &mut Seen::default()).unwrap();
    assert_eq!(refused(&mut c, &supported_on(0)), "LIFE-13");

    let mut c = client();
    send(&mut c, &mut Vec::new(), &options);
    let event = envelope_bytes(0x85, 0, -1, Opcode::Event, &[]);
    assert_eq!(refused(&mut c, &event), "LIFE-13");

    let mut c = asked_v6_options();
    receive(&mut c, &error_on(0x85, 0, 0), &mut Seen::default()).unwrap();
    assert_eq!(
        refused(&mut asked_v6_options(), &error_on(0x86, FLAG_USE_BETA, 5)),
        "LIFE-13"
    );
}

// ERR-1, ERR-4, LIFE-13: before the switch a PROTOCOL_ERROR on stream 0 that answers no request
// is the server's report of a framing error in the client's bytes, before STARTUP and while it
// is outstanding (it switches nothing then); an ERROR of another code there answers nothing.
#[test]
fn a_protocol_error_on_stream_0_reports_a_fault_in_the_clients_bytes() {
    let mut c = asked_v6_options();
    receive(
        &mut c,
        &error_on(0x86, FLAG_USE_BETA, 0),
        &mut Seen::default(),
    )
    .unwrap();

    let mut c = client();
    send(&mut c, &mut Vec::new(), &startup(5, 0, &[CQL]));
    receive(&mut c, &error_on(0x85, 0, 0), &mut Seen::default()).unwrap();
    assert_eq!(c.negotiated(), None);

    let server_error = body::error(0x0000, "no");
    let server_error = envelope_bytes(0x86, FLAG_USE_BETA, 0, Opcode::Error, &server_error);
    assert_eq!(refused(&mut asked_v6_options(), &server_error), "LIFE-13");
}

// LIFE-11 while STARTUP is outstanding: only an ERROR in another version than the STARTUP's
// refuses it on any stream. An OPTIONS of another version refused before STARTUP leaves
// nothing behind, so an ERROR in the STARTUP's version on a stream of no request is LIFE-13.
#[test]
fn a_refusal_while_startup_is_outstanding_is_of_the_startups_version() {
    let mut c = asked_v6_options();
    receive(&mut c, &error_on(0x85, 0, 0), &mut Seen::default()).unwrap();
    send(&mut c, &mut Vec::new(), &startup(5, 0, &[CQL]));
    assert_eq!(refused(&mut c, &error_on(0x85, 0, 9)), "LIFE-13");

    let mut c = client();
    send(&mut c, &mut Vec::new(), &startup(5, 0, &[CQL]));
    receive(&mut c, &error_on(0x84, 0, 9), &mut Seen::default()).unwrap();
    assert_eq!(c.negotiated(), None);
}

// A request sent outside the Connection (a version probe) awaits its answer all the same.
#[test]
fn a_request_sent_outside_awaits_its_answer() {
    let mut c = client();
    c.await_answer(4, 5);
    receive(&mut c, &supported_on(4), &mut Seen::default()).unwrap();
    assert_eq!(refused(&mut c, &supported_on(4)), "LIFE-13");
}

// LIFE-3, LIFE-13: two OPTIONS and STARTUP sent without waiting. The answers pair with the
// requests by stream id, in any order; an ERROR answering an OPTIONS switches nothing; only the
// response on the STARTUP's stream switches; an envelope that answers no outstanding request
// is the server's violation.
#[test]
fn handshake_answers_pair_by_stream_id() {
    let request = |stream, opcode, body: &[u8]| envelope_bytes(5, 0, stream, opcode, body);
    let answer = |stream, opcode, body: &[u8]| envelope_bytes(0x85, 0, stream, opcode, body);
    let pipelined = |c: &mut Connection| {
        let mut wire = Vec::new();
        for (stream, opcode) in [(0, Opcode::Options), (1, Opcode::Options)] {
            send(c, &mut wire, &request(stream, opcode, &[]));
        }
        send(
            c,
            &mut wire,
            &request(2, Opcode::Startup, &body::string_map(&[CQL])),
        );
    };
    let supported = body::string_multimap(&[("COMPRESSION", vec!["lz4"])]);
    let options_failed = body::error(body::PROTOCOL_ERROR, "no");

    let mut c = client();
    pipelined(&mut c);
    let mut seen = Seen::default();
    receive(
        &mut c,
        &answer(1, Opcode::Error, &options_failed),
        &mut seen,
    )
    .unwrap();
    receive(&mut c, &answer(0, Opcode::Supported, &supported), &mut seen).unwrap();
    assert_eq!(c.negotiated(), None);
    receive(&mut c, &answer(2, Opcode::Ready, &[]), &mut seen).unwrap();
    assert_eq!(c.negotiated().map(|n| n.version), Some(5));

    for stray in [
        answer(2, Opcode::Supported, &supported),
        answer(7, Opcode::Ready, &[]),
        answer(-1, Opcode::Event, &[]),
    ] {
        let mut c = client();
        pipelined(&mut c);
        assert_eq!(refused(&mut c, &stray), "LIFE-13");
    }
    // A second answer to an OPTIONS already answered.
    let mut c = client();
    pipelined(&mut c);
    let twice = [
        answer(0, Opcode::Supported, &supported),
        answer(0, Opcode::Supported, &supported),
    ]
    .concat();
    assert_eq!(refused(&mut c, &twice), "LIFE-13");
    // The refusal of the version comes on any stream (LIFE-11).
    let mut c = client();
    pipelined(&mut c);
    let refusal = envelope_bytes(0x84, 0, 9, Opcode::Error, &options_failed);
    receive(&mut c, &refusal, &mut Seen::default()).unwrap();
    assert_eq!(c.negotiated(), None);
}

// LIFE-11 on the server's side: sending an ERROR in another version than the STARTUP's refuses
// that version, on whatever stream; nothing is framed, and the client's next STARTUP (v4 here)
// is read as an envelope.
#[test]
fn a_server_that_refuses_the_startups_version_stays_unframed() {
    let mut srv = server();
    receive(&mut srv, &startup(5, 0, &[CQL]), &mut Seen::default()).unwrap();
    let refusal = error_on(0x84, 0, 7);
    srv.send(&[&refusal], &mut Vec::new()).unwrap();
    assert_eq!(srv.negotiated(), None);
    let mut seen = Seen::default();
    receive(&mut srv, &startup(4, 0, &[CQL]), &mut seen).unwrap();
    assert_eq!(seen.envelopes, vec![(false, Opcode::Startup as u8, 22)]);
}

// A server that holds bytes sent after STARTUP (LIFE-12, EarlyBytes::AsFrames) and then refuses
// the STARTUP's version reads them as envelopes at its next receive; if the stream ends first,
// they are not a truncation (found by the handshake fuzz target: finish underflowed).
#[test]
fn bytes_held_before_a_refusal_are_read_unframed() {
    let mut srv = server().with_early_bytes(EarlyBytes::AsFrames);
    let options = envelope_bytes(4, 0, 2, Opcode::Options, &[]);
    let sent = [startup(5, 0, &[CQL]), options.clone()].concat();
    receive(&mut srv, &sent, &mut Seen::default()).unwrap();
    srv.send(&[&error_on(0x84, 0, 1)], &mut Vec::new()).unwrap();
    assert_eq!(srv.finish(), Ok(()));
    let mut seen = Seen::default();
    receive(&mut srv, &[], &mut seen).unwrap();
    assert_eq!(seen.envelopes, vec![(false, Opcode::Options as u8, 0)]);
}
