//! The judge on small connections built here: what each rule's finding looks like, and that a
//! rule is found once per place it is broken.

use super::{Direction, Finding, Judge, Tally};
use crate::verdict::Level;
use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::connection::ServerOptions;
use cqlframe::encoder::{write_raw, FrameEncoder, SplitPolicy};
use cqlframe::envelope::{envelope_bytes, Opcode, FLAG_COMPRESSION};
use cqlframe::format::{Format, FrameSettings};
use cqlframe::header::FrameHeader;

const MAX_BODY: u32 = 256 << 20;
const C2S: Direction = Direction::ClientToServer;
const S2C: Direction = Direction::ServerToClient;

fn startup(options: &[(&str, &str)]) -> Vec<u8> {
    envelope_bytes(5, 0, 1, Opcode::Startup, &body::string_map(options))
}

fn framed(settings: FrameSettings, envelopes: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    FrameEncoder::new(settings, SplitPolicy::DRIVERS)
        .write_envelopes(envelopes.iter().map(Vec::as_slice), &mut out);
    out
}

/// STARTUP with `options`, READY: the judge has switched both directions.
fn switched(judge: &mut Judge, options: &[(&str, &str)]) -> Vec<Finding> {
    let mut found = Vec::new();
    judge.receive(C2S, &startup(options), &mut found);
    judge.receive(
        S2C,
        &envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]),
        &mut found,
    );
    found
}

fn rules(found: &[Finding]) -> Vec<(&'static str, Level, Direction, bool)> {
    found
        .iter()
        .map(|f| (f.rule, f.level, f.direction, f.fatal))
        .collect()
}

/// The client sends one framed OPTIONS (stream 2), uncompressed with CRC32.
fn send_framed_request(judge: &mut Judge, found: &mut Vec<Finding>) {
    let options = envelope_bytes(5, 0, 2, Opcode::Options, &[]);
    judge.receive(C2S, &framed(FrameSettings::default(), &[options]), found);
}

/// An unframed ERROR (PROTOCOL_ERROR) from the server with this version byte, flags and stream.
fn protocol_error(version: u8, flags: u8, stream: i16, message: &str) -> Vec<u8> {
    let body = body::error(body::PROTOCOL_ERROR, message);
    envelope_bytes(version, flags, stream, Opcode::Error, &body)
}

// ENV-4 (SHOULD NOT) per envelope, one tallied entry with the count (JUDGE-9); ENV-6: the
// envelopes are still received.
#[test]
fn compression_flag_is_a_should_finding() {
    let mut judge = Judge::new(MAX_BODY);
    let lz4 = FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32);
    assert!(switched(&mut judge, &[("COMPRESSION", "lz4")]).is_empty());
    let request = |stream| envelope_bytes(5, FLAG_COMPRESSION, stream, Opcode::Options, &[]);
    let mut found = Vec::new();
    judge.receive(C2S, &framed(lz4, &[request(2), request(3)]), &mut found);
    assert_eq!(rules(&found), vec![("ENV-4", Level::Should, C2S, false); 2]);
    assert_eq!(judge.stats(C2S).envelopes, 2);
    let mut tally = Tally::default();
    for f in &found {
        tally.add(f);
    }
    assert_eq!(tally.rules().len(), 1);
    assert_eq!(tally.rules()[0].count, 2);
    assert_eq!(
        (tally.count(Level::Must), tally.count(Level::Should)),
        (0, 2)
    );
}

// NEG-4: FRAME_CHECKSUM=crc32c to a node that did not list it; crc32 is always allowed. JUDGE-7:
// the caller's word of what the node accepts is enough; with nothing known, nothing is judged.
#[test]
fn unlisted_checksum_is_neg4_when_the_node_is_known() {
    let crc32_only = ServerOptions {
        checksums: Some(vec![PayloadChecksum::Crc32]),
        ..ServerOptions::default()
    };
    let mut judge = Judge::for_node(crc32_only.clone(), MAX_BODY);
    let found = switched(&mut judge, &[("FRAME_CHECKSUM", "crc32c")]);
    assert_eq!(
        rules(&found),
        vec![
            ("NEG-4", Level::Must, C2S, false),
            // The server took it all the same.
            ("NEG-6", Level::Must, S2C, false)
        ]
    );
    let mut judge = Judge::for_node(crc32_only, MAX_BODY);
    assert!(switched(&mut judge, &[("FRAME_CHECKSUM", "CRC32")]).is_empty());
    // Nothing known about the node: not judged.
    let mut judge = Judge::new(MAX_BODY);
    assert!(switched(&mut judge, &[("FRAME_CHECKSUM", "crc32c")]).is_empty());
}

/// STARTUP with `options`, answered with `response` (stream 1): what the judge finds.
fn answered(judge: &mut Judge, options: &[(&str, &str)], response: &[u8]) -> Vec<Finding> {
    let mut found = Vec::new();
    judge.receive(C2S, &startup(options), &mut found);
    judge.receive(S2C, response, &mut found);
    found
}

