//! The probe's cases: what the reference, as a client, does to a server, and what the spec says
//! the server must do in return.

use super::client::{decode_as, query_body, Aftermath, Probe};
use crate::conformance::cases::{self, Case};
use crate::lz4_by_hand::{lz4_block_frame, one_match_block};
use crate::verdict::{Check, Level, Status};
use cqlframe::body;
use cqlframe::checksum::{crc24, PayloadChecksum};
use cqlframe::encoder::write_raw;
use cqlframe::envelope::{envelope_bytes, opcode_name, Opcode, FLAG_USE_BETA};
use cqlframe::format::{Format, FrameSettings};
use cqlframe::header::FrameHeader;
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
    fn offers(&self, key: &str, value: &str) -> bool {
        self.supported.iter().any(|(k, vs)| {
            k.eq_ignore_ascii_case(key) && vs.iter().any(|v| v.eq_ignore_ascii_case(value))
        })
    }

    fn lists(&self, key: &str) -> bool {
        self.supported
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(key))
    }

    fn beta(&self) -> bool {
        self.supported.iter().any(|(k, vs)| {
            k.eq_ignore_ascii_case("PROTOCOL_VERSIONS") && vs.iter().any(|v| v.starts_with("6/"))
        })
    }
}

/// What a case found.
#[derive(Default)]
pub struct Verdict {
    pub checks: Vec<Check>,
    pub unsupported: Option<String>,
    pub informational: Option<String>,
    pub logs: Vec<Vec<crate::wire_log::Line>>,
}

impl Verdict {
    fn check(&mut self, rule: &str, level: Level, ok: bool, message: impl Into<String>) {
        let status = if ok { Status::Pass } else { Status::Fail };
        self.checks.push(Check::new(rule, level, status, message));
    }

    fn pass(&mut self, rule: &str, level: Level, message: impl Into<String>) {
        self.check(rule, level, true, message);
    }

    fn fail(&mut self, rule: &str, level: Level, message: impl Into<String>) {
        self.check(rule, level, false, message);
    }

    /// Fails `rule`: `request` was answered with `opcode`, not what the case waits for.
    fn wrong_answer(&mut self, rule: &str, request: &str, opcode: u8) {
        self.fail(
            rule,
            MUST,
            format!("{request} answered with {}", opcode_name(opcode)),
        );
    }

    /// Whether the server offers what the case needs; if not, the case is unsupported (`why`).
    fn needs(&mut self, offered: bool, why: &str) -> bool {
        if !offered {
            self.unsupported = Some(why.into());
        }
        offered
    }

