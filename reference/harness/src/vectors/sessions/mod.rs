//! Session cases: both byte streams of a connection from its first byte, for each negotiation,
//! and the handshake violations. Valid sessions are produced by a reference client and server
//! talking; invalid ones are edited by hand where a conforming sender would refuse.

use super::{cql, Case, Group, Input};
use crate::pcap::write::HandshakeWrites;
use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::connection::{requested, Connection, ConnectionEvent, Role, ServerOptions};
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::envelope::{envelope_bytes, Opcode, FLAG_COMPRESSION, FLAG_USE_BETA};
use cqlframe::format::{Format, FrameSettings};

mod script;

pub use script::Session;
use script::*;

/// OPTIONS, SUPPORTED, STARTUP with `startup`, `response`, then queries, one of them with a
/// result that spans several frames. An ERROR refuses the STARTUP for a missing CQL_VERSION
/// (a STARTUP without it is refused whatever it asks of the frame layer).
fn conversation(version: u8, flags: u8, startup: &[(&str, &str)], response: Opcode) -> Session {
    let options = ServerOptions::default();
    let mut s = Script::new(version, flags, options.clone());
    s.request(0, Opcode::Options, &[])
        .response(0, Opcode::Supported, &supported(&options));
    s.request(1, Opcode::Startup, &body::string_map(startup));
    let response_body = match response {
        Opcode::Error => body::error(body::PROTOCOL_ERROR, "STARTUP has no CQL_VERSION"),
        Opcode::Authenticate => body::string("org.apache.cassandra.auth.PasswordAuthenticator"),
        _ => Vec::new(),
    };
    s.response(1, response, &response_body);
    if response == Opcode::Error {
        // Framed from here on with the defaults (LIFE-8): the client asks OPTIONS once more,
        // then closes (LIFE-10).
        s.request(2, Opcode::Options, &[])
            .response(2, Opcode::Supported, &supported(&options));
        return s.session();
    }
    if response == Opcode::Authenticate {
        s.request(
            2,
            Opcode::AuthResponse,
            &cql::bytes_value(b"\0cassandra\0cassandra"),
        )
        .response(2, Opcode::AuthSuccess, &(-1i32).to_be_bytes());
    }
    s.requests(&[
        (
            3,
            Opcode::Query,
            cql::query("SELECT k, v FROM ks.table WHERE k = 'row-000001'", version),
        ),
        (
            4,
            Opcode::Query,
            cql::query("SELECT k, v FROM ks.table", version),
        ),
    ]);
    s.response(3, Opcode::Result, &cql::rows(1, 100)).response(
        4,
        Opcode::Result,
        &cql::rows(600, 700),
    );
    s.session()
}