// JUDGE-6, NEG-2, NEG-9: whatever the node, a server that takes a STARTUP with a COMPRESSION other
// than lz4 or a repeated key, or refuses it with an error code other than PROTOCOL_ERROR, breaks
// the rule; a PROTOCOL_ERROR does not, and neither does a version refusal (LIFE-11).
#[test]
fn a_startup_taken_that_must_be_refused_is_the_servers_finding() {
    let ready = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
    let server_error = envelope_bytes(0x85, 0, 1, Opcode::Error, &body::error(0, "no"));
    let refused = protocol_error(0x85, 0, 1, "refused");
    let other_version = protocol_error(0x84, 0, 0, "v5 unsupported");
    let snappy: &[(&str, &str)] = &[("COMPRESSION", "snappy")];
    let repeated: &[(&str, &str)] = &[("COMPRESSION", "lz4"), ("compression", "lz4")];
    for (options, response, want) in [
        (snappy, &ready, Some("NEG-2")),
        (snappy, &server_error, Some("NEG-2")),
        (snappy, &refused, None),
        (snappy, &other_version, None),
        (repeated, &ready, Some("NEG-9")),
        (&[("COMPRESSION", "LZ4")][..], &ready, None),
    ] {
        let found = answered(&mut Judge::new(MAX_BODY), options, response);
        let want: Vec<_> = want
            .map(|r| (r, Level::Must, S2C, false))
            .into_iter()
            .collect();
        assert_eq!(rules(&found), want, "{options:?}");
        if let Some(f) = found.first() {
            assert_eq!(f.offset, 0, "at the response's first byte");
        }
    }
}

// NEG-6 needs what the node accepts (JUDGE-7): a node that listed FRAME_CHECKSUMS (or the caller's
// word); one whose SUPPORTED has no FRAME_CHECKSUMS ignores the key, and without SUPPORTED nothing
// is known.
#[test]
fn an_unaccepted_checksum_taken_is_neg6_when_the_node_is_known() {
    let ready = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
    let xxhash: &[(&str, &str)] = &[("FRAME_CHECKSUM", "xxhash")];
    let supported = |options: &ServerOptions| {
        let listed: Vec<&str> = options
            .checksums
            .iter()
            .flatten()
            .map(|c| c.name())
            .collect();
        let mut map = vec![("COMPRESSION", vec!["lz4"])];
        if options.checksums.is_some() {
            map.push(("FRAME_CHECKSUMS", listed));
        }
        envelope_bytes(0x85, 0, 0, Opcode::Supported, &body::string_multimap(&map))
    };
    let old = ServerOptions {
        checksums: None,
        ..ServerOptions::default()
    };
    for (node, want) in [(ServerOptions::default(), 1), (old, 0)] {
        let mut judge = Judge::new(MAX_BODY);
        let mut found = Vec::new();
        judge.receive(
            C2S,
            &envelope_bytes(5, 0, 0, Opcode::Options, &[]),
            &mut found,
        );
        judge.receive(S2C, &supported(&node), &mut found);
        found.extend(answered(&mut judge, xxhash, &ready));
        let neg6 = rules(&found)
            .iter()
            .filter(|r| *r == &("NEG-6", Level::Must, S2C, false))
            .count();
        assert_eq!(neg6, want, "{node:?}: {found:?}");
    }
    assert!(answered(&mut Judge::new(MAX_BODY), xxhash, &ready).is_empty());
    let found = answered(
        &mut Judge::for_node(ServerOptions::default(), MAX_BODY),
        xxhash,
        &ready,
    );
    let want = [("NEG-4", C2S), ("NEG-6", S2C)].map(|(r, d)| (r, Level::Must, d, false));
    assert_eq!(rules(&found), want);
}

// JUDGE-1, JUDGE-5, JUDGE-8: a receiver's error is reported as the receiver names it, is fatal for
// its direction only (RECV-11), and names the sender's rule behind it.
#[test]
fn a_receiver_error_stops_its_direction() {
    let mut judge = Judge::new(MAX_BODY);
    switched(&mut judge, &[]);
    let mut wire = framed(
        FrameSettings::default(),
        &[envelope_bytes(5, 0, 2, Opcode::Options, &[])],
    );
    let last = wire.len() - 1;
    wire[last] ^= 1;
    let mut found = Vec::new();
    judge.receive(C2S, &wire, &mut found);
    assert_eq!(rules(&found), vec![("RECV-2", Level::Must, C2S, true)]);
    assert_eq!(found[0].broken_by_sender(), "CRC-2");
    assert!(judge.stopped(C2S));
    judge.receive(C2S, &wire, &mut found);
    assert_eq!(found.len(), 1, "nothing is judged after a fatal error");
    assert!(!judge.stopped(S2C));
}

// LIFE-7: an envelope sent unframed after the switch fails the receiver's CRC24 (RECV-1); its
// sender did not frame, not CRC-1: the client broke LIFE-5, the server LIFE-4. A header that
// merely fails its CRC24 stays CRC-1's.
#[test]
fn an_unframed_envelope_after_the_switch_is_the_senders_life4_or_life5() {
    for (d, envelope, sender) in [
        (C2S, envelope_bytes(5, 0, 2, Opcode::Options, &[]), "LIFE-5"),
        (
            S2C,
            envelope_bytes(0x85, 0, -1, Opcode::Event, &[]),
            "LIFE-4",
        ),
    ] {
        let mut judge = Judge::new(MAX_BODY);
        switched(&mut judge, &[]);
        let mut found = Vec::new();
        judge.receive(d, &envelope, &mut found);
        assert_eq!(rules(&found), vec![("RECV-1", Level::Must, d, true)]);
        assert_eq!(found[0].broken_by_sender(), sender);
    }

    let mut judge = Judge::new(MAX_BODY);
    switched(&mut judge, &[]);
    let mut wire = framed(
        FrameSettings::default(),
        &[envelope_bytes(5, 0, 2, Opcode::Options, &[])],
    );
    wire[0] ^= 1;
    let mut found = Vec::new();
    judge.receive(C2S, &wire, &mut found);
    assert_eq!(rules(&found), vec![("RECV-1", Level::Must, C2S, true)]);
    assert_eq!(found[0].broken_by_sender(), "CRC-1");
}

