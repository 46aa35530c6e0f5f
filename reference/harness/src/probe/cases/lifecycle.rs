//! Connection lifecycle: OPTIONS and STARTUP, the SASL exchange after AUTHENTICATE, a STARTUP
//! in a retired version, framing after a STARTUP refused, an unframed envelope after the switch.

use super::injection::fault;
use super::steps::{
    connect, error_text, hex, needs_lz4, no_switch, ready, supported_ok, Ctx, Evidence, CQL, LZ4,
    MUST,
};
use crate::probe::client::decode_as;
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::envelope::{
    envelope_bytes, opcode_name, EnvelopeHeader, Opcode, FLAG_USE_BETA, RESPONSE_BIT,
};
use cqlframe::format::{Format, FrameSettings};
use std::time::Duration;

cases!(
    options,
    startup,
    startup_auth,
    retired_version_v1,
    retired_version_v2,
    startup_error_framing,
    fault_unframed
);

fn options(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = connect(ctx, v, 5, "LIFE-1") else {
        return;
    };
    let (mut stream, e) = p.envelope(Opcode::Options, &[]);
    p.send(&[&e]).ok();
    // Read past the client's Connection, which would refuse an answer on another stream
    // before this case could say which stream it came on.
    let mut answer = p.raw_envelope();
    // A pre-release 4.0 server still holds v5 as a beta version and refuses it, on any
    // stream, unless the client sets USE_BETA (the refusal carries the flag): the OPTIONS is
    // then asked again with the flag, so that what the server does with the stream of a
    // request before STARTUP is still seen.
    if matches!(&answer, Ok((h, _)) if h.opcode == Opcode::Error as u8 && h.flags & FLAG_USE_BETA != 0)
    {
        v.keep(p);
        let Some(beta) = connect(ctx, v, 5, "LIFE-1") else {
            return;
        };
        p = beta;
        p.flags |= FLAG_USE_BETA;
        p.note(
            Dir::Note,
            "v5 refused as a beta version: OPTIONS again with USE_BETA",
        );
        let (s, e) = p.envelope(Opcode::Options, &[]);
        stream = s;
        p.send(&[&e]).ok();
        answer = p.raw_envelope();
    }
    match answer {
        Ok((h, b)) if h.opcode == Opcode::Supported as u8 => {
            v.check(
                "LIFE-13",
                MUST,
                h.stream == stream,
                format!(
                    "the SUPPORTED answering the OPTIONS of stream {stream} came on stream {}",
                    h.stream
                ),
            );
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
    if let Ok((h, b, _)) = p.ask_local() {
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

/// The SASL PLAIN response of Apache Cassandra's default superuser, cassandra/cassandra: an
/// AUTH_RESPONSE body, the token as [bytes].
fn plain_token() -> Vec<u8> {
    let mut token = Vec::new();
    body::put_bytes(&mut token, Some(b"\0cassandra\0cassandra"));
    token
}

/// AUTHENTICATE is the response to STARTUP, so the switch comes right after it: the whole SASL
/// exchange is framed, AUTH_SUCCESS included, not only what follows AUTH_SUCCESS.
fn startup_auth(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = connect(ctx, v, 5, "LIFE-4") else {
        return;
    };
    match p.handshake(&[CQL]) {
        Ok((h, _)) if h.opcode == Opcode::Authenticate as u8 => {
            v.pass("LIFE-4", MUST, "AUTHENTICATE came unframed");
        }
        Ok((h, _)) if h.opcode == Opcode::Ready as u8 => {
            v.informational =
                Some("STARTUP answered with READY: the server does not authenticate".into());
            v.keep(p);
            return;
        }
        Ok((h, b)) => {
            let e = error_text(&b);
            v.fail(
                "LIFE-4",
                MUST,
                format!("STARTUP answered with {} {e}", opcode_name(h.opcode)),
            );
            v.keep(p);
            return;
        }
        Err(e) => {
            v.fail("LIFE-4", MUST, format!("handshake: {e}"));
            v.keep(p);
            return;
        }
    }
    let (s, e) = p.envelope(Opcode::AuthResponse, &plain_token());
    p.send(&[&e]).ok();
    match p.wait(s, true) {
        Ok((h, _, framed)) if h.opcode == Opcode::AuthSuccess as u8 => {
            v.check(
                "LIFE-4",
                MUST,
                framed,
                "AUTH_SUCCESS to the framed AUTH_RESPONSE came framed",
            );
        }
        Ok((h, b, framed)) => {
            v.check(
                "LIFE-4",
                MUST,
                framed,
                format!(
                    "{} to the framed AUTH_RESPONSE came framed",
                    opcode_name(h.opcode)
                ),
            );
            v.informational = Some(format!(
                "the PLAIN response cassandra/cassandra was answered with {} {}, not \
                 AUTH_SUCCESS: nothing after the exchange to check",
                opcode_name(h.opcode),
                error_text(&b)
            ));
            v.keep(p);
            return;
        }
        Err(e) => {
            v.fail(
                "LIFE-4",
                MUST,
                format!("no framed answer to the framed AUTH_RESPONSE: {e}"),
            );
            v.keep(p);
            return;
        }
    }
    match p.ask_local() {
        Ok((h, _, framed)) if h.opcode == Opcode::Result as u8 => v.check(
            "LIFE-4",
            MUST,
            framed,
            "the QUERY after AUTH_SUCCESS was answered framed",
        ),
        Ok((h, _, _)) => v.wrong_answer("LIFE-4", "the QUERY after AUTH_SUCCESS", h.opcode),
        Err(e) => v.fail("LIFE-4", MUST, format!("the QUERY after AUTH_SUCCESS: {e}")),
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

fn retired_version_v1(ctx: &mut Ctx, v: &mut Evidence) {
    retired_version(ctx, v, 1)
}

fn retired_version_v2(ctx: &mut Ctx, v: &mut Evidence) {
    retired_version(ctx, v, 2)
}

/// The stream of the retired STARTUP: not 0, so that the report shows whether the refusal came
/// on the STARTUP's stream or on stream 0 (either may, LIFE-13).
const RETIRED_STREAM: i16 = 1;

/// A STARTUP in the retired `version` (1 or 2), its header in their 8-byte layout: a version
/// probe, refused unframed in the same version and layout, on any stream, and not processed.
fn retired_version(ctx: &mut Ctx, v: &mut Evidence, version: u8) {
    let Some(mut p) = connect(ctx, v, 5, "LIFE-14") else {
        return;
    };
    let startup = envelope_bytes(
        version,
        0,
        RETIRED_STREAM,
        Opcode::Startup,
        &body::string_map(&[CQL]),
    );
    p.note(
        Dir::C2s,
        format!(
            "unframed STARTUP stream {RETIRED_STREAM} version {version:#04x}, 8-byte header {}",
            hex(&startup[..8])
        ),
    );
    let _ = p.write(&startup, 0);
    match p.raw_envelope() {
        Ok((h, b)) => refusal(v, version, &h, &b),
        Err(e) => v.fail("LIFE-14", MUST, format!("v{version} STARTUP: {e}")),
    }
    no_switch(&mut p, v, "LIFE-14");
    v.keep(p);
}

/// Judges the answer to the retired STARTUP: an ERROR (PROTOCOL_ERROR) in its version, read in
/// the 8-byte layout that version names. Its stream is the judge's to check (LIFE-13, any stream).
fn refusal(v: &mut Evidence, version: u8, h: &EnvelopeHeader, b: &[u8]) {
    let mut wire = Vec::new();
    h.write_unframed(&mut wire);
    let header = format!("header `{}`", hex(&wire));
    if h.version != version | RESPONSE_BIT {
        return v.fail(
            "LIFE-14",
            MUST,
            format!(
                "answered in version {:#04x}, not the request's {:#04x}: {} stream {}, {header}",
                h.version,
                version | RESPONSE_BIT,
                opcode_name(h.opcode),
                h.stream
            ),
        );
    }
    // An ERROR whose code and message fill the body: a 9-byte header read as 8 bytes leaves an
    // opcode and a length that do not fit, as does an answer to a request processed.
    let error = body::read_error(b)
        .ok()
        .filter(|(_, m)| h.opcode == Opcode::Error as u8 && b.len() == 6 + m.len());
    match error {
        Some((code, message)) => v.check(
            "LIFE-14",
            MUST,
            code == 0x000A,
            format!(
                "unframed ERROR {code:#06x}{} in the 8-byte layout, {header} (stream {}; STARTUP's {RETIRED_STREAM}): {message}",
                if code == 0x000A { "" } else { ", not PROTOCOL_ERROR (0x000a)," },
                h.stream
            ),
        ),
        None => v.fail(
            "LIFE-14",
            MUST,
            format!(
                "the answer read in the 8-byte layout of v{version}, {header}, is {} with a body of {} bytes, not an ERROR whose code and message fill it: the request was processed, or the answer is in another layout",
                opcode_name(h.opcode),
                b.len()
            ),
        ),
    }
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
                let m = error_text(&b);
                p.note(
                    Dir::Note,
                    format!(
                        "STARTUP refused on stream {} ({m}); framing OPTIONS uncompressed with CRC32 (LIFE-8)",
                        h.stream
                    ),
                );
                refused = Some((p, h.stream));
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
    let Some((mut p, error_stream)) = refused else {
        v.unsupported = Some("the server accepted every STARTUP meant to be refused (no CQL_VERSION; a repeated key)".into());
        return;
    };
    let (_, e) = p.envelope(Opcode::Options, &[]);
    if let Err(refused) = p.send(&[&e]) {
        // An ERROR off the STARTUP's stream answers no request (LIFE-13): the STARTUP stays
        // outstanding, nothing is framed. Whether the server frames shows in an unframed OPTIONS.
        v.fail(
            "LIFE-13",
            MUST,
            format!("the ERROR refusing the STARTUP came on stream {error_stream}, not the STARTUP's: it answers no request, so no switch follows for the client ({refused})"),
        );
        p.note(
            Dir::Note,
            "the STARTUP is outstanding, the client frames nothing; an unframed OPTIONS shows the server's framing (the probe breaks LIFE-6 on purpose)",
        );
        p.note(Dir::C2s, "unframed OPTIONS stream 3 version 0x05");
        let _ = p.write(&envelope_bytes(5, 0, 3, Opcode::Options, &[]), 0);
        let after = p.aftermath(Duration::from_millis(1500).max(ctx.fault_wait / 2));
        let unframed = after.bytes.len() >= 9
            && after.bytes[0] == 0x85
            && after.bytes[4] == Opcode::Supported as u8;
        v.check(
            "LIFE-8",
            MUST,
            !unframed,
            if unframed {
                "after the ERROR the server does not frame: an unframed OPTIONS gets an unframed SUPPORTED".to_string()
            } else {
                format!("an unframed OPTIONS after the ERROR gets {} bytes: {}", after.bytes.len(), hex(&after.bytes[..after.bytes.len().min(9)]))
            },
        );
        return v.keep(p);
    }
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