fn case(
    id: &str,
    description: &str,
    rules: &[&'static str],
    breaks: Option<&'static str>,
    session: Session,
) -> Case {
    Case {
        id: format!("session.{id}"),
        group: Group::Sessions,
        description: description.into(),
        rules: rules.to_vec(),
        breaks,
        input: Input::Session(session),
    }
}

pub fn cases() -> Vec<Case> {
    let cql = ("CQL_VERSION", "3.0.0");
    let base = [
        "LIFE-1", "LIFE-3", "LIFE-4", "LIFE-5", "RECV-4", "RECV-6", "SEND-3",
    ];
    let with = |extra: &[&'static str]| [&base[..], extra].concat();
    let mut all = vec![
        case(
            "v4",
            "Protocol v4: no framing ever, a 420 KB result unframed.",
            &["LIFE-2", "NEG-7"],
            None,
            conversation(4, 0, &[cql, ("FRAME_CHECKSUM", "crc32c")], Opcode::Ready),
        ),
        case(
            "v5",
            "Protocol v5 without options: uncompressed frames, CRC32.",
            &with(&["NEG-1", "NEG-5", "CRC-2", "NEG-3"]),
            None,
            conversation(5, 0, &[cql], Opcode::Ready),
        ),
        case(
            "v5-lz4",
            "Protocol v5 with COMPRESSION=lz4.",
            &with(&["NEG-1", "LZ4-1", "LZ4-3"]),
            None,
            conversation(5, 0, &[cql, ("COMPRESSION", "lz4")], Opcode::Ready),
        ),
        case(
            "v5-crc32c",
            "CRC32C opted into after SUPPORTED listed it.",
            &with(&[
                "NEG-3", "NEG-4", "NEG-5", "FMT-5", "FMT-13", "CRC-3", "NEG-8",
            ]),
            None,
            conversation(5, 0, &[cql, ("FRAME_CHECKSUM", "crc32c")], Opcode::Ready),
        ),
        case(
            "v5-crc32c-lz4",
            "CRC32C and LZ4 together.",
            &with(&["NEG-1", "NEG-5", "FMT-9", "FMT-13", "CRC-3", "CRC-4"]),
            None,
            conversation(
                5,
                0,
                &[cql, ("COMPRESSION", "LZ4"), ("FRAME_CHECKSUM", "CRC32C")],
                Opcode::Ready,
            ),
        ),
        case(
            "v6-beta",
            "Protocol v6-beta with USE_BETA on every envelope: framed as v5.",
            &with(&["ENV-5", "LIFE-2"]),
            None,
            conversation(
                6,
                FLAG_USE_BETA,
                &[cql, ("FRAME_CHECKSUM", "crc32c")],
                Opcode::Ready,
            ),
        ),
        case(
            "v5-authenticate",
            "AUTHENTICATE answers STARTUP: framing starts there; AUTH_RESPONSE is framed.",
            &with(&[]),
            None,
            conversation(5, 0, &[cql, ("COMPRESSION", "lz4")], Opcode::Authenticate),
        ),
        case(
            "v5-version-refused",
            "A server without v5 answers the v5 STARTUP with ERROR in v4 on stream 0: no switch; the client retries with v4 on a new connection.",
            &["LIFE-11", "LIFE-9", "LIFE-2"],
            None,
            version_refused(5, 1, 0x84, PRE_V5_VERSIONS),
        ),
        case(
            "v1-refused",
            "A version probe in the retired v1, whose envelope header has 8 bytes (a one-byte stream): the server refuses the STARTUP (on stream 0) with an ERROR in v1, in the same 8-byte layout, on the request's stream, as Apache Cassandra 5.0.9 answers (81 00 00 00 00 00 00 67); no rule is broken and no switch follows.",
            &["LIFE-14", "LIFE-13", "LIFE-9"],
            None,
            version_refused(1, 0, 0x81, CURRENT_VERSIONS),
        ),
        case(
            "v2-refused",
            "A version probe in the retired v2 on stream 3 (8-byte header): the server refuses it with an ERROR in v2, 8-byte header, on stream 0, which answers the probe whatever its stream (Apache Cassandra 5.0.9 answers on the request's stream, 82 00 03 ...; either is allowed); no rule is broken and no switch follows.",
            &["LIFE-14", "LIFE-13", "LIFE-9"],
            None,
            version_refused(2, 3, 0x82, CURRENT_VERSIONS),
        ),
        case(
            "v7-refused",
            "A version probe in v7, a version above those the server speaks: the server refuses the STARTUP with an ERROR in its current version (v5, 0x85) on stream 0, as Apache Cassandra 5.0 does; no rule is broken and no switch follows.",
            &["LIFE-14", "LIFE-13", "LIFE-11", "LIFE-9"],
            None,
            version_refused(7, 1, 0x85, CURRENT_VERSIONS),
        ),
        case(
            "v5-startup-error",
            "ERROR answers a STARTUP that asks for LZ4 and CRC32C, both listed by the server, but has no CQL_VERSION: both sides then frame uncompressed with CRC32, not as the STARTUP asked.",
            &with(&["LIFE-8"]),
            None,
            conversation(
                5,
                0,
                &[("COMPRESSION", "lz4"), ("FRAME_CHECKSUM", "crc32c")],
                Opcode::Error,
            ),
        ),
    ];
    all.push(case(
        "pipelined-options",
        "Two OPTIONS and the STARTUP written together without waiting (LIFE-3): the answers pair with the requests by stream id, and only READY on the STARTUP's stream switches.",
        &with(&["LIFE-13", "NEG-1", "LZ4-1"]),
        None,
        pipelined_options(2, &[cql, ("COMPRESSION", "lz4")]),
    ));
    all.push(case(
        "pipelined-options-startup",
        "OPTIONS and STARTUP in one write (LIFE-3), SUPPORTED and READY in one write, then the first QUERY framed in a later write: the server switches at READY (LIFE-4), the client frames after it (LIFE-5), and no byte was sent between STARTUP and READY (LIFE-6).",
        &with(&["LIFE-6", "LIFE-13"]),
        None,
        pipelined_options(1, &[cql]),
    ));
    all.push(case(
        "lz4-compression-flag",
        "Protocol v5 with LZ4; after the switch the client sets the envelope COMPRESSION flag on its requests, as the Java driver 4.x does: a SHOULD NOT for the sender (ENV-4), ignored by the server, which reads the bodies as they are (ENV-6).",
        &with(&["NEG-1", "LZ4-1", "ENV-4", "ENV-6"]),
        None,
        compression_flag_after_switch(),
    ));
    all.push(case(
        "crc32c-asked-without-supported",
        "The client asks for CRC32C in a STARTUP sent without OPTIONS, and the server, which accepts it, answers READY: both frame with CRC32C. Whoever judges the capture has seen no SUPPORTED of the node, so it can judge neither whether the client was told crc32c (NEG-4) nor whether the server accepts it (NEG-6), and says so (JUDGE-11): at the STARTUP and at READY.",
        &with(&["NEG-4", "NEG-6", "JUDGE-7", "JUDGE-11"]),
        None,
        without_supported(Opcode::Ready),
    ));
    all.push(case(
        "crc32c-refused-without-supported",
        "The client asks for CRC32C in a STARTUP sent without OPTIONS and without CQL_VERSION, and the server refuses it with ERROR (PROTOCOL_ERROR): both frame uncompressed with CRC32 (LIFE-8). With no SUPPORTED seen, NEG-4 cannot be judged (JUDGE-11); NEG-6 can, since the refusal is what it asks for whatever the node accepts.",
        &with(&["NEG-4", "NEG-6", "LIFE-8", "JUDGE-11"]),
        None,
        without_supported(Opcode::Error),
    ));
    all.extend(violations());
    all
}

/// A STARTUP asking for CRC32C, sent with no OPTIONS before it, answered with `response`
/// (READY, or an ERROR refusing it for a missing CQL_VERSION), then one request and its
/// answer, framed as the answer decided.
fn without_supported(response: Opcode) -> Session {
    let mut s = Script::new(5, 0, ServerOptions::default());
    let (startup, answer) = match response {
        Opcode::Error => (
            vec![("FRAME_CHECKSUM", "crc32c")],
            body::error(body::PROTOCOL_ERROR, "STARTUP has no CQL_VERSION"),
        ),
        _ => (
            vec![("CQL_VERSION", "3.0.0"), ("FRAME_CHECKSUM", "crc32c")],
            Vec::new(),
        ),
    };
    s.request(1, Opcode::Startup, &body::string_map(&startup))
        .response(1, response, &answer);
    s.request(2, Opcode::Options, &[]).response(
        2,
        Opcode::Supported,
        &supported(&ServerOptions::default()),
    );
    s.session()
}

/// `count` OPTIONS on streams 0.. and STARTUP with `startup` on the next stream in one write;
/// the server answers each on its stream, in one write, then a QUERY and its RESULT.
fn pipelined_options(count: i16, startup: &[(&str, &str)]) -> Session {
    let options = ServerOptions::default();
    let mut s = Script::new(5, 0, options.clone());
    let mut requests: Vec<_> = (0..count)
        .map(|stream| (stream, Opcode::Options, Vec::new()))
        .collect();
    requests.push((count, Opcode::Startup, body::string_map(startup)));
    s.requests(&requests);
    for stream in 0..count {
        s.response(stream, Opcode::Supported, &supported(&options));
    }
    s.response(count, Opcode::Ready, &[]);
    let query = count + 1;
    s.request(
        query,
        Opcode::Query,
        &cql::query("SELECT k, v FROM ks.table", 5),
    )
    .response(query, Opcode::Result, &cql::rows(3, 100));
    Session {
        handshake_writes: HandshakeWrites::Together,
        ..s.session()
    }
}

/// The Java driver's LZ4 connection: READY, then requests carrying the envelope COMPRESSION
/// flag, their bodies not compressed at the envelope level.
fn compression_flag_after_switch() -> Session {
    let options = ServerOptions::default();
    let mut s = Script::new(5, 0, options.clone());
    s.request(0, Opcode::Options, &[])
        .response(0, Opcode::Supported, &supported(&options));
    s.request(
        1,
        Opcode::Startup,
        &body::string_map(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "lz4")]),
    )
    .response(1, Opcode::Ready, &[]);
    s.flags = FLAG_COMPRESSION;
    s.requests(&[
        (2, Opcode::Options, Vec::new()),
        (3, Opcode::Query, cql::query("SELECT k, v FROM ks.table", 5)),
    ]);
    s.flags = 0;
    s.response(2, Opcode::Supported, &supported(&options))
        .response(3, Opcode::Result, &cql::rows(3, 100));
    s.session()
}

