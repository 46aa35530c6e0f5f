//! Envelopes: the v6-beta version and its USE_BETA flag, a negative body length.

use super::injection::fault;
use super::steps::{connect, ready, Ctx, Evidence, CQL, MUST};
use crate::probe::client::{decode_as, query_body};
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::envelope::{envelope_bytes, opcode_name, Opcode, FLAG_USE_BETA};
use cqlframe::format::FrameSettings;
use std::time::Duration;

cases!(v6_beta, v6_beta_without_flag, fault_negative_length);

fn v6_beta(ctx: &mut Ctx, v: &mut Evidence) {
    if !v.needs(ctx.beta(), "PROTOCOL_VERSIONS lists no 6/v6-beta") {
        return;
    }
    let Some(mut p) = ready(ctx, v, 6, &[CQL], "ENV-5") else {
        return;
    };
    let (s, e) = p.envelope(
        Opcode::Query,
        &query_body("SELECT release_version FROM system.local"),
    );
    p.send(&[&e]).ok();
    match p.wait(s, true) {
        Ok((h, _, framed)) => {
            v.check("LIFE-2", MUST, framed, "v6-beta is framed after the switch");
            v.check(
                "ENV-5",
                MUST,
                h.flags & FLAG_USE_BETA != 0 && h.version == 0x86,
                format!("response version {:#04x} flags {:#04x}", h.version, h.flags),
            );
        }
        Err(e) => v.fail("ENV-5", MUST, format!("framed v6 QUERY: {e}")),
    }
    v.keep(p);
}

fn v6_beta_without_flag(ctx: &mut Ctx, v: &mut Evidence) {
    if !v.needs(ctx.beta(), "PROTOCOL_VERSIONS lists no 6/v6-beta") {
        return;
    }
    let Some(mut p) = connect(ctx, v, 6, "ENV-5") else {
        return;
    };
    let startup = envelope_bytes(6, 0, 1, Opcode::Startup, &body::string_map(&[CQL]));
    p.note(
        Dir::C2s,
        "unframed STARTUP stream 1 version 0x06 without USE_BETA",
    );
    let _ = p.write(&startup, 0);
    match p.raw_envelope() {
        Ok((h, b)) if h.opcode == Opcode::Error as u8 => {
            let code = body::read_error(&b).map(|(c, _)| c).unwrap_or(-1);
            v.check(
                "ENV-5",
                MUST,
                code == 0x000A,
                format!(
                    "unframed ERROR {code:#06x}, version byte {:#04x}, flags {:#04x}",
                    h.version, h.flags
                ),
            );
        }
        Ok((h, _)) => v.wrong_answer("ENV-5", "a v6 STARTUP without USE_BETA", h.opcode),
        Err(e) => v.fail("ENV-5", MUST, format!("v6 STARTUP without USE_BETA: {e}")),
    }
    // No switch follows: the connection is unframed (or closed).
    let options = envelope_bytes(5, 0, 2, Opcode::Options, &[]);
    p.note(Dir::C2s, "unframed OPTIONS stream 2 version 0x05");
    let _ = p.write(&options, 0);
    let after = p.aftermath(Duration::from_millis(1500));
    let unframed = after.bytes.len() >= 9
        && (0x83..=0x86).contains(&after.bytes[0])
        && after.bytes[4] <= Opcode::AuthSuccess as u8;
    if unframed {
        let op = opcode_name(after.bytes[4]);
        let detail = body::read_error(&after.bytes[9..])
            .ok()
            .filter(|_| after.bytes[4] == Opcode::Error as u8)
            .map(|(c, m)| format!(" {c:#06x} {m}"))
            .unwrap_or_default();
        v.pass(
            "LIFE-11",
            MUST,
            format!(
                "the connection stayed unframed: OPTIONS answered with an unframed {op} (version byte {:#04x}){detail}",
                after.bytes[0]
            ),
        );
    } else if after.bytes.is_empty() && after.closed {
        v.pass(
            "LIFE-11",
            MUST,
            "the server closed the connection after the refusal",
        );
    } else if decode_as(&after.bytes, FrameSettings::default()).is_ok() {
        v.fail(
            "LIFE-11",
            MUST,
            "the server switched to framing after refusing the STARTUP",
        );
    } else {
        v.fail(
            "LIFE-11",
            MUST,
            format!("{} unexpected bytes after the refusal", after.bytes.len()),
        );
    }
    v.keep(p);
}

fn fault_negative_length(ctx: &mut Ctx, v: &mut Evidence) {
    fault(
        ctx,
        v,
        "ENV-3",
        false,
        "self-contained frame holding an OPTIONS envelope header with body length -1",
        &|p| {
            let (_, mut e) = p.envelope(Opcode::Options, &[]);
            e[5..9].copy_from_slice(&(-1i32).to_be_bytes());
            p.frame(&e, true)
        },
    )
}