// LIFE-8: after an ERROR to a STARTUP both sides frame uncompressed with CRC32. A frame of what
// the refused STARTUP asked (an LZ4 header, the checksum bit set) fails its receiver's RECV-1 or
// RECV-3, and its sender, of either side, broke LIFE-8; the same frame after a STARTUP that
// asked nothing of the kind, or a merely corrupt one, stays CRC-1's or FMT-13's.
#[test]
fn a_frame_as_the_refused_startup_asked_is_life8() {
    let lz4 = FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32);
    let crc32c = FrameSettings::new(Format::Uncompressed, PayloadChecksum::Crc32c);
    let request = [envelope_bytes(5, 0, 2, Opcode::Options, &[])];
    let answer = [envelope_bytes(0x85, 0, 2, Opcode::Supported, &[0, 0])];
    let corrupt = |mut wire: Vec<u8>| {
        wire[0] ^= 1;
        wire
    };
    for (asked, d, wire, rule, sender) in [
        ("lz4", C2S, framed(lz4, &request), "RECV-1", "LIFE-8"),
        ("lz4", S2C, framed(lz4, &answer), "RECV-1", "LIFE-8"),
        ("crc32c", C2S, framed(crc32c, &request), "RECV-3", "LIFE-8"),
        ("crc32c", S2C, framed(crc32c, &answer), "RECV-3", "LIFE-8"),
        ("none", C2S, framed(lz4, &request), "RECV-1", "CRC-1"),
        ("none", C2S, framed(crc32c, &request), "RECV-3", "FMT-13"),
        (
            "lz4",
            C2S,
            corrupt(framed(lz4, &request)),
            "RECV-1",
            "CRC-1",
        ),
    ] {
        let options: &[(&str, &str)] = match asked {
            "lz4" => &[("COMPRESSION", "lz4")],
            "crc32c" => &[("FRAME_CHECKSUM", "crc32c")],
            _ => &[],
        };
        let mut judge = Judge::new(MAX_BODY);
        let mut found = Vec::new();
        judge.receive(C2S, &startup(options), &mut found);
        judge.receive(
            S2C,
            &protocol_error(0x85, 0, 1, "no CQL_VERSION"),
            &mut found,
        );
        judge.receive(d, &wire, &mut found);
        let what = format!("{asked}, {d:?}");
        assert_eq!(rules(&found), vec![(rule, Level::Must, d, true)], "{what}");
        assert_eq!(found[0].broken_by_sender(), sender, "{what}");
    }
}

// A block that breaks LZ4's end-of-block rules: the receiver's LZ4-6, found against the sender's
// LZ4-5. The envelope (9 + 20 'z's) is a block of 18 literals and a 4-byte match 11 bytes before
// the end.
#[test]
fn an_lz4_block_past_the_end_of_block_limits_is_lz4_5() {
    let mut judge = Judge::new(MAX_BODY);
    switched(&mut judge, &[("COMPRESSION", "lz4")]);
    let envelope = envelope_bytes(0x85, 0, 4, Opcode::Result, &[b'z'; 20]);
    let mut block = vec![0xF0, 3];
    block.extend_from_slice(&envelope[..18]);
    block.extend_from_slice(&[1, 0, 0x70]);
    block.extend_from_slice(&envelope[22..]);
    let settings = FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32);
    let header = FrameHeader::new(Format::Lz4, block.len() as u32, 29, true, false);
    let mut wire = Vec::new();
    write_raw(
        &header,
        &block,
        settings.checksum.compute(&block),
        &mut wire,
    );
    let mut found = Vec::new();
    judge.receive(S2C, &wire, &mut found);
    assert_eq!(rules(&found), vec![("LZ4-6", Level::Must, S2C, true)]);
    assert_eq!(found[0].broken_by_sender(), "LZ4-5");
}

// JUDGE-6: SEND-8 and SEND-7 are sender rules no receiver refuses: a sequence whose first frame
// holds less than the envelope header (and so is not filled either) is decoded all the same, not
// fatally.
#[test]
fn a_short_first_frame_is_send8_not_fatal() {
    let mut judge = Judge::new(MAX_BODY);
    switched(&mut judge, &[]);
    let envelope = envelope_bytes(5, 0, 2, Opcode::Options, &[]);
    let mut wire = Vec::new();
    for piece in [&envelope[..4], &envelope[4..]] {
        let h = FrameHeader::new(Format::Uncompressed, piece.len() as u32, 0, false, false);
        write_raw(&h, piece, PayloadChecksum::Crc32.compute(piece), &mut wire);
    }
    let mut found = Vec::new();
    judge.receive(C2S, &wire, &mut found);
    assert_eq!(
        rules(&found),
        vec![
            ("SEND-8", Level::Must, C2S, false),
            ("SEND-7", Level::Should, C2S, false)
        ]
    );
    assert_eq!(judge.stats(C2S).sequences, 1);
}

