//! Receiving: packed, empty, large and chopped frames a server must take, and the corrupt,
//! interleaved and overshooting ones it must refuse.

use super::injection::{fault, inject, mismatched_options_frame, options_frame};
use super::steps::{
    big_query, connect, error_text, expect_result, needs_crc32c, ready, ready_v5, supported_ok,
    Ctx, Evidence, CQL, MUST,
};
use crate::fault_builder::{after_first, flip, serialise};
use crate::probe::client::{query_body, LOCAL_QUERY};
use crate::verdict::Status;
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::envelope::{opcode_name, Opcode};
use std::time::Duration;

cases!(
    pack,
    empty_frame,
    large_131071,
    large_131060,
    large_lz4,
    chopped,
    sequence_before_ready,
    fault_header_crc,
    fault_payload_crc,
    fault_checksum_bit,
    fault_checksum_bit_crc32c,
    fault_interleave,
    fault_overshoot,
    fault_empty_continuation,
    fault_partial_envelope
);

fn pack(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL], "RECV-4") else {
        return;
    };
    let mut content = Vec::new();
    let mut streams = Vec::new();
    for i in 0..64 {
        let (s, e) = if i % 2 == 0 {
            p.envelope(Opcode::Options, &[])
        } else {
            p.envelope(Opcode::Query, &query_body(LOCAL_QUERY))
        };
        streams.push(s);
        content.extend_from_slice(&e);
    }
    let frame = p.frame(&content, true);
    p.note(
        Dir::C2s,
        format!(
            "one self-contained frame with 64 envelopes ({} bytes)",
            content.len()
        ),
    );
    let _ = p.write(&frame, 0);
    let mut ok = 0;
    for s in &streams {
        match p.wait(*s, false) {
            Ok(_) => ok += 1,
            Err(e) => {
                v.fail("RECV-4", MUST, format!("stream {s}: {e}"));
                break;
            }
        }
    }
    if ok == streams.len() {
        v.pass("RECV-4", MUST, "64 envelopes in one frame: 64 answers");
    }
    v.keep(p);
}

fn empty_frame(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL], "RECV-4") else {
        return;
    };
    let (s, e) = p.envelope(Opcode::Options, &[]);
    let mut bytes = p.frame(&[], true);
    bytes.extend_from_slice(&p.frame(&e, true));
    p.note(Dir::C2s, "an empty self-contained frame, then OPTIONS");
    let _ = p.write(&bytes, 0);
    supported_ok(
        &mut p,
        v,
        s,
        "RECV-4",
        "after an empty self-contained frame",
    );
    v.keep(p);
}

/// A large QUERY as a sequence cut at `piece` bytes.
fn large(ctx: &mut Ctx, v: &mut Evidence, lz4: bool, piece: usize, chop: usize) {
    let Some(mut p) = ready_v5(ctx, v, lz4, "RECV-6") else {
        return;
    };
    let (s, e) = p.envelope(Opcode::Query, &query_body(&big_query(400_000)));
    let mut bytes = Vec::new();
    for c in e.chunks(piece) {
        bytes.extend_from_slice(&p.frame(c, false));
    }
    let (s2, e2) = p.envelope(Opcode::Options, &[]);
    bytes.extend_from_slice(&p.frame(&e2, true));
    p.note(
        Dir::C2s,
        format!(
            "QUERY of {} bytes as {} non-self-contained frames of {piece} bytes, then OPTIONS; written {}",
            e.len(),
            e.len().div_ceil(piece),
            if chop == 0 { "at once".to_string() } else { format!("in {chop}-byte pieces") }
        ),
    );
    let _ = p.write(&bytes, chop);
    expect_result(
        &mut p,
        v,
        s,
        "RECV-6",
        &format!("sequence split at {piece}"),
    );
    supported_ok(&mut p, v, s2, "RECV-4", "the frame after the sequence");
    v.keep(p);
}

fn large_131071(ctx: &mut Ctx, v: &mut Evidence) {
    large(ctx, v, false, 131_071, 0)
}