    /// Keeps a finished connection's wire log, and the judge's findings in the server's bytes
    /// (but for a rule the case has already failed from the judge's word).
    fn keep(&mut self, p: Probe) {
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

const CQL: (&str, &str) = ("CQL_VERSION", "3.0.0");
const LZ4: (&str, &str) = ("COMPRESSION", "lz4");
const MUST: Level = Level::Must;
const SHOULD: Level = Level::Should;

/// A SELECT of `size` bytes or more (padded with a comment) that any server answers with rows.
fn big_query(size: usize) -> String {
    let head = "SELECT release_version FROM system.local WHERE key = 'local' /* ";
    let pad = size.saturating_sub(head.len() + 3);
    format!("{head}{} */", "x".repeat(pad))
}

/// Whether the server lists lz4; the case is unsupported if not.
fn needs_lz4(ctx: &Ctx, v: &mut Verdict) -> bool {
    v.needs(
        ctx.offers("COMPRESSION", "lz4"),
        "the server does not list lz4",
    )
}

/// A new connection as `version`; failing `rule` if there is none.
fn connect(ctx: &Ctx, v: &mut Verdict, version: u8, rule: &str) -> Option<Probe> {
    match Probe::connect(&ctx.target, version, ctx.timeout, &ctx.supported) {
        Ok(p) => Some(p),
        Err(e) => {
            v.fail(rule, MUST, e);
            None
        }
    }
}

/// A new connection through OPTIONS and STARTUP with `options`, READY expected.
fn ready(
    ctx: &Ctx,
    v: &mut Verdict,
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
            let e = body::read_error(&b)
                .map(|(c, m)| format!("{c:#06x} {m}"))
                .unwrap_or_default();
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
fn ready_v5(ctx: &Ctx, v: &mut Verdict, lz4: bool, rule: &str) -> Option<Probe> {
    if lz4 && !needs_lz4(ctx, v) {
        return None;
    }
    ready(ctx, v, 5, if lz4 { &[CQL, LZ4] } else { &[CQL] }, rule)
}

/// A QUERY whose RESULT must come back; `what` describes the delivery for the messages.
fn expect_result(p: &mut Probe, v: &mut Verdict, stream: i16, rule: &str, what: &str) -> bool {
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

fn supported_ok(p: &mut Probe, v: &mut Verdict, stream: i16, rule: &str, what: &str) {
    match p.wait(stream, true) {
        Ok((h, _, _)) if h.opcode == Opcode::Supported as u8 => {
            v.pass(rule, MUST, format!("{what}: SUPPORTED received"))
        }
        Ok((h, _, _)) => v.wrong_answer(rule, &format!("{what}:"), h.opcode),
        Err(e) => v.fail(rule, MUST, format!("{what}: {e}")),
    }
}

// ---- negotiation ----------------------------------------------------------------------------

fn options(ctx: &mut Ctx, v: &mut Verdict) {
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

fn startup(ctx: &mut Ctx, v: &mut Verdict) {
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

fn startup_lz4(ctx: &mut Ctx, v: &mut Verdict) {
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

fn v6_beta(ctx: &mut Ctx, v: &mut Verdict) {
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

fn v6_without_flag(ctx: &mut Ctx, v: &mut Verdict) {
    if !v.needs(ctx.beta(), "PROTOCOL_VERSIONS lists no 6/v6-beta") {
        return;
    }
    let Some(mut p) = connect(ctx, v, 6, "ENV-5") else {
        return;
    };
    let startup = envelope_bytes(6, 0, 1, Opcode::Startup, &body::string_map(&[CQL]));
    p.note(
        "c2s",
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
    p.note("c2s", "unframed OPTIONS stream 2 version 0x05");
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

/// Whether the server lists crc32c under FRAME_CHECKSUMS; the case is informational if not.
fn needs_crc32c(ctx: &Ctx, v: &mut Verdict) -> bool {
    let offered = ctx.offers("FRAME_CHECKSUMS", "crc32c");
    if !offered {
        v.informational =
            Some("the server does not list crc32c in FRAME_CHECKSUMS: nothing to negotiate".into());
    }
    offered
}

fn frame_checksums(ctx: &mut Ctx, v: &mut Verdict) {
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

fn frame_checksums_lz4(ctx: &mut Ctx, v: &mut Verdict) {
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

fn frame_checksum_unknown(ctx: &mut Ctx, v: &mut Verdict) {
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

fn crc32_explicit(ctx: &mut Ctx, v: &mut Verdict) {
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

fn crc32c_anyway(ctx: &mut Ctx, v: &mut Verdict) {
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
                "note",
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

fn snappy(ctx: &mut Ctx, v: &mut Verdict) {
    refused(
        ctx,
        v,
        "NEG-2",
        &[CQL, ("COMPRESSION", "snappy")],
        "COMPRESSION=snappy on v5",
    );
}

fn repeated_key(ctx: &mut Ctx, v: &mut Verdict) {
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
fn refused(ctx: &Ctx, v: &mut Verdict, rule: &str, options: &[(&str, &str)], what: &str) {
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

fn startup_error(ctx: &mut Ctx, v: &mut Verdict) {
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
                    "note",
                    format!(
                        "STARTUP refused ({m}); framing OPTIONS uncompressed with CRC32 (LIFE-8)"
                    ),
                );
                refused = Some(p);
                break;
            }
            Ok((h, _)) => {
                p.note(
                    "note",
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

// ---- framing --------------------------------------------------------------------------------

fn pack(ctx: &mut Ctx, v: &mut Verdict) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL], "RECV-4") else {
        return;
    };
    let mut content = Vec::new();
    let mut streams = Vec::new();
    for i in 0..64 {
        let (s, e) = if i % 2 == 0 {
            p.envelope(Opcode::Options, &[])
        } else {
            p.envelope(
                Opcode::Query,
                &query_body("SELECT release_version FROM system.local"),
            )
        };
        streams.push(s);
        content.extend_from_slice(&e);
    }
    let frame = p.frame(&content, true);
    p.note(
        "c2s",
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

fn empty_frame(ctx: &mut Ctx, v: &mut Verdict) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL], "RECV-4") else {
        return;
    };
    let (s, e) = p.envelope(Opcode::Options, &[]);
    let mut bytes = p.frame(&[], true);
    bytes.extend_from_slice(&p.frame(&e, true));
    p.note("c2s", "an empty self-contained frame, then OPTIONS");
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

fn reserved_bits(ctx: &mut Ctx, v: &mut Verdict) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL], "FMT-12") else {
        return;
    };
    let (s, e) = p.envelope(Opcode::Options, &[]);
    let mut h = FrameHeader::new(Format::Uncompressed, e.len() as u32, 0, true, false);
    h.reserved = 0x10;
    h.crc24 = crc24(&h.word().to_le_bytes()[..3]);
    let mut bytes = Vec::new();
    write_raw(&h, &e, PayloadChecksum::Crc32.compute(&e), &mut bytes);
    p.note(
        "c2s",
        "OPTIONS in a frame with reserved header bit 23 set (CRC24 correct)",
    );
    let _ = p.write(&bytes, 0);
    supported_ok(&mut p, v, s, "FMT-12", "a frame with a reserved bit set");
    v.keep(p);
}

/// A large QUERY as a sequence cut at `piece` bytes.
fn large(ctx: &mut Ctx, v: &mut Verdict, lz4: bool, piece: usize, chop: usize) {
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
        "c2s",
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

fn large_131071(ctx: &mut Ctx, v: &mut Verdict) {
    large(ctx, v, false, 131_071, 0)
}

fn large_131060(ctx: &mut Ctx, v: &mut Verdict) {
    large(ctx, v, false, 131_060, 0)
}

fn large_lz4(ctx: &mut Ctx, v: &mut Verdict) {
    large(ctx, v, true, 131_071, 0)
}

fn chopped(ctx: &mut Ctx, v: &mut Verdict) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL], "RECV-4") else {
        return;
    };
    let (s1, e1) = p.envelope(Opcode::Options, &[]);
    let (s2, e2) = p.envelope(
        Opcode::Query,
        &query_body("SELECT release_version FROM system.local"),
    );
    let mut content = e1.clone();
    content.extend_from_slice(&e2);
    let frame = p.frame(&content, true);
    p.note(
        "c2s",
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

// ---- faults ---------------------------------------------------------------------------------

/// The server's answer to a fault: one framed ERROR (PROTOCOL_ERROR, stream 0), then a close
/// (ERR-1, ERR-4); anything else the faulty envelope got means the fault went unnoticed.
fn judge_fault(v: &mut Verdict, rule: &str, settings: FrameSettings, after: &Aftermath, ctx: &Ctx) {
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
fn fault(
    ctx: &mut Ctx,
    v: &mut Verdict,
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
fn inject(
    ctx: &Ctx,
    v: &mut Verdict,
    mut p: Probe,
    rule: &str,
    what: &str,
    build: &dyn Fn(&mut Probe) -> Vec<u8>,
) {
    let bytes = build(&mut p);
    p.note("c2s", format!("FAULT: {what} ({} bytes)", bytes.len()));
    let _ = p.write(&bytes, 0);
    let after = p.aftermath(ctx.fault_wait);
    judge_fault(v, rule, p.settings(), &after, ctx);
    v.keep(p);
}

fn options_frame(p: &mut Probe) -> Vec<u8> {
    let (_, e) = p.envelope(Opcode::Options, &[]);
    p.frame(&e, true)
}

fn fault_header_crc(ctx: &mut Ctx, v: &mut Verdict) {
    fault(
        ctx,
        v,
        "RECV-1",
        false,
        "OPTIONS frame with one CRC24 bit flipped",
        &|p| {
            let mut f = options_frame(p);
            f[3] ^= 0x01;
            f
        },
    )
}

fn fault_payload_crc(ctx: &mut Ctx, v: &mut Verdict) {
    fault(
        ctx,
        v,
        "RECV-2",
        false,
        "OPTIONS frame with one payload bit flipped (stream id)",
        &|p| {
            let mut f = options_frame(p);
            f[6 + 3] ^= 0x40;
            f
        },
    )
}

fn fault_checksum_bit(ctx: &mut Ctx, v: &mut Verdict) {
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

/// An uncompressed OPTIONS frame whose checksum bit names the other checksum than `trailer`, the
/// one the connection negotiated and the frame's trailer really is (CRC24 correct).
fn mismatched_options_frame(p: &mut Probe, trailer: PayloadChecksum) -> Vec<u8> {
    let (_, e) = p.envelope(Opcode::Options, &[]);
    let bit = trailer != PayloadChecksum::Crc32c;
    let h = FrameHeader::new(Format::Uncompressed, e.len() as u32, 0, true, bit);
    let mut out = Vec::new();
    write_raw(&h, &e, trailer.compute(&e), &mut out);
    out
}

fn fault_checksum_bit_crc32c(ctx: &mut Ctx, v: &mut Verdict) {
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

fn fault_lz4_malformed(ctx: &mut Ctx, v: &mut Verdict) {
    fault(
        ctx,
        v,
        "LZ4-4",
        true,
        "LZ4 block whose match refers before the start of the output (checksums correct)",
        &|p| {
            // 1 literal, then a match at offset 255 (there is 1 byte of history), then 5 literals.
            let block = [0x10, b'A', 0xff, 0x00, 0x50, b'x', b'x', b'x', b'x', b'x'];
            lz4_block_frame(p.settings(), &block, 10)
        },
    )
}

fn fault_lz4_length(ctx: &mut Ctx, v: &mut Verdict) {
    fault(
        ctx,
        v,
        "LZ4-4",
        true,
        "LZ4 block of an OPTIONS envelope (9 bytes) declared as 16 bytes uncompressed",
        &|p| {
            let (_, e) = p.envelope(Opcode::Options, &[]);
            let block = lz4_flex::block::compress(&e);
            lz4_block_frame(p.settings(), &block, e.len() as u32 + 7)
        },
    )
}

/// A fault of one LZ4 block holding `count` OPTIONS envelopes (9 bytes each, alike but for
/// their stream ids in bytes 2 and 3) with one match of `length` bytes at `start`, taken from
/// one envelope (9 bytes) back. A server that does not check the block answers SUPPORTED.
fn options_in_one_match_block(
    ctx: &mut Ctx,
    v: &mut Verdict,
    rule: &str,
    what: &str,
    (count, start, length): (usize, usize, usize),
) {
    fault(ctx, v, rule, true, what, &|p| {
        let content: Vec<u8> = (0..count)
            .flat_map(|_| p.envelope(Opcode::Options, &[]).1)
            .collect();
        let block = one_match_block(&content, start, 9, length);
        lz4_block_frame(p.settings(), &block, content.len() as u32)
    })
}

fn fault_lz4_ends_after_match(ctx: &mut Ctx, v: &mut Verdict) {
    options_in_one_match_block(ctx, v, "LZ4-4", "two OPTIONS envelopes in one LZ4 block that ends right after a match (the second's last 5 bytes from 9 back; checksums correct)", (2, 13, 5));
}

fn fault_lz4_last_match_too_late(ctx: &mut Ctx, v: &mut Verdict) {
    options_in_one_match_block(ctx, v, "LZ4-6", "three OPTIONS envelopes in one LZ4 block whose one match starts 11 bytes before the end (LZ4 asks for 12; 7 closing literals, checksums correct)", (3, 16, 4));
}

fn fault_interleave(ctx: &mut Ctx, v: &mut Verdict) {
    fault(ctx, v, "RECV-8", false, "first frame of a 300 KB QUERY sequence, a self-contained OPTIONS frame, then the rest of the sequence", &|p| {
        let (_, q) = p.envelope(Opcode::Query, &query_body(&big_query(300_000)));
        let (_, o) = p.envelope(Opcode::Options, &[]);
        let mut out = Vec::new();
        for (i, c) in q.chunks(131_071).enumerate() {
            out.extend_from_slice(&p.frame(c, false));
            if i == 0 {
                out.extend_from_slice(&p.frame(&o, true));
            }
        }
        out
    })
}

fn fault_overshoot(ctx: &mut Ctx, v: &mut Verdict) {
    fault(
        ctx,
        v,
        "RECV-7",
        false,
        "a 200 KB QUERY sequence whose last frame carries 100 bytes past the envelope",
        &|p| {
            let (_, mut q) = p.envelope(Opcode::Query, &query_body(&big_query(200_000)));
            q.extend_from_slice(&[0x55; 100]);
            let mut out = Vec::new();
            for c in q.chunks(131_071) {
                out.extend_from_slice(&p.frame(c, false));
            }
            out
        },
    )
}

fn fault_empty_continuation(ctx: &mut Ctx, v: &mut Verdict) {
    fault(
        ctx,
        v,
        "RECV-10",
        false,
        "a 200 KB QUERY sequence with an empty non-self-contained frame after its first frame",
        &|p| {
            let (_, q) = p.envelope(Opcode::Query, &query_body(&big_query(200_000)));
            let mut out = Vec::new();
            for (i, c) in q.chunks(131_071).enumerate() {
                out.extend_from_slice(&p.frame(c, false));
                if i == 0 {
                    out.extend_from_slice(&p.frame(&[], false));
                }
            }
            out
        },
    )
}

fn fault_partial_envelope(ctx: &mut Ctx, v: &mut Verdict) {
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

fn fault_negative_length(ctx: &mut Ctx, v: &mut Verdict) {
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

fn fault_unframed(ctx: &mut Ctx, v: &mut Verdict) {
    fault(
        ctx,
        v,
        "LIFE-7",
        false,
        "an unframed OPTIONS envelope after the switch",
        &|p| p.envelope(Opcode::Options, &[]).1,
    )
}

/// The probe's catalogue (conformance/probe.toml, built into the command), grouped by spec
/// section.
pub fn catalogue() -> Vec<Case> {
    cases::parse(include_str!("../../../../conformance/probe.toml"))
        .expect("conformance/probe.toml is a valid catalogue")
        .cases
}

/// What a case does to the server and judges.
pub type Run = fn(&mut Ctx, &mut Verdict);

/// The code of each case of the catalogue, by id.
pub const RUNS: &[(&str, Run)] = &[
    ("probe.options", options),
    ("probe.startup", startup),
    ("probe.startup-lz4", startup_lz4),
    ("probe.v6-beta", v6_beta),
    ("probe.v6-beta-without-flag", v6_without_flag),
    ("probe.frame-checksums", frame_checksums),
    ("probe.frame-checksum-crc32", crc32_explicit),
    ("probe.crc32c-asked-anyway", crc32c_anyway),
    ("probe.compression-snappy", snappy),
    ("probe.startup-repeated-key", repeated_key),
    ("probe.startup-error-framing", startup_error),
    ("probe.pack", pack),
    ("probe.empty-frame", empty_frame),
    ("probe.reserved-bits", reserved_bits),
    ("probe.large-131071", large_131071),
    ("probe.large-131060", large_131060),
    ("probe.large-lz4", large_lz4),
    ("probe.chopped", chopped),
    ("probe.fault-header-crc", fault_header_crc),
    ("probe.fault-payload-crc", fault_payload_crc),
    ("probe.fault-checksum-bit", fault_checksum_bit),
    ("probe.fault-lz4-malformed", fault_lz4_malformed),
    ("probe.fault-lz4-length", fault_lz4_length),
    (
        "probe.fault-lz4-ends-after-match",
        fault_lz4_ends_after_match,
    ),
    (
        "probe.fault-lz4-last-match-too-late",
        fault_lz4_last_match_too_late,
    ),
    ("probe.fault-interleave", fault_interleave),
    ("probe.fault-overshoot", fault_overshoot),
    ("probe.fault-empty-continuation", fault_empty_continuation),
    ("probe.fault-partial-envelope", fault_partial_envelope),
    ("probe.fault-negative-length", fault_negative_length),
    ("probe.fault-unframed", fault_unframed),
    ("probe.frame-checksums-lz4", frame_checksums_lz4),
    ("probe.frame-checksum-unknown", frame_checksum_unknown),
    ("probe.fault-checksum-bit-crc32c", fault_checksum_bit_crc32c),
];

/// The code of case `id`.
pub fn run_of(id: &str) -> Option<Run> {
    RUNS.iter().find(|(i, _)| *i == id).map(|&(_, run)| run)
}