// An envelope refused before the switch (ENV-2) is an unframed one: the framed-envelope sender
// rules (ENV-4 among them) do not apply to it.
#[test]
fn a_refused_unframed_envelope_is_not_judged_as_framed() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let response_from_client = envelope_bytes(0x85, FLAG_COMPRESSION, 0, Opcode::Options, &[]);
    judge.receive(C2S, &response_from_client, &mut found);
    assert_eq!(rules(&found), vec![("ENV-2", Level::Must, C2S, false)]);
    assert_eq!(judge.stats(C2S).envelopes, 0);
    assert_eq!(judge.stats(C2S).unframed_envelopes, 1);
}

// LIFE-13, JUDGE-4: a server's response to no request, before READY, is fatal for the server's
// side. The client's side is judged through its STARTUP and then stops: the judge never sees the
// STARTUP response, so the client's framed bytes after READY are not taken for bytes sent before
// it.
#[test]
fn an_unpaired_response_stops_the_client_side_after_its_startup() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    judge.receive(C2S, &startup(&[]), &mut found);
    let unpaired = envelope_bytes(0x85, 0, 0x7ff0, Opcode::Result, &1i32.to_be_bytes());
    judge.receive(S2C, &unpaired, &mut found);
    assert_eq!(rules(&found), vec![("LIFE-13", Level::Must, S2C, true)]);
    judge.receive(
        S2C,
        &envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]),
        &mut found,
    );
    send_framed_request(&mut judge, &mut found);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(judge.stopped(C2S) && judge.stopped(S2C));
}

// JUDGE-4: before its STARTUP the client's side is still judged: a server that answers what was
// never asked leaves the client's OPTIONS and STARTUP judged.
#[test]
fn the_client_side_is_judged_up_to_its_startup_after_the_server_side_stopped() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let unpaired = envelope_bytes(0x85, 0, 0x7ff0, Opcode::Result, &1i32.to_be_bytes());
    judge.receive(S2C, &unpaired, &mut found);
    assert_eq!(rules(&found), vec![("LIFE-13", Level::Must, S2C, true)]);
    let request_with_response_bit = envelope_bytes(0x85, 0, 1, Opcode::Options, &[]);
    judge.receive(C2S, &request_with_response_bit, &mut found);
    assert_eq!(rules(&found[1..]), vec![("ENV-2", Level::Must, C2S, false)]);
    judge.receive(C2S, &startup(&[]), &mut found);
    assert!(!judge.stopped(C2S));
    judge.receive(
        C2S,
        &envelope_bytes(5, 0, 2, Opcode::Options, &[]),
        &mut found,
    );
    assert!(judge.stopped(C2S));
    assert_eq!(found.len(), 2, "{found:#?}");
}

// A version probe (an OPTIONS in DSE's version 0x42, as the Java and Python drivers send first)
// is refused by the server-role side and still awaits its answer on the client-role side: the
// server's refusal (a v5 ERROR on its stream) pairs with it, and the handshake that follows is
// judged to the end.
#[test]
fn a_refused_version_probe_pairs_with_its_refusal() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    judge.receive(
        C2S,
        &envelope_bytes(0x42, 0, 0, Opcode::Options, &[]),
        &mut found,
    );
    let refusal = protocol_error(0x85, 0, 0, "Invalid or unsupported protocol version (66)");
    judge.receive(S2C, &refusal, &mut found);
    found.extend(switched(&mut judge, &[]));
    send_framed_request(&mut judge, &mut found);
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(judge.stats(C2S).envelopes, 1);
}

// A request the server refuses on its own before STARTUP (ENV-5: a v6 STARTUP without USE_BETA,
// as the probe sends) awaits its answer all the same: the server's ERROR on its stream pairs
// with it (LIFE-13), and no switch follows.
#[test]
fn the_answer_to_a_refused_request_pairs_with_it() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let no_beta = envelope_bytes(6, 0, 1, Opcode::Startup, &startup(&[])[9..]);
    judge.receive(C2S, &no_beta, &mut found);
    assert_eq!(rules(&found), vec![("ENV-5", Level::Must, C2S, false)]);
    judge.receive(
        S2C,
        &protocol_error(0x86, 0x10, 1, "USE_BETA flag is unset"),
        &mut found,
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(!judge.stopped(S2C) && judge.negotiated().is_none());
}

// A v4 STARTUP switches nothing: after the server's side stopped (bytes that are no envelope,
// LIFE-4), the client's is judged on.
#[test]
fn a_v4_client_is_judged_on_after_the_server_side_stopped() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    judge.receive(
        C2S,
        &envelope_bytes(4, 0, 1, Opcode::Startup, &startup(&[])[9..]),
        &mut found,
    );
    judge.receive(S2C, &[0xff; 9], &mut found);
    assert!(
        found.iter().all(|f| f.direction == S2C) && judge.stopped(S2C),
        "{found:#?}"
    );
    judge.receive(
        C2S,
        &envelope_bytes(4, 0, 2, Opcode::Options, &[]),
        &mut found,
    );
    assert!(!judge.stopped(C2S));
    assert_eq!(judge.stats(C2S).unframed_envelopes, 2);
}

