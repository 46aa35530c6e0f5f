//! The judge of one connection: both directions' bytes in, in the order they were sent, and
//! [`Finding`]s out.
//!
//! A connection seen from its start goes through a pair of [`Connection`]s: a server-role one
//! receives what the client sent, a client-role one what the server sent, and each is shown
//! the other direction's handshake envelopes (as if it had sent them), so both switch to
//! framing exactly where the real ends do, with what STARTUP negotiated. What the server node
//! accepts is given by the caller when it knows it (the conformance server does), or learned
//! from a SUPPORTED of the node, on the connection or heard on another ([`Judge::heard`], the
//! probe's); a SUPPORTED without `FRAME_CHECKSUMS` makes the server side one that ignores
//! `FRAME_CHECKSUM`, as such a server does. Beside what each receiver refuses, the judge checks
//! the sender rules of the handshake: NEG-4 in the client's STARTUP, and the server's answer to
//! it (NEG-2, NEG-6, NEG-9: a STARTUP taken that had to be refused); and it names the sender's
//! rule behind a receiver's where the handshake decides it: LIFE-8 for a frame of what a STARTUP
//! refused with ERROR asked for, NEG-4 for the checksum bits an old server's READY left apart. A direction can also be judged
//! from a known frame boundary on ([`Judge::resume`]), for captures joined midway or resumed
//! after a gap.

use super::finding::{Direction, Finding};
use super::sender::{SenderChecks, Stats};
use super::unjudged::Unjudged;
use crate::verdict::Level;
use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::connection::{
    framed_envelope_fault, negotiate, requested, Connection, ConnectionEvent, Negotiated, Role,
    ServerOptions, FIRST_FRAMED_VERSION,
};
use cqlframe::decoder::{Decoder, Event};
use cqlframe::encoder::SplitPolicy;
use cqlframe::envelope::{opcode_name, Envelope, EnvelopeHeader, Opcode, RESPONSE_BIT};
use cqlframe::error::ErrorKind;
use cqlframe::format::{parse_checksum, Format, FrameSettings};
use cqlframe::FramingError;

/// Unframed client bytes kept to replay into a server side re-created from SUPPORTED.
const REPLAY_LIMIT: usize = 1 << 20;

/// How one direction is being judged.
#[derive(Debug)]
enum Mode {
    /// Through the pair of Connections, from the first byte.
    Paired,
    /// From a frame boundary on, with the frame format known; the protocol version is learned
    /// from the first envelope.
    Framed {
        decoder: Box<Decoder>,
        version: Option<u8>,
    },
    /// Not judged any more: a fatal error (RECV-11), or a gap before the switch.
    Stopped,
}

/// The client's STARTUP, as far as the server's response to it is judged.
#[derive(Debug)]
struct Startup {
    /// Its first byte in the client's stream.
    offset: u64,
    version: u8,
    stream: i16,
    /// Its options; `None` for a malformed body.
    options: Option<Vec<(String, String)>>,
}

#[derive(Debug)]
struct Side {
    mode: Mode,
    checks: SenderChecks,
    /// Client to server: the server's side stopped before the STARTUP response (see
    /// [`Judge::orphan`]); judged through the bytes received with the STARTUP, then stopped.
    orphaned: bool,
}

/// The judge of one connection.
#[derive(Debug)]
pub struct Judge {
    max_body: u32,
    /// Server role: receives the client's bytes.
    server: Connection,
    /// Client role: receives the server's bytes.
    client: Connection,
    node: Node,
    /// STARTUP seen: later client envelopes are not shown to `client`.
    startup: Option<Startup>,
    /// The STARTUP response has been shown to `server`.
    responded: bool,
    /// What a STARTUP answered with ERROR asked for: after it both sides frame uncompressed
    /// with CRC32 (LIFE-8), and a frame of what it asked is its sender's LIFE-8.
    refused: Option<FrameSettings>,
    /// Unframed client bytes so far, to replay into a re-created `server`.
    replay: Option<Vec<u8>>,
    negotiated: Option<Negotiated>,
    /// What the handshake left undecided so far (JUDGE-11).
    unjudged: Vec<Unjudged>,
    sides: [Side; 2],
}

