//! What the probe's cases share: what they know of the server ([`Ctx`]), what they found
//! ([`Evidence`]), and the steps most of them take (connect, handshake, wait for an answer).

use crate::probe::client::{decode_as, Probe};
use crate::verdict::{Check, Level, Status};
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::envelope::{envelope_bytes, opcode_name, Opcode};
use cqlframe::format::FrameSettings;
use std::time::Duration;

/// What every case knows about the server.
pub struct Ctx {
    pub target: String,
    pub timeout: Duration,
    /// How long to watch the server after a fault.
    pub fault_wait: Duration,
    /// The SUPPORTED multimap (from `probe.options`).
    pub supported: Vec<(String, Vec<String>)>,
    pub release: Option<String>,
}

impl Ctx {
    pub(super) fn offers(&self, key: &str, value: &str) -> bool {
        self.supported.iter().any(|(k, vs)| {
            k.eq_ignore_ascii_case(key) && vs.iter().any(|v| v.eq_ignore_ascii_case(value))
        })
    }

    pub(super) fn lists(&self, key: &str) -> bool {
        self.supported
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(key))
    }

    pub(super) fn beta(&self) -> bool {
        self.supported.iter().any(|(k, vs)| {
            k.eq_ignore_ascii_case("PROTOCOL_VERSIONS") && vs.iter().any(|v| v.starts_with("6/"))
        })
    }
}

/// What a case found.
#[derive(Default)]
pub struct Evidence {
    pub checks: Vec<Check>,
    pub unsupported: Option<String>,
    pub informational: Option<String>,
    pub logs: Vec<Vec<crate::wire_log::Line>>,
}

impl Evidence {
    pub(super) fn check(&mut self, rule: &str, level: Level, ok: bool, message: impl Into<String>) {
        let status = if ok { Status::Pass } else { Status::Fail };
        self.checks.push(Check::new(rule, level, status, message));
    }

    pub(super) fn pass(&mut self, rule: &str, level: Level, message: impl Into<String>) {
        self.check(rule, level, true, message);
    }

    pub(super) fn fail(&mut self, rule: &str, level: Level, message: impl Into<String>) {
        self.check(rule, level, false, message);
    }

    /// Fails `rule`: `request` was answered with `opcode`, not what the case waits for.
    pub(super) fn wrong_answer(&mut self, rule: &str, request: &str, opcode: u8) {
        self.fail(
            rule,
            MUST,
            format!("{request} answered with {}", opcode_name(opcode)),
        );
    }

    /// Whether the server offers what the case needs; if not, the case is unsupported (`why`).
    pub(super) fn needs(&mut self, offered: bool, why: &str) -> bool {
        if !offered {
            self.unsupported = Some(why.into());
        }
        offered
    }

    /// Keeps a finished connection's wire log, and the judge's findings in the server's bytes
    /// (but for a rule the case has already failed from the judge's word).
    pub(super) fn keep(&mut self, p: Probe) {
        let judged = p.judged(self.logs.len());
        let new: Vec<Check> = judged
            .into_iter()
            .filter(|j| {
                !self
                    .checks
                    .iter()
                    .any(|c| c.rule == j.rule && c.status == Status::Fail)
            })
            .collect();
        self.checks.extend(new);
        self.logs.push(p.log);
    }
}

pub(super) const CQL: (&str, &str) = ("CQL_VERSION", "3.0.0");

pub(super) const LZ4: (&str, &str) = ("COMPRESSION", "lz4");

pub(super) const MUST: Level = Level::Must;

pub(super) const SHOULD: Level = Level::Should;

/// A SELECT of `size` bytes or more (padded with a comment) that any server answers with rows.
pub(super) fn big_query(size: usize) -> String {
    let head = "SELECT release_version FROM system.local WHERE key = 'local' /* ";
    let pad = size.saturating_sub(head.len() + 3);
    format!("{head}{} */", "x".repeat(pad))
}

/// Whether the server lists lz4; the case is unsupported if not.
pub(super) fn needs_lz4(ctx: &Ctx, v: &mut Evidence) -> bool {
    v.needs(
        ctx.offers("COMPRESSION", "lz4"),
        "the server does not list lz4",
    )
}

/// Whether the server lists crc32c under FRAME_CHECKSUMS; the case is informational if not.
pub(super) fn needs_crc32c(ctx: &Ctx, v: &mut Evidence) -> bool {
    let offered = ctx.offers("FRAME_CHECKSUMS", "crc32c");
    if !offered {
        v.informational =
            Some("the server does not list crc32c in FRAME_CHECKSUMS: nothing to negotiate".into());
    }
    offered
}

/// A new connection as `version`; failing `rule` if there is none.
pub(super) fn connect(ctx: &Ctx, v: &mut Evidence, version: u8, rule: &str) -> Option<Probe> {
    match Probe::connect(&ctx.target, version, ctx.timeout, &ctx.supported) {
        Ok(p) => Some(p),
        Err(e) => {
            v.fail(rule, MUST, e);
            None
        }
    }
}