/// A STARTUP of protocol `version` on `stream`, refused by a server that speaks `versions` with
/// an ERROR (PROTOCOL_ERROR) in version byte `answer` on stream 0, as Apache Cassandra words it
/// (LIFE-11, LIFE-14). Envelopes of the retired v1 and v2 have their 8-byte header.
fn version_refused(
    version: u8,
    stream: i16,
    answer: u8,
    versions: &'static [&'static str],
) -> Session {
    let startup = envelope_bytes(
        version,
        0,
        stream,
        Opcode::Startup,
        &body::string_map(&[("CQL_VERSION", "3.0.0")]),
    );
    let refusal = envelope_bytes(
        answer,
        0,
        0,
        Opcode::Error,
        &body::error(
            body::PROTOCOL_ERROR,
            &format!(
                "Invalid or unsupported protocol version ({version}); supported versions are ({})",
                versions.join(", ")
            ),
        ),
    );
    Session {
        server_responds_after: startup.len(),
        client_switch: None,
        server_switch: None,
        client: startup,
        server: refusal,
        server_options: ServerOptions::default(),
        server_versions: versions,
        handshake_writes: HandshakeWrites::LockStep,
    }
}

/// Handshake violations, written by hand where the reference ends refuse to.
fn violations() -> Vec<Case> {
    let cql = ("CQL_VERSION", "3.0.0");
    let snappy: &[(&str, &str)] = &[cql, ("COMPRESSION", "snappy")];
    let ready = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
    let event = envelope_bytes(
        0x85,
        0,
        -1,
        Opcode::Event,
        &body::topology_change(
            "NEW_NODE",
            std::net::SocketAddrV4::new([10, 0, 0, 7].into(), 9042),
        ),
    );
    let plain =
        |client: Vec<u8>, server: Vec<u8>, client_switch, server_switch, responds_after| Session {
            client,
            server,
            client_switch,
            server_switch,
            server_responds_after: responds_after,
            server_options: ServerOptions::default(),
            server_versions: CURRENT_VERSIONS,
            handshake_writes: HandshakeWrites::LockStep,
        };
    let framed = |settings: FrameSettings, envelope: &[u8]| {
        let mut out = Vec::new();
        FrameEncoder::new(settings, SplitPolicy::DRIVERS).write_envelopes([envelope], &mut out);
        out
    };

    let framed_startup = framed(
        FrameSettings::default(),
        &startup(&[("CQL_VERSION", "3.0.0")]),
    );
    let good_startup = startup(&[("CQL_VERSION", "3.0.0")]);
    let after_switch = [ready.clone(), event.clone()].concat();
    let pipelined = [
        good_startup.clone(),
        envelope_bytes(5, 0, 2, Opcode::Query, &cql::query("SELECT 1", 5)),
    ]
    .concat();
    let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
    let crc32c_startup = startup(&[("CQL_VERSION", "3.0.0"), ("FRAME_CHECKSUM", "crc32c")]);
    // A server that predates FRAME_CHECKSUM: its SUPPORTED lists none, it frames with CRC32.
    let old_options = ServerOptions {
        checksums: None,
        ..ServerOptions::default()
    };
    let old_supported = envelope_bytes(0x85, 0, 0, Opcode::Supported, &supported(&old_options));
    let old_server = [
        old_supported.clone(),
        ready.clone(),
        framed(FrameSettings::default(), &event),
    ]
    .concat();
    let asked_of_old_switch = options.len() + crc32c_startup.len();
    let asked_of_old = [
        options.clone(),
        crc32c_startup.clone(),
        framed(
            FrameSettings::new(Format::Uncompressed, PayloadChecksum::Crc32c),
            &envelope_bytes(5, 0, 2, Opcode::Query, &cql::query("SELECT 1", 5)),
        ),
    ]
    .concat();
    let n = good_startup.len();
    let supported_answer = envelope_bytes(
        0x85,
        0,
        0,
        Opcode::Supported,
        &supported(&ServerOptions::default()),
    );
    let mut negative = envelope_bytes(5, 0, 1, Opcode::Startup, &[]);
    negative[5..9].copy_from_slice(&(-2i32).to_be_bytes());
    let negative_length = [options.as_slice(), &negative].concat();
    let truncated = [options.as_slice(), &good_startup[..good_startup.len() - 4]].concat();
    vec![
        case("framed-startup", "The client frames its STARTUP: the server finds no envelope.", &["LIFE-1", "LIFE-3"], Some("LIFE-3"),
            plain(framed_startup.clone(), Vec::new(), None, None, framed_startup.len())),
        case("unframed-after-switch", "The server sends READY, then an unframed EVENT: the client's first frame header fails its CRC24.", &["LIFE-7", "LIFE-4", "RECV-1"], Some("RECV-1"),
            plain(good_startup.clone(), after_switch, Some(n), Some(ready.len()), n)),
        case("client-unframed-after-switch", "The server answers STARTUP with READY; the client then sends an unframed OPTIONS: the server's first frame header fails its CRC24, and the client, which must frame after READY, broke LIFE-5.", &["LIFE-7", "LIFE-5", "RECV-1"], Some("RECV-1"),
            plain([good_startup.clone(), options.clone()].concat(), ready.clone(), Some(n), Some(ready.len()), n)),
        case("pipelined-after-startup", "The client sends a QUERY right after STARTUP, before the response: a server either detects it and stops (LIFE-12, reporting LIFE-6), or writes READY and parses the QUERY as a frame, which fails RECV-1; the manifest lists both outcomes.", &["LIFE-6", "LIFE-12", "RECV-1"], Some("LIFE-6"),
            plain(pipelined.clone(), ready.clone(), Some(n), Some(ready.len()), pipelined.len())),
        case("crc32c-asked-of-old-server", "The client asks for CRC32C though the server's SUPPORTED did not list it (it has no FRAME_CHECKSUMS); the old server ignores the key and frames with CRC32: each side rejects the other's first frame.", &["NEG-4", "RECV-3", "FMT-13"], Some("RECV-3"),
            Session { server_options: old_options.clone(), ..plain(asked_of_old.clone(), old_server, Some(asked_of_old_switch), Some(old_supported.len() + ready.len()), asked_of_old_switch) }),
        case("unpaired-before-startup", "Before STARTUP the server answers the client's one OPTIONS twice: the second SUPPORTED answers no outstanding request, and the client stops (LIFE-13, at its first byte).", &["LIFE-13", "LIFE-3"], Some("LIFE-13"),
            plain(options.clone(), [supported_answer.clone(), supported_answer.clone()].concat(), None, None, options.len())),
        case("unpaired-server-error-before-startup", "Before STARTUP the server answers the client's one OPTIONS, then sends an ERROR of code SERVER_ERROR on stream 0: only a PROTOCOL_ERROR there reports a framing error in the client's bytes (ERR-4), so this one answers no request, and the client stops (LIFE-13, at the ERROR's first byte).", &["LIFE-13", "ERR-4"], Some("LIFE-13"),
            plain(options.clone(), [supported_answer.clone(), envelope_bytes(0x85, 0, 0, Opcode::Error, &body::error(0x0000, "stray"))].concat(), None, None, options.len())),
        case("pipelined-after-orphaned-startup", "The server answers the client's one OPTIONS twice (LIFE-13), so where it would switch is never known; the client, unaware, then writes STARTUP and a QUERY in one segment: the QUERY was sent before any STARTUP response could come (LIFE-6). Whoever judges both directions judges the client through that segment and stops there.", &["LIFE-13", "LIFE-6", "LIFE-12"], Some("LIFE-6"),
            plain([options.as_slice(), &pipelined].concat(), [supported_answer.clone(), supported_answer.clone()].concat(), None, None, options.len())),
        case("unframed-negative-length", "Before the switch the client sends OPTIONS, then an envelope header with body length -2: the server cannot find the next envelope and stops (ENV-3, at the envelope's first byte). It answers the OPTIONS, then reports the fault with an ERROR (PROTOCOL_ERROR) on stream 0, which answers no request and is no unpaired response (ERR-1, ERR-4, LIFE-13).", &["LIFE-1", "ENV-3", "ERR-1", "ERR-4", "LIFE-13"], Some("ENV-3"),
            plain(negative_length.clone(), [supported_answer.clone(), fault_report(&negative_length)].concat(), None, None, negative_length.len())),
        case("unframed-truncated", "Before the switch the client sends OPTIONS, then the stream ends inside a STARTUP: a truncation (RECV-9, at the STARTUP's first byte).", &["LIFE-1", "RECV-9"], Some("RECV-9"),
            plain(truncated.clone(), supported_answer, None, None, truncated.len())),
        case("server-takes-snappy", "The client asks COMPRESSION=snappy on v5 and the server answers READY, then frames uncompressed with CRC32, where it must refuse the STARTUP with ERROR (PROTOCOL_ERROR). Both ends frame alike, so no receiver sees a fault: whoever judges the handshake does.", &["NEG-2"], Some("NEG-2"),
            Taken { options: snappy, response: ready.clone(), event: Some(&event), node: None }.session()),
        case("server-refuses-snappy-with-server-error", "The client asks COMPRESSION=snappy on v5 and the server refuses the STARTUP with an ERROR of code SERVER_ERROR, where NEG-2 asks PROTOCOL_ERROR. Both ends then switch to uncompressed frames with CRC32 (LIFE-8).", &["NEG-2", "LIFE-8"], Some("NEG-2"),
            Taken { options: snappy, response: envelope_bytes(0x85, 0, 1, Opcode::Error, &body::error(0x0000, "snappy is not supported")), event: None, node: None }.session()),
        case("server-takes-repeated-key", "The client's STARTUP carries FRAME_CHECKSUM twice (FRAME_CHECKSUM and frame_checksum, both crc32) and the server answers READY, as Apache Cassandra does, where it must refuse it (NEG-9).", &["NEG-9"], Some("NEG-9"),
            Taken { options: &[cql, ("FRAME_CHECKSUM", "crc32"), ("frame_checksum", "crc32")], response: ready.clone(), event: Some(&event), node: None }.session()),
        case("server-takes-unlisted-checksum", "The node's SUPPORTED lists FRAME_CHECKSUMS crc32 only; the client asks for CRC32C all the same (NEG-4), and the server answers READY and frames with CRC32C, where it must refuse the STARTUP (NEG-6).", &["NEG-4", "NEG-6", "NEG-3"], Some("NEG-4"),
            Taken { options: &[cql, ("FRAME_CHECKSUM", "crc32c")], response: ready.clone(), event: Some(&event), node: Some(ServerOptions { checksums: Some(vec![PayloadChecksum::Crc32]), ..ServerOptions::default() }) }.session()),
        case("client-frames-lz4-after-startup-error", "The client asks COMPRESSION=lz4 in a STARTUP without CQL_VERSION; the server refuses it with ERROR, after which both sides frame uncompressed with CRC32 (LIFE-8). The client frames its next OPTIONS with LZ4 all the same: the server's receiver fails the header's CRC24 (RECV-1), which verifies as an LZ4 header, so the client broke LIFE-8 rather than CRC-1. The server reports it with a framed ERROR and closes (ERR-1).", &["LIFE-8", "RECV-1", "ERR-1"], Some("RECV-1"),
            framed_after_startup_error(Role::Client)),
        case("server-frames-lz4-after-startup-error", "The client asks COMPRESSION=lz4 in a STARTUP without CQL_VERSION; the server refuses it with ERROR, then, as Apache Cassandra does, answers the client's next OPTIONS, framed uncompressed with CRC32 as LIFE-8 asks, with a SUPPORTED framed with LZ4: the client's receiver fails the header's CRC24 (RECV-1), which verifies as an LZ4 header, so the server broke LIFE-8 rather than CRC-1.", &["LIFE-8", "RECV-1"], Some("RECV-1"),
            framed_after_startup_error(Role::Server)),
        case("wrong-version-envelope", "After the switch the client sends a v4 QUERY inside a v5 frame, then a proper v5 QUERY: the server refuses the first on its own (a v5 ERROR on its stream) and answers the second; the connection goes on.", &["ENV-2"], None,
            wrong_version_envelope(&good_startup, &ready)),
    ]
}