impl Judge {
    /// A connection seen from its first byte; the node's options are learned from SUPPORTED.
    pub fn new(max_body: u32) -> Self {
        Judge::paired(None, max_body)
    }

    /// A connection to a node that accepts `node` (whatever its SUPPORTED says), seen from its
    /// first byte. NEG-4 is judged on what the client heard, not on what the node accepts: until
    /// a SUPPORTED of the node is seen on the connection or [`Judge::heard`] on another, nothing
    /// is listed, and a `FRAME_CHECKSUM` other than `crc32` breaks it.
    pub fn for_node(node: ServerOptions, max_body: u32) -> Self {
        Judge::paired(Some(node), max_body)
    }

    /// A connection joined midway: nothing is judged until [`Judge::resume`].
    pub fn joined(max_body: u32) -> Self {
        let mut judge = Judge::paired(None, max_body);
        for side in &mut judge.sides {
            side.mode = Mode::Stopped;
        }
        judge
    }

    fn paired(node: Option<ServerOptions>, max_body: u32) -> Self {
        let listed = node.as_ref().map(|_| Vec::new());
        Judge {
            max_body,
            server: Connection::server(
                node.clone().unwrap_or_default(),
                max_body,
                SplitPolicy::SERVER,
            ),
            client: Connection::new(Role::Client, max_body, SplitPolicy::DRIVERS),
            node: Node {
                told: node.is_some(),
                known: node,
                listed,
            },
            startup: None,
            responded: false,
            refused: None,
            replay: Some(Vec::new()),
            negotiated: None,
            unjudged: Vec::new(),
            sides: Direction::BOTH.map(|d| Side {
                mode: Mode::Paired,
                checks: SenderChecks::new(d),
                orphaned: false,
            }),
        }
    }

    /// The handshake's outcome, once a side has switched to framing.
    pub fn negotiated(&self) -> Option<Negotiated> {
        self.negotiated
    }

    /// What the judge could not decide on this connection (JUDGE-11): a FRAME_CHECKSUM judged
    /// against nothing known of the node, and a STARTUP that could switch left unanswered.
    pub fn unjudged(&self) -> Vec<Unjudged> {
        let mut all = self.unjudged.clone();
        let unanswered = |s: &&Startup| !self.responded && s.version >= FIRST_FRAMED_VERSION;
        if let Some(s) = self.startup.as_ref().filter(unanswered) {
            all.push(Unjudged::StartupUnanswered { offset: s.offset });
        }
        all
    }

    pub fn stats(&self, d: Direction) -> &Stats {
        &self.sides[d.index()].checks.stats
    }

    /// Whether `d` is no longer judged.
    pub fn stopped(&self, d: Direction) -> bool {
        matches!(self.sides[d.index()].mode, Mode::Stopped)
    }

    /// The frame settings and protocol version `d` is decoded with, once framed.
    pub fn framing(&self, d: Direction) -> Option<(FrameSettings, Option<u8>)> {
        match &self.sides[d.index()].mode {
            Mode::Paired => self
                .receiver(d)
                .negotiated()
                .map(|n| (n.settings, Some(n.version))),
            Mode::Framed { decoder, version } => Some((decoder.settings(), *version)),
            Mode::Stopped => None,
        }
    }

    /// Judges `d` from stream offset `offset` on, a frame boundary where a self-contained frame
    /// starts, framed with `settings` (a capture joined midway, or resumed after a gap).
    pub fn resume(
        &mut self,
        d: Direction,
        settings: FrameSettings,
        version: Option<u8>,
        offset: u64,
    ) {
        let side = &mut self.sides[d.index()];
        side.checks.restart();
        side.mode = Mode::Framed {
            decoder: Box::new(Decoder::starting_at(settings, self.max_body, offset)),
            version,
        };
    }

    /// Stops judging `d` (bytes are missing before the switch: nothing can be said after).
    pub fn stop(&mut self, d: Direction) {
        self.sides[d.index()].mode = Mode::Stopped;
    }