/// A new connection through OPTIONS and STARTUP with `options`, READY expected.
pub(super) fn ready(
    ctx: &Ctx,
    v: &mut Evidence,
    version: u8,
    options: &[(&str, &str)],
    rule: &str,
) -> Option<Probe> {
    let mut p = connect(ctx, v, version, rule)?;
    match p.handshake(options) {
        Ok((h, _)) if h.opcode == Opcode::Ready as u8 => Some(p),
        Ok((h, _)) if h.opcode == Opcode::Authenticate as u8 => {
            v.unsupported = Some("the server requires authentication".into());
            v.keep(p);
            None
        }
        Ok((h, b)) => {
            let e = error_text(&b);
            v.fail(
                rule,
                MUST,
                format!("STARTUP answered with {} {e}", opcode_name(h.opcode)),
            );
            v.keep(p);
            None
        }
        Err(e) => {
            v.fail(rule, MUST, format!("handshake: {e}"));
            v.keep(p);
            None
        }
    }
}

/// [`ready`] on v5 with CQL_VERSION, and COMPRESSION=lz4 when `lz4` (the case unsupported if
/// the server does not list lz4).
pub(super) fn ready_v5(ctx: &Ctx, v: &mut Evidence, lz4: bool, rule: &str) -> Option<Probe> {
    if lz4 && !needs_lz4(ctx, v) {
        return None;
    }
    ready(ctx, v, 5, if lz4 { &[CQL, LZ4] } else { &[CQL] }, rule)
}

/// A QUERY whose RESULT must come back; `what` describes the delivery for the messages.
pub(super) fn expect_result(
    p: &mut Probe,
    v: &mut Evidence,
    stream: i16,
    rule: &str,
    what: &str,
) -> bool {
    match p.wait(stream, true) {
        Ok((h, _, _)) if h.opcode == Opcode::Result as u8 => {
            v.pass(rule, MUST, format!("{what}: RESULT received"));
            true
        }
        Ok((h, b, _)) => {
            let e = body::read_error(&b)
                .map(|(c, m)| format!(": {c:#06x} {m}"))
                .unwrap_or_default();
            v.fail(
                rule,
                MUST,
                format!("{what}: answered with {}{e}", opcode_name(h.opcode)),
            );
            false
        }
        Err(e) => {
            v.fail(rule, MUST, format!("{what}: {e}"));
            false
        }
    }
}

pub(super) fn supported_ok(p: &mut Probe, v: &mut Evidence, stream: i16, rule: &str, what: &str) {
    match p.wait(stream, true) {
        Ok((h, _, _)) if h.opcode == Opcode::Supported as u8 => {
            v.pass(rule, MUST, format!("{what}: SUPPORTED received"))
        }
        Ok((h, _, _)) => v.wrong_answer(rule, &format!("{what}:"), h.opcode),
        Err(e) => v.fail(rule, MUST, format!("{what}: {e}")),
    }
}

/// After a refused STARTUP, an unframed v5 OPTIONS: no switch followed (`rule` passes) if it is
/// answered unframed or the server closes; an answer in frames, or bytes of neither kind, fail.
pub(super) fn no_switch(p: &mut Probe, v: &mut Evidence, rule: &str) {
    let options = envelope_bytes(5, 0, 2, Opcode::Options, &[]);
    p.note(Dir::C2s, "unframed OPTIONS stream 2 version 0x05");
    let _ = p.write(&options, 0);
    let after = p.aftermath(Duration::from_millis(1500));
    // An envelope in the 9-byte layout of v3 and later, or in the 8-byte layout of the retired
    // v1 and v2 (a server that stays bound to the retired version it refused answers in it).
    let header = match after.bytes.first() {
        Some(0x81 | 0x82) => 8,
        _ => 9,
    };
    let unframed = after.bytes.len() >= header
        && (0x81..=0x86).contains(&after.bytes[0])
        && after.bytes[header - 5] <= Opcode::AuthSuccess as u8;
    if unframed {
        let opcode = after.bytes[header - 5];
        let op = opcode_name(opcode);
        let detail = body::read_error(&after.bytes[header..])
            .ok()
            .filter(|_| opcode == Opcode::Error as u8)
            .map(|(c, m)| format!(" {c:#06x} {m}"))
            .unwrap_or_default();
        v.pass(
            rule,
            MUST,
            format!(
                "the connection stayed unframed: OPTIONS answered with an unframed {op} (version byte {:#04x}, {header}-byte header){detail}",
                after.bytes[0]
            ),
        );
    } else if after.bytes.is_empty() && after.closed {
        v.pass(
            rule,
            MUST,
            "the server closed the connection after the refusal",
        );
    } else if decode_as(&after.bytes, FrameSettings::default()).is_ok() {
        v.fail(
            rule,
            MUST,
            "the server switched to framing after refusing the STARTUP",
        );
    } else {
        v.fail(
            rule,
            MUST,
            format!(
                "{} unexpected bytes after the refusal, beginning {}",
                after.bytes.len(),
                hex(&after.bytes[..after.bytes.len().min(9)])
            ),
        );
    }
}

/// Bytes as spaced hex, as the spec shows them.
/// An ERROR body as the notes and failures quote it: its code in hex and its message; empty
/// when the body is not an ERROR's.
pub(super) fn error_text(body: &[u8]) -> String {
    body::read_error(body)
        .map(|(c, m)| format!("{c:#06x} {m}"))
        .unwrap_or_default()
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a case does to the server and judges.
pub type Run = fn(&mut Ctx, &mut Evidence);