fn large_131060(ctx: &mut Ctx, v: &mut Evidence) {
    large(ctx, v, false, 131_060, 0)
}

fn large_lz4(ctx: &mut Ctx, v: &mut Evidence) {
    large(ctx, v, true, 131_071, 0)
}

fn chopped(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL], "RECV-4") else {
        return;
    };
    let (s1, e1) = p.envelope(Opcode::Options, &[]);
    let (s2, e2) = p.envelope(Opcode::Query, &query_body(LOCAL_QUERY));
    let mut content = e1.clone();
    content.extend_from_slice(&e2);
    let frame = p.frame(&content, true);
    p.note(
        Dir::C2s,
        format!(
            "a frame of two envelopes written one byte at a time ({} writes)",
            frame.len()
        ),
    );
    for b in frame.chunks(1) {
        let _ = p.write(b, 0);
        std::thread::sleep(Duration::from_millis(2));
    }
    supported_ok(&mut p, v, s1, "RECV-4", "byte-by-byte delivery");
    expect_result(&mut p, v, s2, "RECV-4", "byte-by-byte delivery");
    v.keep(p);
    large(ctx, v, false, 131_071, 1000);
}

/// A sequence on a connection that is framed but not yet READY: after an ERROR to STARTUP
/// (LIFE-8), as during a SASL exchange after AUTHENTICATE, RECV-4 holds as after READY.
fn sequence_before_ready(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = connect(ctx, v, 5, "RECV-4") else {
        return;
    };
    // No CQL_VERSION: Apache Cassandra refuses that STARTUP; framing follows the ERROR.
    match p.handshake(&[]) {
        Ok((h, b)) if h.opcode == Opcode::Error as u8 => {
            let m = error_text(&b);
            p.note(
                Dir::Note,
                format!("STARTUP without CQL_VERSION refused ({m}): framed, not READY"),
            );
        }
        Ok((h, _)) => {
            v.unsupported = Some(format!(
                "a STARTUP without CQL_VERSION was answered with {}, not refused: no framed connection short of READY",
                opcode_name(h.opcode)
            ));
            return v.keep(p);
        }
        Err(e) => {
            v.fail("RECV-4", MUST, format!("handshake: {e}"));
            return v.keep(p);
        }
    }
    let (s1, e1) = p.envelope(Opcode::Options, &[]);
    if let Err(e) = p.send(&[&e1]) {
        v.unsupported = Some(format!(
            "the ERROR to STARTUP answers no request of the client, so no framing follows it ({e})"
        ));
        return v.keep(p);
    }
    supported_ok(
        &mut p,
        v,
        s1,
        "LIFE-8",
        "OPTIONS in a self-contained frame after the ERROR",
    );
    // SEND-4 lets a sender make a sequence of any envelope, here one frame holding all of it.
    let (s2, e2) = p.envelope(Opcode::Options, &[]);
    let frame = p.frame(&e2, false);
    p.note(
        Dir::C2s,
        format!("OPTIONS stream {s2} as a sequence of one non-self-contained frame"),
    );
    let _ = p.write(&frame, 0);
    let what = "OPTIONS as a sequence before READY";
    match p.wait(s2, true) {
        Ok((h, _, _)) if h.opcode == Opcode::Supported as u8 => {
            v.pass("RECV-4", MUST, format!("{what}: SUPPORTED received"))
        }
        Ok((h, b, _)) => {
            let e = body::read_error(&b)
                .map(|(c, m)| format!(" {c:#06x} on stream {} ({m})", h.stream))
                .unwrap_or_default();
            v.fail(
                "RECV-4",
                MUST,
                format!("{what}: answered with {}{e}", opcode_name(h.opcode)),
            );
        }
        Err(e) => v.fail("RECV-4", MUST, format!("{what}: {e}")),
    }
    v.keep(p);
}

fn fault_header_crc(ctx: &mut Ctx, v: &mut Evidence) {
    fault(
        ctx,
        v,
        "RECV-1",
        false,
        "OPTIONS frame with one CRC24 bit flipped",
        // Bit 0 of the CRC24's first byte.
        &|p| options_frame(p, |f| flip(f, 3 * 8)),
    )
}