    /// Judges the next `bytes` that `d`'s sender wrote; findings are appended to `out`.
    pub fn receive(&mut self, d: Direction, bytes: &[u8], out: &mut Vec<Finding>) {
        // A v4 STARTUP switches nothing: its client's side is judged on, unframed.
        let awaits = self
            .startup
            .as_ref()
            .is_some_and(|s| s.version >= FIRST_FRAMED_VERSION);
        if self.sides[d.index()].orphaned && awaits {
            self.stop(d);
        }
        let start = out.len();
        match self.sides[d.index()].mode {
            Mode::Stopped => return,
            Mode::Paired => self.paired_receive(d, bytes, out),
            Mode::Framed { .. } => self.framed_receive(d, bytes, out),
        }
        if out[start..].iter().any(|f| f.fatal) {
            self.stop(d);
            self.orphan(d.other());
        }
    }

    /// The other direction of `d` stopped. Before the switch the client's side learns from the
    /// server's STARTUP response where its sender switches: without it, judging the client
    /// further would take its framed bytes for bytes sent before that response (LIFE-6), so it
    /// is judged through the bytes received with its STARTUP (one segment, in a capture: bytes
    /// written with the STARTUP were sent before any response could come, and break LIFE-6) and
    /// stops there. (The server's side goes on after the client's stopped: its answers to the
    /// requests already seen still pair with them.)
    fn orphan(&mut self, d: Direction) {
        if d == Direction::ClientToServer
            && matches!(self.sides[d.index()].mode, Mode::Paired)
            && !self.responded
        {
            self.sides[d.index()].orphaned = true;
        }
    }

    /// `d`'s sender closed its side: inside a frame, a sequence or an envelope is RECV-9.
    pub fn finish(&mut self, d: Direction, out: &mut Vec<Finding>) {
        let result = match &mut self.sides[d.index()].mode {
            Mode::Paired => match d {
                Direction::ClientToServer => self.server.finish(),
                Direction::ServerToClient => self.client.finish(),
            },
            Mode::Framed { decoder, .. } => decoder.finish(),
            Mode::Stopped => Ok(()),
        };
        if let Err(e) = result {
            out.push(Finding::error(&e, d, true));
            self.stop(d);
        }
    }

    fn receiver(&self, d: Direction) -> &Connection {
        match d {
            Direction::ClientToServer => &self.server,
            Direction::ServerToClient => &self.client,
        }
    }

