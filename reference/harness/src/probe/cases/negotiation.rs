//! Negotiation: compression and payload checksums asked for in STARTUP, and what the server
//! does with options it does not list.

use super::injection::judge_fault;
use super::steps::{
    connect, expect_result, needs_crc32c, needs_lz4, ready, ready_v5, supported_ok, Ctx, Evidence,
    CQL, LZ4, MUST,
};
use crate::probe::client::query_body;
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::envelope::{opcode_name, Opcode};
use cqlframe::format::FrameSettings;

cases!(
    startup_lz4,
    frame_checksums,
    frame_checksums_lz4,
    frame_checksum_unknown,
    frame_checksum_crc32,
    crc32c_asked_anyway,
    compression_snappy,
    startup_repeated_key
);

fn startup_lz4(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = ready_v5(ctx, v, true, "NEG-1") else {
        return;
    };
    let (s1, e1) = p.envelope(Opcode::Options, &[]);
    let (s2, e2) = p.envelope(Opcode::Query, &query_body("SELECT * FROM system.local"));
    p.send(&[&e1, &e2]).ok();
    supported_ok(&mut p, v, s1, "NEG-1", "LZ4 frames");
    expect_result(
        &mut p,
        v,
        s2,
        "LZ4-1",
        "a query in an LZ4 frame, its RESULT in LZ4 frames",
    );
    v.keep(p);
}

fn frame_checksums(ctx: &mut Ctx, v: &mut Evidence) {
    if !needs_crc32c(ctx, v) {
        return;
    }
    let Some(mut p) = ready(ctx, v, 5, &[CQL, ("FRAME_CHECKSUM", "crc32c")], "NEG-5") else {
        return;
    };
    let (s, e) = p.envelope(Opcode::Query, &query_body("SELECT * FROM system.local"));
    p.send(&[&e]).ok();
    match p.wait(s, true) {
        Ok(_) => v.pass(
            "FMT-13",
            MUST,
            "CRC32C frames with the checksum bit both ways",
        ),
        Err(e) => v.fail("FMT-13", MUST, format!("after FRAME_CHECKSUM=crc32c: {e}")),
    }
    v.keep(p);
}

fn frame_checksums_lz4(ctx: &mut Ctx, v: &mut Evidence) {
    if !needs_crc32c(ctx, v) || !needs_lz4(ctx, v) {
        return;
    }
    let options = [CQL, LZ4, ("FRAME_CHECKSUM", "crc32c")];
    let Some(mut p) = ready(ctx, v, 5, &options, "NEG-5") else {
        return;
    };
    let (s1, e1) = p.envelope(Opcode::Options, &[]);
    let (s2, e2) = p.envelope(Opcode::Query, &query_body("SELECT * FROM system.local"));
    p.send(&[&e1, &e2]).ok();
    supported_ok(
        &mut p,
        v,
        s1,
        "FMT-13",
        "LZ4 frames with the checksum bit (bit 35)",
    );
    expect_result(
        &mut p,
        v,
        s2,
        "CRC-4",
        "a query in an LZ4 CRC32C frame, its RESULT in LZ4 frames whose CRC32C covers the compressed bytes",
    );
    v.keep(p);
}

fn frame_checksum_unknown(ctx: &mut Ctx, v: &mut Evidence) {
    if !ctx.lists("FRAME_CHECKSUMS") {
        v.informational = Some("the server does not list FRAME_CHECKSUMS: a protocol v5 server that predates FRAME_CHECKSUM ignores the key".into());
        return;
    }
    refused(
        ctx,
        v,
        "NEG-6",
        &[CQL, ("FRAME_CHECKSUM", "xxhash")],
        "FRAME_CHECKSUM=xxhash",
    );
}

fn frame_checksum_crc32(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL, ("FRAME_CHECKSUM", "crc32")], "NEG-5") else {
        return;
    };
    let (s, e) = p.envelope(Opcode::Options, &[]);
    p.send(&[&e]).ok();
    supported_ok(
        &mut p,
        v,
        s,
        "NEG-5",
        "FRAME_CHECKSUM=crc32: CRC32 frames, checksum bit clear",
    );
    v.keep(p);
}

fn crc32c_asked_anyway(ctx: &mut Ctx, v: &mut Evidence) {
    if ctx.offers("FRAME_CHECKSUMS", "crc32c") {
        v.unsupported = Some("the server lists crc32c: asking for it is the normal case".into());
        return;
    }
    let Some(mut p) = connect(ctx, v, 5, "NEG-6") else {
        return;
    };
    match p.handshake(&[CQL, ("FRAME_CHECKSUM", "crc32c")]) {
        Ok((h, _)) if h.opcode == Opcode::Error as u8 => {
            v.pass("NEG-6", MUST, "FRAME_CHECKSUM=crc32c refused with ERROR");
        }
        Ok((h, _)) if h.opcode == Opcode::Ready as u8 => {
            // A server that ignores the key frames with CRC32: the client's CRC32C frame fails
            // its payload check, which it answers as any framing error.
            let (_, e) = p.envelope(Opcode::Options, &[]);
            p.note(
                Dir::Note,
                "the server ignored FRAME_CHECKSUM: sending a CRC32C frame as negotiated",
            );
            let _ = p.send(&[&e]);
            let after = p.aftermath(ctx.fault_wait);
            judge_fault(v, "RECV-2", FrameSettings::default(), &after, ctx);
        }
        Ok((h, _)) => v.wrong_answer("NEG-6", "STARTUP", h.opcode),
        Err(e) => v.fail("NEG-6", MUST, format!("handshake: {e}")),
    }
    v.keep(p);
}

fn compression_snappy(ctx: &mut Ctx, v: &mut Evidence) {
    refused(
        ctx,
        v,
        "NEG-2",
        &[CQL, ("COMPRESSION", "snappy")],
        "COMPRESSION=snappy on v5",
    );
}

fn startup_repeated_key(ctx: &mut Ctx, v: &mut Evidence) {
    refused(
        ctx,
        v,
        "NEG-9",
        &[CQL, ("cql_version", "3.0.0")],
        "CQL_VERSION and cql_version in one STARTUP",
    );
}

/// A new v5 connection whose STARTUP with `options` must be refused with PROTOCOL_ERROR (`rule`):
/// the judge decides, from its response.
fn refused(ctx: &Ctx, v: &mut Evidence, rule: &str, options: &[(&str, &str)], what: &str) {
    let Some(mut p) = connect(ctx, v, 5, rule) else {
        return;
    };
    match p.handshake(options) {
        Ok((h, b)) => match p.server_finding(rule, v.logs.len()) {
            Some(found) => v.checks.push(found),
            None => {
                let m = body::read_error(&b).map(|(c, m)| format!(" {c:#06x} {m}"));
                let answer = format!("{}{}", opcode_name(h.opcode), m.unwrap_or_default());
                v.pass(rule, MUST, format!("{what}: {answer}"));
            }
        },
        Err(e) => v.fail(rule, MUST, format!("handshake: {e}")),
    }
    v.keep(p);
}