/// A v5 STARTUP with `options`, on stream 1.
fn startup(options: &[(&str, &str)]) -> Vec<u8> {
    envelope_bytes(5, 0, 1, Opcode::Startup, &body::string_map(options))
}

/// A server that answers a STARTUP with `options` with `response` (then `event`, framed as the
/// client asked, if given), where it must refuse that STARTUP with ERROR (PROTOCOL_ERROR).
/// With `node`, the client first asks OPTIONS of a node that accepts that, and it answers.
struct Taken<'a> {
    options: &'a [(&'a str, &'a str)],
    response: Vec<u8>,
    event: Option<&'a [u8]>,
    node: Option<ServerOptions>,
}

impl Taken<'_> {
    fn session(self) -> Session {
        let startup = startup(self.options);
        let (mut client, mut server) = (Vec::new(), Vec::new());
        if let Some(node) = &self.node {
            client = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
            server = envelope_bytes(0x85, 0, 0, Opcode::Supported, &supported(node));
        }
        client.extend_from_slice(&startup);
        server.extend_from_slice(&self.response);
        let switch = server.len();
        if let Some(event) = self.event {
            let options: Vec<(String, String)> = self
                .options
                .iter()
                .map(|&(k, v)| (k.into(), v.into()))
                .collect();
            FrameEncoder::new(requested(&options), SplitPolicy::SERVER)
                .write_envelopes([event], &mut server);
        }
        Session {
            client_switch: Some(client.len()),
            server_switch: Some(switch),
            server_responds_after: client.len(),
            server_options: self.node.unwrap_or_default(),
            server_versions: CURRENT_VERSIONS,
            handshake_writes: HandshakeWrites::LockStep,
            client,
            server,
        }
    }
}