// ERR-1, ERR-4, LIFE-13: before the switch a server answers a framing error in the client's
// bytes with an ERROR (PROTOCOL_ERROR) on stream 0, which answers no request: it is the
// server's report of the client's fault, not an unpaired response.
#[test]
fn the_error_that_reports_a_client_framing_error_is_not_unpaired() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let mut bytes = envelope_bytes(5, 0, 3, Opcode::Options, &[]);
    bytes.extend_from_slice(&envelope_bytes(0x1a, 0, 4, Opcode::Options, &[]));
    judge.receive(C2S, &bytes, &mut found);
    assert_eq!(rules(&found), vec![("LIFE-3", Level::Must, C2S, true)]);
    judge.receive(
        S2C,
        &envelope_bytes(
            0x85,
            0,
            3,
            Opcode::Supported,
            &body::string_multimap::<&str, &str>(&[]),
        ),
        &mut found,
    );
    judge.receive(
        S2C,
        &protocol_error(0x85, 0, 0, "not an envelope (LIFE-4 at byte 9)"),
        &mut found,
    );
    assert_eq!(found.len(), 1, "{found:#?}");
}

// JUDGE-4: an orphaned client (its server's side stopped before the STARTUP response) is judged
// through the bytes received with its STARTUP: a request written with it was sent before any
// response could come (LIFE-6); the next segment is not judged.
#[test]
fn bytes_written_with_an_orphaned_startup_break_life6() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let unpaired = envelope_bytes(0x85, 0, 0x7ff0, Opcode::Result, &1i32.to_be_bytes());
    judge.receive(S2C, &unpaired, &mut found);
    let pipelined = [startup(&[]), envelope_bytes(5, 0, 2, Opcode::Options, &[])].concat();
    judge.receive(C2S, &pipelined, &mut found);
    assert_eq!(
        rules(&found),
        vec![
            ("LIFE-13", Level::Must, S2C, true),
            ("LIFE-6", Level::Must, C2S, true)
        ]
    );
}

// LIFE-11 for the server's side too: once the server refuses the STARTUP's version, nothing is
// framed, so what the client sends next is read as envelopes (here a frame, which is none:
// LIFE-3), not as bytes sent before a STARTUP response still to come (LIFE-6).
#[test]
fn after_a_refused_startup_version_the_client_is_read_unframed() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    judge.receive(C2S, &startup(&[]), &mut found);
    judge.receive(
        S2C,
        &protocol_error(0x84, 0, 0, "Invalid or unsupported protocol version (5)"),
        &mut found,
    );
    send_framed_request(&mut judge, &mut found);
    assert_eq!(rules(&found), vec![("LIFE-3", Level::Must, C2S, true)]);
}

// Only the STARTUP's response or a refusal ends the wait for it: an ERROR that answers a
// pipelined OPTIONS (its version, its stream) does not, so the READY after it still switches the
// server's side.
#[test]
fn an_error_to_an_options_does_not_end_the_wait_for_the_startup_response() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let options = envelope_bytes(5, 0, 3, Opcode::Options, &[]);
    judge.receive(C2S, &[options, startup(&[])].concat(), &mut found);
    judge.receive(S2C, &protocol_error(0x85, 0, 3, "no"), &mut found);
    judge.receive(
        S2C,
        &envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]),
        &mut found,
    );
    send_framed_request(&mut judge, &mut found);
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(judge.stats(C2S).envelopes, 1);
}

// LIFE-3 allows OPTIONS before STARTUP in the same write; a server that answers SUPPORTED and
// READY in one write switches its sender at READY (LIFE-4), and the client frames after it
// (LIFE-5): its first framed request is no byte sent before the STARTUP response (LIFE-6).
#[test]
fn options_and_startup_answered_in_one_write_switch_at_the_response() {
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
    judge.receive(C2S, &[options, startup(&[])].concat(), &mut found);
    let supported = envelope_bytes(
        0x85,
        0,
        0,
        Opcode::Supported,
        &body::string_multimap(&[("FRAME_CHECKSUMS", vec!["crc32", "crc32c"])]),
    );
    let ready = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
    judge.receive(S2C, &[supported, ready].concat(), &mut found);
    send_framed_request(&mut judge, &mut found);
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(judge.stats(C2S).envelopes, 1);
    assert!(!judge.stopped(C2S));

    // What that SUPPORTED lists judges the READY after it (NEG-6).
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
    let crc32c = startup(&[("FRAME_CHECKSUM", "crc32c")]);
    judge.receive(C2S, &[options, crc32c].concat(), &mut found);
    let crc32_only = envelope_bytes(
        0x85,
        0,
        0,
        Opcode::Supported,
        &body::string_multimap(&[("FRAME_CHECKSUMS", vec!["crc32"])]),
    );
    let ready = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
    judge.receive(S2C, &[crc32_only, ready].concat(), &mut found);
    assert_eq!(rules(&found), vec![("NEG-6", Level::Must, S2C, false)]);
}

/// The ERROR (PROTOCOL_ERROR) with which Apache Cassandra 5.0 refuses a request of protocol
/// version `probe`, in version byte `version`, on stream 0.
fn version_refusal(version: u8, probe: u8) -> Vec<u8> {
    let message = format!(
        "Invalid or unsupported protocol version ({probe}); supported versions are (3/v3, 4/v4, 5/v5, 6/v6-beta)"
    );
    protocol_error(version, 0, 0, &message)
}