    /// Feeds `d`'s receiver in the pair; the handshake envelopes are shown to the other side.
    fn paired_receive(&mut self, d: Direction, bytes: &[u8], out: &mut Vec<Finding>) {
        let client_side = d == Direction::ClientToServer;
        if client_side && self.server.negotiated().is_none() {
            if let Some(r) = &mut self.replay {
                if r.len() + bytes.len() <= REPLAY_LIMIT {
                    r.extend_from_slice(bytes);
                } else {
                    self.replay = None;
                }
            }
        }
        let Judge {
            max_body,
            server,
            client,
            node,
            unjudged,
            startup,
            responded,
            refused,
            replay,
            negotiated,
            sides,
        } = self;
        let checks = &mut sides[d.index()].checks;
        // `peer` is the other side's Connection, shown the handshake envelopes.
        let (receiver, peer) = if client_side {
            (server, client)
        } else {
            (client, server)
        };
        let mut frame_at = 0;
        // Whether the receiver has switched: a refused envelope is unframed before that.
        let mut framed = receiver.negotiated().is_some();
        let result = receiver.receive(bytes, |event| {
            match event {
                // A version probe: the server answers it with its refusal; no rule is broken.
                ConnectionEvent::Refused { envelope, .. } => {
                    checks.stats.unframed_envelopes += 1;
                    if client_side {
                        await_refused(peer, &envelope);
                    }
                }
                ConnectionEvent::Unframed { offset, envelope } => {
                    checks.stats.unframed_envelopes += 1;
                    let h = envelope.header;
                    let show = if client_side {
                        // The client's envelopes up to and including the STARTUP.
                        let before_startup = startup.is_none();
                        if before_startup && h.opcode == Opcode::Startup as u8 {
                            let s = Startup {
                                offset,
                                version: h.protocol_version(),
                                stream: h.stream,
                                options: body::read_string_map(envelope.body).ok(),
                            };
                            match node.listed.as_deref() {
                                Some(listed) => {
                                    out.extend(unlisted_checksum(&envelope, listed, offset))
                                }
                                None => unjudged.extend(s.unjudged_checksum("NEG-4", offset)),
                            }
                            *startup = Some(s);
                        }
                        before_startup
                    } else {
                        // What the node accepts shows in any SUPPORTED before the switch
                        // (one answering an OPTIONS sent before STARTUP may come after it),
                        // learned before the envelopes after it are shown to the server side:
                        // a READY in the same write switches the re-created one.
                        if h.opcode == Opcode::Supported as u8 && !*responded {
                            let map = body::read_string_multimap(envelope.body);
                            if let Some(options) = node.hear(&map.unwrap_or_default()) {
                                if let Some(bytes) = replay {
                                    *peer = replayed(options, *max_body, bytes);
                                }
                            }
                        }
                        // The server's envelopes up to the STARTUP response, or up to the
                        // refusal of the STARTUP's version (LIFE-11).
                        let show = !*responded;
                        if let Some(s) = startup
                            .as_ref()
                            .filter(|s| show && ends_startup_wait(s, &h))
                        {
                            *responded = true;
                            out.extend(missed_refusal(s, node.known.as_ref(), &envelope, offset));
                            let answers = h.version == s.version | RESPONSE_BIT;
                            if node.known.is_none() && answers && !keeps_neg6(s, &envelope) {
                                unjudged.extend(s.unjudged_checksum("NEG-6", offset));
                            }
                            if answers && h.opcode == Opcode::Error as u8 {
                                *refused = s.options.as_deref().map(requested);
                            }
                        }
                        show
                    };
                    if show {
                        let mut sink = Vec::new();
                        let _ = peer.send(&[&envelope.to_unframed_bytes()], &mut sink);
                    }
                }
                ConnectionEvent::Frame(f) => {
                    frame_at = f.offset;
                    checks.frame(f, out);
                }
                ConnectionEvent::Envelope(e) => checks.envelope(&e, frame_at, out),
                ConnectionEvent::Rejected { envelope, error } => {
                    out.push(Finding::error(&error, d, false));
                    if framed {
                        checks.envelope(&envelope, frame_at, out);
                    } else {
                        checks.stats.unframed_envelopes += 1;
                        if client_side {
                            await_refused(peer, &envelope);
                        }
                    }
                }
                ConnectionEvent::Switched { negotiated: n, .. } => {
                    framed = true;
                    negotiated.get_or_insert(n);
                }
                _ => {}
            }
            Ok(())
        });
        if let Err(e) = result {
            let mut finding = Finding::error(&e, d, true);
            // The client side framed what it asked (READY or AUTHENTICATE, not an ERROR).
            let client = if client_side { peer } else { receiver };
            let took = client
                .negotiated()
                .is_some_and(|n| n.settings.checksum != PayloadChecksum::Crc32);
            if matches!(e.kind, ErrorKind::ChecksumBitMismatch { .. })
                && took
                && checksum_ignored(node.known.as_ref(), startup.as_ref())
            {
                finding.sender_rule = Some("NEG-4");
            }
            if refused.is_some_and(|asked| framed_as_refused(&e.kind, asked)) {
                finding.sender_rule = Some("LIFE-8");
            }
            out.push(finding);
        }
    }

    /// What a SUPPORTED from the same node said, on this connection or another (NEG-4 counts
    /// both): the `FRAME_CHECKSUM` values it lists, and acts on unless the caller said what the
    /// node accepts.
    pub fn heard(&mut self, map: &[(String, Vec<String>)]) {
        if let (Some(options), Some(bytes)) = (self.node.hear(map), &self.replay) {
            self.server = replayed(options, self.max_body, bytes);
        }
    }

