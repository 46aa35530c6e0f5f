//! How a probe case injects a fault: a READY connection, the faulty bytes, then what the
//! server does, judged against ERR-1 and ERR-4 and the rule the fault breaks.

use super::steps::{ready_v5, Ctx, Evidence, MUST, SHOULD};
use crate::fault_builder::{serialise, OutFrame};
use crate::probe::client::{decode_as, Aftermath, Probe};
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::envelope::{opcode_name, Opcode};
use cqlframe::format::{Format, FrameSettings};

/// The server's answer to a fault: one framed ERROR (PROTOCOL_ERROR, stream 0), then a close
/// (ERR-1, ERR-4); anything else the faulty envelope got means the fault went unnoticed.
pub(super) fn judge_fault(
    v: &mut Evidence,
    rule: &str,
    settings: FrameSettings,
    after: &Aftermath,
    ctx: &Ctx,
) {
    let wait = ctx.fault_wait.as_secs_f64();
    let envelopes = match decode_as(&after.bytes, settings) {
        Ok(e) => e,
        Err(e) => {
            v.pass(rule, MUST, "the server stopped processing");
            v.fail(
                "ERR-1",
                MUST,
                format!(
                    "the server's answer is not framed with the connection's settings ({}): {e}",
                    settings.format.name()
                ),
            );
            return;
        }
    };
    let errors: Vec<_> = envelopes
        .iter()
        .filter(|(h, _)| h.opcode == Opcode::Error as u8)
        .collect();
    let others: Vec<String> = envelopes
        .iter()
        .filter(|(h, _)| h.opcode != Opcode::Error as u8)
        .map(|(h, _)| format!("{} on stream {}", opcode_name(h.opcode), h.stream))
        .collect();
    if !others.is_empty() {
        v.fail(
            rule,
            MUST,
            format!(
                "the server processed the faulty frame's envelopes: it answered {}",
                others.join(", ")
            ),
        );
    } else if errors.is_empty() && !after.closed {
        v.fail(
            rule,
            MUST,
            format!("no reaction within {wait:.0} s: the server neither answered nor closed"),
        );
    } else {
        v.pass(rule, MUST, "the server rejected the frame");
    }
    match errors.first() {
        Some((h, b)) => {
            let (code, m) = body::read_error(b).unwrap_or((-1, String::new()));
            v.check(
                "ERR-1",
                MUST,
                code == 0x000A,
                format!("framed ERROR {code:#06x}: {m}"),
            );
            v.check(
                "ERR-4",
                SHOULD,
                h.stream == 0,
                format!("ERROR on stream {}", h.stream),
            );
            if errors.len() > 1 {
                v.fail(
                    "ERR-1",
                    MUST,
                    format!("{} ERROR envelopes, not one", errors.len()),
                );
            }
        }
        None if after.closed => v.fail(
            "ERR-1",
            MUST,
            "the server closed the connection without a framed ERROR",
        ),
        None => {}
    }
    if !after.closed {
        v.fail(
            "ERR-1",
            MUST,
            format!("the server did not close the connection within {wait:.0} s"),
        );
    } else if !errors.is_empty() {
        v.pass(
            "ERR-1",
            MUST,
            format!(
                "closed after {:.2} s{}",
                after.seconds,
                if after.reset { " (reset)" } else { "" }
            ),
        );
    }
}

/// Runs one fault: a READY connection (LZ4 when `lz4`), the bytes `build` makes, the judgement.
pub(super) fn fault(
    ctx: &mut Ctx,
    v: &mut Evidence,
    rule: &str,
    lz4: bool,
    what: &str,
    build: &dyn Fn(&mut Probe) -> Vec<u8>,
) {
    if let Some(p) = ready_v5(ctx, v, lz4, rule) {
        inject(ctx, v, p, rule, what, build);
    }
}

/// Writes the bytes `build` makes on the READY connection `p` and judges what follows.
pub(super) fn inject(
    ctx: &Ctx,
    v: &mut Evidence,
    mut p: Probe,
    rule: &str,
    what: &str,
    build: &dyn Fn(&mut Probe) -> Vec<u8>,
) {
    let bytes = build(&mut p);
    p.note(Dir::C2s, format!("FAULT: {what} ({} bytes)", bytes.len()));
    let _ = p.write(&bytes, 0);
    let after = p.aftermath(ctx.fault_wait);
    judge_fault(v, rule, p.settings(), &after, ctx);
    v.keep(p);
}

/// An OPTIONS frame of the connection's settings, with `fault` done to its bytes.
pub(super) fn options_frame(p: &mut Probe, fault: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let (_, e) = p.envelope(Opcode::Options, &[]);
    let mut bytes = serialise(&[p.out_frame(&e, true)]);
    fault(&mut bytes);
    bytes
}

/// An uncompressed OPTIONS frame whose checksum bit names the other checksum than `trailer`, the
/// one the connection negotiated and the frame's trailer really is (CRC24 correct).
pub(super) fn mismatched_options_frame(p: &mut Probe, trailer: PayloadChecksum) -> Vec<u8> {
    let (_, e) = p.envelope(Opcode::Options, &[]);
    let settings = FrameSettings::new(Format::Uncompressed, trailer);
    let mut frame = OutFrame::new(settings, &e, true, true);
    frame.mismatch_checksum_bit();
    serialise(&[frame])
}