/// What the reference server writes after the framing error in `client`: its ERROR
/// (PROTOCOL_ERROR, stream 0) naming the rule and offset (ERR-1, ERR-4).
fn fault_report(client: &[u8]) -> Vec<u8> {
    let mut server = Connection::server(ServerOptions::default(), MAX_BODY, SplitPolicy::SERVER);
    let error = server
        .receive(client, |_| Ok(()))
        .expect_err("the client's bytes hold a framing error");
    server.error_response(&error)
}

/// A STARTUP asking for LZ4 refused with ERROR (no CQL_VERSION), after which `framing_lz4` frames
/// with LZ4 as if it had been taken, where both sides frame uncompressed with CRC32 (LIFE-8): the
/// client its OPTIONS, which the reference server fails and reports (ERR-1); or the server its
/// SUPPORTED answering the client's OPTIONS, framed as it must be.
fn framed_after_startup_error(framing_lz4: Role) -> Session {
    let startup = startup(&[("COMPRESSION", "lz4")]);
    let error = envelope_bytes(
        0x85,
        0,
        1,
        Opcode::Error,
        &body::error(body::PROTOCOL_ERROR, "STARTUP has no CQL_VERSION"),
    );
    let lz4 = FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32);
    let settings = |role| match role == framing_lz4 {
        true => lz4,
        false => FrameSettings::default(),
    };
    let frame = |role, envelope: &[u8]| {
        let mut out = Vec::new();
        FrameEncoder::new(settings(role), SplitPolicy::DRIVERS)
            .write_envelopes([envelope], &mut out);
        out
    };
    let options = frame(Role::Client, &envelope_bytes(5, 0, 2, Opcode::Options, &[]));
    let client = [startup.as_slice(), &options].concat();
    let answer = match framing_lz4 {
        Role::Client => {
            let mut server =
                Connection::server(ServerOptions::default(), MAX_BODY, SplitPolicy::SERVER);
            server
                .receive(&startup, |_| Ok(()))
                .expect("reference server receives the STARTUP");
            server.send(&[&error], &mut Vec::new()).expect("ERROR sent");
            let fault = server
                .receive(&options, |_| Ok(()))
                .expect_err("the LZ4 frame fails the server's header check");
            server.error_response(&fault)
        }
        Role::Server => frame(
            Role::Server,
            &envelope_bytes(
                0x85,
                0,
                2,
                Opcode::Supported,
                &supported(&ServerOptions::default()),
            ),
        ),
    };
    Session {
        server_responds_after: startup.len(),
        client_switch: Some(startup.len()),
        server_switch: Some(error.len()),
        client,
        server: [error, answer].concat(),
        server_options: ServerOptions::default(),
        server_versions: CURRENT_VERSIONS,
        handshake_writes: HandshakeWrites::LockStep,
    }
}