    /// Decodes `d` from a frame boundary: the receiver's checks without the handshake.
    fn framed_receive(&mut self, d: Direction, bytes: &[u8], out: &mut Vec<Finding>) {
        let side = &mut self.sides[d.index()];
        let Mode::Framed { decoder, version } = &mut side.mode else {
            return;
        };
        let checks = &mut side.checks;
        let role = match d {
            Direction::ClientToServer => Role::Server,
            Direction::ServerToClient => Role::Client,
        };
        let mut frame_at = 0;
        let result = decoder.decode(bytes, |event| {
            match event {
                Event::Frame(f) => {
                    frame_at = f.offset;
                    checks.frame(f, out);
                }
                Event::Envelope(e) => {
                    let v = *version.get_or_insert(e.header.protocol_version());
                    if let Some(kind) = framed_envelope_fault(role, v, &e.header) {
                        let error = FramingError::new(kind, frame_at);
                        out.push(Finding::error(&error, d, false));
                    }
                    checks.envelope(&e, frame_at, out);
                }
                _ => {}
            }
            Ok(())
        });
        if let Err(e) = result {
            out.push(Finding::error(&e, d, true));
        }
    }
}

/// What the server node is known to accept.
#[derive(Debug)]
struct Node {
    /// The caller's word, else learned from SUPPORTED.
    known: Option<ServerOptions>,
    /// The caller said what the node accepts: SUPPORTED changes that not.
    told: bool,
    /// The `FRAME_CHECKSUMS` values the client has heard the node list (NEG-4), once known:
    /// empty when its SUPPORTED had none, or when the caller knows no SUPPORTED was heard.
    listed: Option<Vec<String>>,
}

impl Node {
    /// Learns from a SUPPORTED's multimap which `FRAME_CHECKSUM` values the node lists and acts
    /// on; what a server side re-created from it accepts, unless the caller's word stands.
    fn hear(&mut self, map: &[(String, Vec<String>)]) -> Option<ServerOptions> {
        let listed = map
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("FRAME_CHECKSUMS"))
            .map(|(_, v)| v.clone());
        self.listed = Some(listed.clone().unwrap_or_default());
        if self.told {
            return None;
        }
        let options = ServerOptions {
            lz4: true,
            checksums: listed.map(|v| v.iter().filter_map(|name| parse_checksum(name)).collect()),
        };
        self.known = Some(options.clone());
        Some(options)
    }
}

/// A server side accepting `options` that has received the client's unframed bytes so far.
fn replayed(options: ServerOptions, max_body: u32, client_bytes: &[u8]) -> Connection {
    let mut server = Connection::server(options, max_body, SplitPolicy::SERVER);
    let _ = server.receive(client_bytes, |_| Ok(()));
    server
}

/// A client request the server-role side refused on its own before the switch (a version probe,
/// ENV-2, ENV-5): the server answers it all the same, so the client-role side awaits that answer
/// (LIFE-13; [`Connection::await_answer`] does so only before STARTUP).
fn await_refused(client: &mut Connection, envelope: &Envelope<'_>) {
    let h = envelope.header;
    if !h.is_response() {
        client.await_answer(h.stream, h.protocol_version());
    }
}

/// Whether the server's unframed envelope `h` ends the wait for the response to `startup`: the
/// response on its stream (LIFE-5, LIFE-8), or an ERROR in another version, on any stream
/// (LIFE-11).
fn ends_startup_wait(startup: &Startup, h: &EnvelopeHeader) -> bool {
    let op = Opcode::from_u8(h.opcode);
    let refusal = op == Some(Opcode::Error) && h.version != startup.version | RESPONSE_BIT;
    let response = h.stream == startup.stream
        && matches!(
            op,
            Some(Opcode::Ready | Opcode::Authenticate | Opcode::Error)
        );
    refusal || response
}

/// NEG-2, NEG-6, NEG-9: the server's `response` to `startup` (in its version, on its stream)
/// takes a STARTUP that it must refuse with ERROR (PROTOCOL_ERROR), or refuses it with another
/// error code. Judged with what is known of the node; without it, only what every server must
/// refuse (a COMPRESSION other than `lz4`, a repeated key), not the checksums it accepts.
fn missed_refusal(
    startup: &Startup,
    node: Option<&ServerOptions>,
    response: &Envelope<'_>,
    offset: u64,
) -> Option<Finding> {
    let h = response.header;
    if h.version != startup.version | RESPONSE_BIT {
        return None;
    }
    let unknown = ServerOptions {
        lz4: true,
        checksums: None,
    };
    let options = startup.options.as_deref()?;
    let refusal = negotiate(startup.version, options, node.unwrap_or(&unknown)).err()?;
    let answer = match body::read_error_code(response.body) {
        _ if h.opcode != Opcode::Error as u8 => opcode_name(h.opcode),
        Ok(body::PROTOCOL_ERROR) => return None,
        Ok(code) => format!("ERROR {code:#06x}"),
        Err(_) => "a malformed ERROR".to_string(),
    };
    Some(Finding::sender(
        refusal.rule(),
        Level::Must,
        Direction::ServerToClient,
        offset,
        format!("the server answered with {answer} a STARTUP it must refuse with ERROR (PROTOCOL_ERROR): {refusal}"),
    ))
}