// LIFE-14: a version probe breaks no rule. One in a retired version (v1, v2: an 8-byte header
// with a one-byte stream) is refused in its own version and layout, one in a version above the
// server's (v7) in the server's version; the refusal pairs with the probe whatever its stream
// (LIFE-13), and neither side's bytes are misread.
#[test]
fn retired_and_future_version_probes_pair_with_their_refusals() {
    // As measured on Apache Cassandra 5.0.9: the refusal of a v1 STARTUP.
    assert_eq!(
        version_refusal(0x81, 1)[..8],
        [0x81, 0, 0, 0, 0, 0, 0, 0x67]
    );
    for (probe, refusal) in [(1, 0x81), (2, 0x82), (7, 0x85)] {
        for stream in [0, 5] {
            let mut judge = Judge::new(MAX_BODY);
            let mut found = Vec::new();
            let cql = body::string_map(&[("CQL_VERSION", "3.0.0")]);
            let startup = envelope_bytes(probe, 0, stream, Opcode::Startup, &cql);
            judge.receive(C2S, &startup, &mut found);
            judge.receive(S2C, &version_refusal(refusal, probe), &mut found);
            for d in [C2S, S2C] {
                judge.finish(d, &mut found);
                assert_eq!(judge.stats(d).unframed_envelopes, 1, "v{probe} {d:?}");
                assert!(!judge.stopped(d));
            }
            assert!(found.is_empty(), "v{probe} stream {stream}: {found:#?}");
        }
    }
    // A retired envelope with no body is its 8-byte header, whole.
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let options = envelope_bytes(2, 0, 1, Opcode::Options, &[]);
    assert_eq!(options.len(), 8);
    judge.receive(C2S, &options, &mut found);
    judge.finish(C2S, &mut found);
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(judge.stats(C2S).unframed_envelopes, 1);
}

// NEG-4, not FMT-13: a node whose SUPPORTED has no FRAME_CHECKSUMS ignores the key and frames
// CRC32 with the checksum bit clear, as it must; the client that asked CRC32C of it frames CRC32C.
// Each receiver fails the other's first frame (RECV-3), and the client's NEG-4 is behind both.
// A node that lists crc32c and frames CRC32 after READY is the one that broke FMT-13.
#[test]
fn a_checksum_asked_of_a_node_that_ignores_it_is_the_clients_neg4() {
    let event = envelope_bytes(0x85, 0, -1, Opcode::Event, &[]);
    let query = envelope_bytes(5, 0, 2, Opcode::Options, &[]);
    let crc32c = FrameSettings::new(Format::Uncompressed, PayloadChecksum::Crc32c);
    let server_frame = framed(FrameSettings::default(), &[event]);
    let client_frame = framed(crc32c, &[query]);
    for (listed, server_sender) in [(None, "NEG-4"), (Some(vec!["crc32", "crc32c"]), "FMT-13")] {
        let mut judge = Judge::new(MAX_BODY);
        let mut found = Vec::new();
        let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
        judge.receive(C2S, &options, &mut found);
        let map: Vec<(&str, Vec<&str>)> = listed
            .iter()
            .map(|l| ("FRAME_CHECKSUMS", l.clone()))
            .collect();
        let supported = envelope_bytes(0x85, 0, 0, Opcode::Supported, &body::string_multimap(&map));
        judge.receive(S2C, &supported, &mut found);
        found.extend(switched(&mut judge, &[("FRAME_CHECKSUM", "crc32c")]));
        judge.receive(S2C, &server_frame, &mut found);
        judge.receive(C2S, &client_frame, &mut found);
        let recv3: Vec<_> = found
            .iter()
            .filter(|f| f.rule == "RECV-3")
            .map(|f| (f.direction, f.broken_by_sender()))
            .collect();
        let mut want = vec![(S2C, server_sender)];
        if listed.is_none() {
            want.push((C2S, "NEG-4"));
        }
        assert_eq!(recv3, want, "{listed:?}: {found:#?}");
    }
}

// NEG-4 is judged on what the client heard the node list, not on what it accepts: a client of a
// node that accepts CRC32C breaks it by asking for CRC32C before any SUPPORTED of the node, and
// keeps it once one (on this connection or another, Judge::heard) listed crc32c.
#[test]
fn neg4_follows_the_supported_heard_not_what_the_node_accepts() {
    let crc32c: &[(&str, &str)] = &[("FRAME_CHECKSUM", "crc32c")];
    let mut judge = Judge::for_node(ServerOptions::default(), MAX_BODY);
    let found = switched(&mut judge, crc32c);
    assert_eq!(rules(&found), vec![("NEG-4", Level::Must, C2S, false)]);

    let listing = [(
        "FRAME_CHECKSUMS".to_string(),
        vec!["crc32".into(), "crc32c".into()],
    )];
    let mut judge = Judge::for_node(ServerOptions::default(), MAX_BODY);
    judge.heard(&listing);
    assert!(switched(&mut judge, crc32c).is_empty());
}

/// (rule, direction, offset) of each finding, in the order made.
fn placed(found: &[Finding]) -> Vec<(&'static str, Direction, u64)> {
    found
        .iter()
        .map(|f| (f.rule, f.direction, f.offset))
        .collect()
}

