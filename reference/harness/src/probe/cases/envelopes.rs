//! Envelopes: the v6-beta version and its USE_BETA flag, a negative body length.

use super::injection::fault;
use super::steps::{connect, no_switch, ready, Ctx, Evidence, CQL, MUST};
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::envelope::{envelope_bytes, Opcode, FLAG_USE_BETA};

cases!(v6_beta, v6_beta_without_flag, fault_negative_length);

fn v6_beta(ctx: &mut Ctx, v: &mut Evidence) {
    if !v.needs(ctx.beta(), "PROTOCOL_VERSIONS lists no 6/v6-beta") {
        return;
    }
    let Some(mut p) = ready(ctx, v, 6, &[CQL], "ENV-5") else {
        return;
    };
    match p.ask_local() {
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
    no_switch(&mut p, v, "LIFE-11");
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
