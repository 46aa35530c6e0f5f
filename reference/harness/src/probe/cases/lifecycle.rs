//! Connection lifecycle: OPTIONS and STARTUP, framing after a STARTUP refused, an unframed
//! envelope after the switch.

use super::injection::fault;
use super::steps::{connect, needs_lz4, ready, supported_ok, Ctx, Evidence, CQL, LZ4, MUST};
use crate::probe::client::{decode_as, query_body};
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::envelope::{opcode_name, Opcode};
use cqlframe::format::{Format, FrameSettings};
use std::time::Duration;

cases!(options, startup, startup_error_framing, fault_unframed);

fn options(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = connect(ctx, v, 5, "LIFE-1") else {
        return;
    };
    match p.call(Opcode::Options, &[]) {
        Ok((h, b)) if h.opcode == Opcode::Supported as u8 => {
            v.check(
                "LIFE-1",
                MUST,
                h.version == 0x85,
                format!("unframed SUPPORTED, version byte {:#04x}", h.version),
            );
            ctx.supported = body::read_string_multimap(&b).unwrap_or_default();
            let listing = ctx
                .supported
                .iter()
                .map(|(k, vs)| format!("{k}={}", vs.join("|")))
                .collect::<Vec<_>>()
                .join(" ");
            v.pass("LIFE-3", MUST, format!("SUPPORTED lists {listing}"));
            if ctx.lists("FRAME_CHECKSUMS") {
                v.check(
                    "NEG-3",
                    MUST,
                    ctx.offers("FRAME_CHECKSUMS", "crc32"),
                    "FRAME_CHECKSUMS includes crc32",
                );
            } else {
                v.informational = Some("SUPPORTED has no FRAME_CHECKSUMS (NEG-3): a protocol v5 server that predates FRAME_CHECKSUM".into());
            }
        }
        Ok((h, _)) => v.wrong_answer("LIFE-1", "OPTIONS", h.opcode),
        Err(e) => v.fail("LIFE-1", MUST, format!("OPTIONS: {e}")),
    }
    v.keep(p);
}

fn startup(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL], "LIFE-4") else {
        return;
    };
    v.pass("LIFE-4", MUST, "READY came unframed");
    let (s, e) = p.envelope(Opcode::Options, &[]);
    p.send(&[&e]).ok();
    supported_ok(
        &mut p,
        v,
        s,
        "LIFE-5",
        "framed OPTIONS (uncompressed, CRC32)",
    );
    let (s, e) = p.envelope(
        Opcode::Query,
        &query_body("SELECT release_version FROM system.local"),
    );
    p.send(&[&e]).ok();
    if let Ok((h, b, _)) = p.wait(s, true) {
        if h.opcode == Opcode::Result as u8 {
            ctx.release = release_version(&b);
            v.pass(
                "NEG-1",
                MUST,
                format!("framed QUERY answered; release_version {:?}", ctx.release),
            );
        } else {
            v.wrong_answer("NEG-1", "QUERY", h.opcode);
        }
    } else {
        v.fail("NEG-1", MUST, "no answer to a framed QUERY");
    }
    v.keep(p);
}

/// The one text cell of a one-row, one-column Rows RESULT.
fn release_version(b: &[u8]) -> Option<String> {
    let s = String::from_utf8_lossy(b);
    s.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c.is_ascii_alphabetic()))
        .rfind(|t| {
            t.matches('.').count() >= 2 && t.chars().next().is_some_and(|c| c.is_ascii_digit())
        })
        .map(str::to_string)
}

fn startup_error_framing(ctx: &mut Ctx, v: &mut Evidence) {
    if !needs_lz4(ctx, v) {
        return;
    }
    // COMPRESSION=lz4 with a STARTUP refused for another reason: no CQL_VERSION (Apache
    // Cassandra refuses that), else a repeated key (NEG-9, which servers implementing this
    // spec refuse).
    let attempts: [&[(&str, &str)]; 2] = [&[LZ4], &[CQL, LZ4, ("compression", "lz4")]];
    let mut refused = None;
    for options in attempts {
        let Some(mut p) = connect(ctx, v, 5, "LIFE-8") else {
            return;
        };
        match p.handshake(options) {
            Ok((h, b)) if h.opcode == Opcode::Error as u8 => {
                let m = body::read_error(&b)
                    .map(|(c, m)| format!("{c:#06x} {m}"))
                    .unwrap_or_default();
                p.note(
                    Dir::Note,
                    format!(
                        "STARTUP refused ({m}); framing OPTIONS uncompressed with CRC32 (LIFE-8)"
                    ),
                );
                refused = Some(p);
                break;
            }
            Ok((h, _)) => {
                p.note(
                    Dir::Note,
                    format!(
                        "STARTUP answered with {}: not refused",
                        opcode_name(h.opcode)
                    ),
                );
                v.keep(p);
            }
            Err(e) => {
                v.fail("LIFE-8", MUST, format!("handshake: {e}"));
                return v.keep(p);
            }
        }
    }
    let Some(mut p) = refused else {
        v.unsupported = Some("the server accepted every STARTUP meant to be refused (no CQL_VERSION; a repeated key)".into());
        return;
    };
    let (_, e) = p.envelope(Opcode::Options, &[]);
    let _ = p.send(&[&e]);
    let after = p.aftermath(Duration::from_millis(1500).max(ctx.fault_wait / 2));
    let plain = decode_as(&after.bytes, FrameSettings::default());
    let lz4 = decode_as(
        &after.bytes,
        FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32),
    );
    match (plain, lz4) {
        (Ok(envs), _) if envs.iter().any(|(h, _)| h.opcode == Opcode::Supported as u8) => {
            v.pass("LIFE-8", MUST, "after the ERROR the server frames uncompressed with CRC32");
        }
        (_, Ok(envs)) if !envs.is_empty() => v.fail(
            "LIFE-8",
            MUST,
            format!(
                "after the ERROR the server frames with LZ4, as the refused STARTUP asked: it read the client's uncompressed frame as LZ4 and answered {}",
                envs.iter().map(|(h, b)| format!("{}{}", opcode_name(h.opcode), body::read_error(b).map(|(c, m)| format!(" {c:#06x} {m}")).unwrap_or_default())).collect::<Vec<_>>().join(", ")
            ),
        ),
        _ if after.bytes.is_empty() => v.fail("LIFE-8", MUST, format!("no answer to a framed OPTIONS after the ERROR ({})", if after.closed { "closed" } else { "still open" })),
        (Err(e), _) => v.fail("LIFE-8", MUST, format!("the answer is not uncompressed CRC32 framing: {e}")),
        (Ok(_), _) => v.fail("LIFE-8", MUST, "no SUPPORTED in the answer"),
    }
    v.keep(p);
}

fn fault_unframed(ctx: &mut Ctx, v: &mut Evidence) {
    fault(
        ctx,
        v,
        "LIFE-7",
        false,
        "an unframed OPTIONS envelope after the switch",
        &|p| p.envelope(Opcode::Options, &[]).1,
    )
}