// JUDGE-2, JUDGE-3: client bytes that came before the STARTUP response, or together with the
// STARTUP, were written before it (LIFE-6, at the first byte after the STARTUP); the same bytes
// after the response are judged as the client's first frame.
#[test]
fn bytes_before_the_startup_response_break_life6_and_after_it_are_framed() {
    let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
    let supported = envelope_bytes(
        0x85,
        0,
        0,
        Opcode::Supported,
        &body::string_multimap::<&str, &str>(&[]),
    );
    let query = envelope_bytes(5, 0, 2, Opcode::Options, &[]);
    let ready = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
    let after_startup = (options.len() + startup(&[]).len()) as u64;
    let handshake = |judge: &mut Judge, found: &mut Vec<Finding>| {
        judge.receive(C2S, &options, found);
        judge.receive(S2C, &supported, found);
    };

    // Together with the STARTUP (one segment).
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    handshake(&mut judge, &mut found);
    judge.receive(C2S, &[startup(&[]), query.clone()].concat(), &mut found);
    judge.receive(S2C, &ready, &mut found);
    assert_eq!(placed(&found), vec![("LIFE-6", C2S, after_startup)]);

    // Alone, but before the response.
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    handshake(&mut judge, &mut found);
    judge.receive(C2S, &startup(&[]), &mut found);
    judge.receive(C2S, &query, &mut found);
    judge.receive(S2C, &ready, &mut found);
    assert_eq!(placed(&found), vec![("LIFE-6", C2S, after_startup)]);

    // After the response: framed, the client's first frame.
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    handshake(&mut judge, &mut found);
    judge.receive(C2S, &startup(&[]), &mut found);
    judge.receive(S2C, &ready, &mut found);
    send_framed_request(&mut judge, &mut found);
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(judge.stats(C2S).frames, 1);

    // After the response but unframed: the server's header check fails (RECV-1), not LIFE-6.
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    handshake(&mut judge, &mut found);
    judge.receive(C2S, &startup(&[]), &mut found);
    judge.receive(S2C, &ready, &mut found);
    judge.receive(C2S, &query, &mut found);
    assert_eq!(placed(&found), vec![("RECV-1", C2S, after_startup)]);
}

// JUDGE-10: both behaviours LIFE-12 allows a server conform: closing without an answer, or READY
// and a framed ERROR for the bytes it then fails as frames. The judge charges the client with
// LIFE-6 either way and the server with nothing. Likewise (ERR-6) a server may answer a framing
// error before the switch with an unframed ERROR on stream 0 or only close.
#[test]
fn either_conforming_server_behaviour_charges_only_the_client() {
    let pipelined = [startup(&[]), envelope_bytes(5, 0, 2, Opcode::Options, &[])].concat();
    let ready = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
    let error = protocol_error(0x85, 0, 0, "header CRC24 mismatch (RECV-1 at byte 31)");
    let framed_error = framed(FrameSettings::default(), &[error]);
    for server in [Vec::new(), [ready, framed_error].concat()] {
        let mut judge = Judge::new(MAX_BODY);
        let mut found = Vec::new();
        judge.receive(C2S, &pipelined, &mut found);
        if !server.is_empty() {
            judge.receive(S2C, &server, &mut found);
        }
        for d in Direction::BOTH {
            judge.finish(d, &mut found);
        }
        let at = startup(&[]).len() as u64;
        assert_eq!(placed(&found), vec![("LIFE-6", C2S, at)], "{server:02x?}");
    }

    let options = envelope_bytes(5, 0, 3, Opcode::Options, &[]);
    let mut negative = envelope_bytes(5, 0, 1, Opcode::Startup, &[]);
    negative[5..9].copy_from_slice(&(-2i32).to_be_bytes());
    let supported = envelope_bytes(
        0x85,
        0,
        3,
        Opcode::Supported,
        &body::string_multimap::<&str, &str>(&[]),
    );
    let report = protocol_error(
        0x85,
        0,
        0,
        "negative envelope body length (ENV-3 at byte 9)",
    );
    for server in [supported.clone(), [supported, report].concat()] {
        let mut judge = Judge::new(MAX_BODY);
        let mut found = Vec::new();
        judge.receive(
            C2S,
            &[options.clone(), negative.clone()].concat(),
            &mut found,
        );
        judge.receive(S2C, &server, &mut found);
        for d in Direction::BOTH {
            judge.finish(d, &mut found);
        }
        assert_eq!(placed(&found), vec![("ENV-3", C2S, options.len() as u64)]);
    }
}

// JUDGE-7, JUDGE-8, JUDGE-9: with a SUPPORTED of the node before the STARTUP, NEG-4 and NEG-6 are
// judged, not left undecided; the offsets of the handshake findings: NEG-4 at the STARTUP's first
// byte in the client's stream, NEG-6 at the answer's first byte in the server's, found in that
// order.
#[test]
fn handshake_findings_carry_the_offsets_of_their_envelopes() {
    let crc32_only: Vec<(&str, Vec<&str>)> = vec![("FRAME_CHECKSUMS", vec!["crc32"])];
    let supported = envelope_bytes(
        0x85,
        0,
        0,
        Opcode::Supported,
        &body::string_multimap(&crc32_only),
    );
    let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    judge.receive(C2S, &options, &mut found);
    judge.receive(S2C, &supported, &mut found);
    found.extend(switched(&mut judge, &[("FRAME_CHECKSUM", "crc32c")]));
    assert_eq!(
        placed(&found),
        vec![
            ("NEG-4", C2S, options.len() as u64),
            ("NEG-6", S2C, supported.len() as u64)
        ]
    );
    assert!(found
        .iter()
        .all(|f| f.level == Level::Must && f.sender_rule.is_none()));
    assert!(judge.unjudged().is_empty(), "{:?}", judge.unjudged());
}