fn fault_payload_crc(ctx: &mut Ctx, v: &mut Evidence) {
    fault(
        ctx,
        v,
        "RECV-2",
        false,
        "OPTIONS frame with one payload bit flipped (stream id)",
        // Bit 6 of the payload's fourth byte: the stream id.
        &|p| options_frame(p, |f| flip(f, (6 + 3) * 8 + 6)),
    )
}

fn fault_checksum_bit(ctx: &mut Ctx, v: &mut Evidence) {
    if !ctx.lists("FRAME_CHECKSUMS") {
        v.informational = Some("the server does not list FRAME_CHECKSUMS: a protocol v5 server ignores the checksum bit (a padding bit to it)".into());
    }
    fault(ctx, v, "RECV-3", false, "OPTIONS frame with the checksum bit set on a CRC32 connection (trailer CRC32, CRC24 correct)", &|p| {
        mismatched_options_frame(p, PayloadChecksum::Crc32)
    });
    if v.informational.is_some() {
        // To a protocol v5 server the bit is padding: what it does is reported, not judged.
        for c in &mut v.checks {
            if c.status == Status::Fail {
                c.status = Status::Info;
            }
        }
    }
}

fn fault_checksum_bit_crc32c(ctx: &mut Ctx, v: &mut Evidence) {
    if !needs_crc32c(ctx, v) {
        return;
    }
    let options = [CQL, ("FRAME_CHECKSUM", "crc32c")];
    if let Some(p) = ready(ctx, v, 5, &options, "RECV-3") {
        inject(ctx, v, p, "RECV-3", "OPTIONS frame with the checksum bit clear on a CRC32C connection (trailer CRC32C, CRC24 correct)", &|p| {
            mismatched_options_frame(p, PayloadChecksum::Crc32c)
        });
    }
}

fn fault_interleave(ctx: &mut Ctx, v: &mut Evidence) {
    fault(ctx, v, "RECV-8", false, "first frame of a 300 KB QUERY sequence, a self-contained OPTIONS frame, then the rest of the sequence", &|p| {
        let (_, q) = p.envelope(Opcode::Query, &query_body(&big_query(300_000)));
        let (_, o) = p.envelope(Opcode::Options, &[]);
        let mut frames = p.sequence(&q);
        after_first(&mut frames, p.out_frame(&o, true));
        serialise(&frames)
    })
}

fn fault_overshoot(ctx: &mut Ctx, v: &mut Evidence) {
    fault(
        ctx,
        v,
        "RECV-7",
        false,
        "a 200 KB QUERY sequence whose last frame carries 100 bytes past the envelope",
        &|p| {
            let (_, mut q) = p.envelope(Opcode::Query, &query_body(&big_query(200_000)));
            q.extend_from_slice(&[0x55; 100]);
            serialise(&p.sequence(&q))
        },
    )
}

fn fault_empty_continuation(ctx: &mut Ctx, v: &mut Evidence) {
    fault(
        ctx,
        v,
        "RECV-10",
        false,
        "a 200 KB QUERY sequence with an empty non-self-contained frame after its first frame",
        &|p| {
            let (_, q) = p.envelope(Opcode::Query, &query_body(&big_query(200_000)));
            let mut frames = p.sequence(&q);
            after_first(&mut frames, p.out_frame(&[], false));
            serialise(&frames)
        },
    )
}

fn fault_partial_envelope(ctx: &mut Ctx, v: &mut Evidence) {
    fault(
        ctx,
        v,
        "RECV-5",
        false,
        "self-contained frame: a whole OPTIONS envelope, then 5 bytes of a second envelope header",
        &|p| {
            let (_, mut e) = p.envelope(Opcode::Options, &[]);
            e.extend_from_slice(&[0x05, 0x00, 0x00, 0x09, 0x05]);
            p.frame(&e, true)
        },
    )
}