/// A v4 QUERY and a v5 QUERY in one frame after the switch; the reference server refuses the
/// first (ENV-2) with its ERROR response and answers the second.
fn wrong_version_envelope(startup: &[u8], ready: &[u8]) -> Session {
    let mut client = startup.to_vec();
    FrameEncoder::new(FrameSettings::default(), SplitPolicy::DRIVERS).write_envelopes(
        [
            envelope_bytes(4, 0, 2, Opcode::Query, &cql::query("SELECT 1", 4)).as_slice(),
            envelope_bytes(5, 0, 3, Opcode::Query, &cql::query("SELECT 1", 5)).as_slice(),
        ],
        &mut client,
    );
    let options = ServerOptions::default();
    let mut server = Connection::server(options.clone(), MAX_BODY, SplitPolicy::SERVER);
    let mut wire = Vec::new();
    server
        .receive(startup, |_| Ok(()))
        .expect("reference server accepts STARTUP");
    server.send(&[ready], &mut wire).expect("READY sent");
    let mut refused = Vec::new();
    server
        .receive(&client[startup.len()..], |event| {
            if let ConnectionEvent::Rejected { envelope, error } = event {
                refused.push((envelope.header, error));
            }
            Ok(())
        })
        .expect("refusing an envelope is no framing error");
    for (header, error) in &refused {
        wire.extend(server.reject_response(header, error));
    }
    let result = envelope_bytes(0x85, 0, 3, Opcode::Result, &cql::rows(1, 8));
    server.send(&[&result], &mut wire).expect("RESULT sent");
    Session {
        server_responds_after: startup.len(),
        client_switch: Some(startup.len()),
        server_switch: Some(ready.len()),
        client,
        server: wire,
        server_options: options,
        server_versions: CURRENT_VERSIONS,
        handshake_writes: HandshakeWrites::LockStep,
    }
}