// JUDGE-8, JUDGE-9: within a sequence, a frame's own rule is found at that frame (SEND-8 at the
// first), and the envelope's rules at the frame that completes it (SEND-7, then ENV-2 and ENV-4
// in the order the judge makes them), each charged to the client.
#[test]
fn envelope_findings_carry_the_offset_of_the_frame_that_completes_them() {
    let mut judge = Judge::new(MAX_BODY);
    switched(&mut judge, &[]);
    let start = startup(&[]).len() as u64;
    let envelope = envelope_bytes(4, FLAG_COMPRESSION, 2, Opcode::Options, &[]);
    let mut wire = Vec::new();
    for piece in [&envelope[..4], &envelope[4..]] {
        let h = FrameHeader::new(Format::Uncompressed, piece.len() as u32, 0, false, false);
        write_raw(&h, piece, PayloadChecksum::Crc32.compute(piece), &mut wire);
    }
    let second = start + 4 + 10;
    let mut found = Vec::new();
    judge.receive(C2S, &wire, &mut found);
    assert_eq!(
        placed(&found),
        vec![
            ("SEND-8", C2S, start),
            ("ENV-2", C2S, second),
            ("SEND-7", C2S, second),
            ("ENV-4", C2S, second)
        ]
    );
    assert!(found.iter().all(|f| !f.fatal), "{found:#?}");
}

// JUDGE-9: one entry per rule, direction and sender rule, with its count and first finding, in
// the order the first findings were made.
#[test]
fn a_tally_keeps_one_entry_per_rule_direction_and_sender_rule() {
    let finding = |rule, sender_rule, direction, offset| Finding {
        rule,
        sender_rule,
        level: Level::Must,
        direction,
        kind: "test",
        message: String::new(),
        offset,
        fatal: false,
    };
    let mut tally = Tally::default();
    let found = [
        finding("ENV-2", None, C2S, 40),
        finding("RECV-1", Some("CRC-1"), S2C, 9),
        finding("ENV-2", None, C2S, 80),
        finding("ENV-2", None, S2C, 20),
        finding("RECV-1", Some("LIFE-4"), S2C, 9),
        finding("ENV-2", None, C2S, 120),
    ];
    let firsts: Vec<bool> = found.iter().map(|f| tally.add(f)).collect();
    assert_eq!(firsts, [true, true, false, true, true, false]);
    let entries: Vec<_> = tally
        .rules()
        .iter()
        .map(|c| {
            (
                c.first.broken_by_sender(),
                c.first.direction,
                c.first.offset,
                c.count,
            )
        })
        .collect();
    assert_eq!(
        entries,
        vec![
            ("ENV-2", C2S, 40, 3),
            ("CRC-1", S2C, 9, 1),
            ("ENV-2", S2C, 20, 1),
            ("LIFE-4", S2C, 9, 1)
        ]
    );
    assert_eq!(tally.count(Level::Must), 6);
}

// JUDGE-11: what the judge cannot decide it says: a FRAME_CHECKSUM other than crc32 asked with
// nothing known of the node (NEG-4, and NEG-6 at the answer), and a v5 STARTUP never answered;
// neither is a finding. A v4 STARTUP unanswered leaves nothing undecided.
#[test]
fn what_cannot_be_judged_is_said_and_is_no_finding() {
    use super::Unjudged;
    let mut judge = Judge::new(MAX_BODY);
    let found = switched(&mut judge, &[("FRAME_CHECKSUM", "crc32c")]);
    assert!(found.is_empty(), "{found:#?}");
    let value = "crc32c".to_string();
    assert_eq!(
        judge.unjudged(),
        vec![
            Unjudged::Checksum {
                rule: "NEG-4",
                offset: 0,
                value: value.clone()
            },
            Unjudged::Checksum {
                rule: "NEG-6",
                offset: 0,
                value
            }
        ]
    );

    let mut judge = Judge::new(MAX_BODY);
    let mut found = Vec::new();
    let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
    judge.receive(C2S, &[options.clone(), startup(&[])].concat(), &mut found);
    for d in Direction::BOTH {
        judge.finish(d, &mut found);
    }
    assert!(found.is_empty(), "{found:#?}");
    let at = options.len() as u64;
    assert_eq!(
        judge.unjudged(),
        vec![Unjudged::StartupUnanswered { offset: at }]
    );
    assert!(judge.unjudged()[0].to_string().contains("never answered"));

    let mut judge = Judge::new(MAX_BODY);
    let v4 = envelope_bytes(4, 0, 1, Opcode::Startup, &startup(&[])[9..]);
    judge.receive(C2S, &v4, &mut found);
    assert!(judge.unjudged().is_empty() && found.is_empty());

    // An ERROR (PROTOCOL_ERROR) is the refusal NEG-6 asks for, and a v4 server ignores the key
    // (NEG-7): NEG-6 is kept whatever the node accepts, and only NEG-4 is left undecided.
    for (version, answer) in [
        (5, protocol_error(0x85, 0, 1, "no CQL_VERSION")),
        (4, envelope_bytes(0x84, 0, 1, Opcode::Ready, &[])),
    ] {
        let mut judge = Judge::new(MAX_BODY);
        let crc32c = &startup(&[("FRAME_CHECKSUM", "crc32c")])[9..];
        judge.receive(
            C2S,
            &envelope_bytes(version, 0, 1, Opcode::Startup, crc32c),
            &mut found,
        );
        judge.receive(S2C, &answer, &mut found);
        let rules: Vec<_> = judge
            .unjudged()
            .iter()
            .map(|u| match u {
                Unjudged::Checksum { rule, .. } => *rule,
                Unjudged::StartupUnanswered { .. } => "unanswered",
            })
            .collect();
        assert_eq!(rules, ["NEG-4"], "v{version}");
        assert!(found.is_empty(), "{found:#?}");
    }
}