/// Whether `answer` keeps NEG-6 whatever the node accepts, so that nothing is left undecided:
/// an ERROR (PROTOCOL_ERROR) is the refusal NEG-6 asks for, and a STARTUP of v4 or lower has its
/// `FRAME_CHECKSUM` ignored (NEG-7).
fn keeps_neg6(startup: &Startup, answer: &Envelope<'_>) -> bool {
    let refused = answer.header.opcode == Opcode::Error as u8
        && body::read_error_code(answer.body) == Ok(body::PROTOCOL_ERROR);
    refused || startup.version < FIRST_FRAMED_VERSION
}

/// Whether the frame that failed with `kind`, after an ERROR answered a STARTUP that asked for
/// `asked`, is a frame of what that STARTUP asked, where both sides frame uncompressed with
/// CRC32 (LIFE-8): a header that verifies as an LZ4 one when LZ4 was asked, or a checksum bit
/// set when CRC32C was. Its sender framed as if the STARTUP had been taken.
fn framed_as_refused(kind: &ErrorKind, asked: FrameSettings) -> bool {
    match *kind {
        ErrorKind::HeaderCrcMismatch { other_format, .. } => {
            other_format && asked.format == Format::Lz4
        }
        ErrorKind::ChecksumBitMismatch { bit, .. } => bit && asked.checksum_bit(),
        _ => false,
    }
}

/// Whether `startup` asked for a `FRAME_CHECKSUM` other than `crc32` of a node known to ignore the
/// key (its SUPPORTED had no `FRAME_CHECKSUMS`): the node frames with CRC32 as it must, the
/// client as it asked, and each receiver fails the other's first frame on its checksum bit
/// (RECV-3). Neither sender broke FMT-13 by its own negotiation: the client broke NEG-4.
fn checksum_ignored(node: Option<&ServerOptions>, startup: Option<&Startup>) -> bool {
    let asked = startup.and_then(|s| s.options.as_deref()).and_then(|o| {
        o.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("FRAME_CHECKSUM"))
    });
    node.is_some_and(|n| n.checksums.is_none())
        && asked.is_some_and(|(_, v)| !v.eq_ignore_ascii_case("crc32"))
}

impl Startup {
    /// `rule` cannot be judged at `offset` for want of what the node accepts: the STARTUP asks
    /// for a `FRAME_CHECKSUM` other than `crc32` (JUDGE-10, JUDGE-11).
    fn unjudged_checksum(&self, rule: &'static str, offset: u64) -> Option<Unjudged> {
        let (_, value) = self
            .options
            .as_ref()?
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("FRAME_CHECKSUM"))?;
        (!value.eq_ignore_ascii_case("crc32")).then(|| Unjudged::Checksum {
            rule,
            offset,
            value: value.clone(),
        })
    }
}

/// NEG-4: a STARTUP asks for a `FRAME_CHECKSUM` other than `crc32` that the node did not list
/// (judged only when what the node listed is known).
fn unlisted_checksum(startup: &Envelope<'_>, listed: &[String], offset: u64) -> Option<Finding> {
    let options = body::read_string_map(startup.body).ok()?;
    let (_, value) = options
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("FRAME_CHECKSUM"))?;
    let allowed =
        value.eq_ignore_ascii_case("crc32") || listed.iter().any(|l| l.eq_ignore_ascii_case(value));
    (!allowed).then(|| {
        Finding::sender(
            "NEG-4",
            Level::Must,
            Direction::ClientToServer,
            offset,
            format!(
                "STARTUP asks FRAME_CHECKSUM={value}, which the node's FRAME_CHECKSUMS did not list ({})",
                if listed.is_empty() { "none".to_string() } else { listed.join(", ") }
            ),
        )
    })
}
