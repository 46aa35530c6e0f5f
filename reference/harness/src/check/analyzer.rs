//! The CQL side of one TCP connection: the two reassembled byte streams checked against the
//! spec, the way each receiver would check them.
//!
//! A connection seen from its start goes through a pair of [`Connection`]s: a server-role one
//! receives what the client sent, a client-role one what the server sent, and each is shown
//! the other direction's handshake envelopes (as if it had sent them), so both switch to
//! framing exactly where the real ends did, with what STARTUP negotiated (a SUPPORTED without
//! `FRAME_CHECKSUMS` makes the server side one that ignores `FRAME_CHECKSUM`, as such a server
//! does). A connection joined midway has no handshake to follow: each direction is searched for
//! a frame whose CRC24 and payload checksum verify, trying both formats (the checksum bit says
//! which payload checksum), and decoding starts at the next self-contained frame.

use crate::conformance::server::sender_rule;
use crate::pcap::tcp::Delivery;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::connection::{Connection, ConnectionEvent, Role, ServerOptions};
use cqlframe::decoder::{Decoder, Event};
use cqlframe::encoder::{SplitPolicy, SEQUENCE_FILL_FLOOR};
use cqlframe::envelope::{
    Envelope, Opcode, ENVELOPE_HEADER_LEN, FLAG_COMPRESSION, FLAG_USE_BETA, RESPONSE_BIT,
};
use cqlframe::format::{parse_checksum, Format, FrameSettings, MAX_PAYLOAD};
use cqlframe::frame_decoder::Frame;
use cqlframe::header::FrameHeader;
use cqlframe::FramingError;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};

/// Index of each direction.
pub const C2S: usize = 0;
pub const S2C: usize = 1;

const DIRECTION: [&str; 2] = ["client-to-server", "server-to-client"];
const SENDER: [&str; 2] = ["client", "server"];

/// Violations of one rule kept per direction; the rest are only counted.
const KEEP_PER_RULE: u32 = 10;
/// Stream bytes for which the packet that carried them is remembered.
const PACKET_WINDOW: u64 = 4 << 20;
/// Unframed handshake bytes kept to replay into a server side re-created from SUPPORTED.
const REPLAY_LIMIT: usize = 1 << 20;
/// Bytes searched for a first frame before a joined direction is given up.
const SYNC_LIMIT: u64 = 16 << 20;
/// Largest frame: LZ4 header, payload, trailer.
const MAX_FRAME: usize = 8 + MAX_PAYLOAD + 4;

/// A rule broken in a capture.
#[derive(Clone, Debug, Serialize)]
pub struct Violation {
    pub connection: usize,
    pub direction: &'static str,
    /// Who wrote the offending bytes.
    pub sender: &'static str,
    /// The rule, as the receiver of these bytes detects it.
    pub rule: String,
    pub level: &'static str,
    /// The sender's rule behind it, where it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_rule: Option<String>,
    pub kind: String,
    pub message: String,
    /// Stream offset: the first byte of the frame (or unframed envelope) at fault.
    pub offset: u64,
    /// The packet that carried that byte, if still known.
    pub packet: Option<u64>,
    /// The packet whose bytes completed the detection.
    pub detected_in_packet: u64,
    /// Decoding of this direction stopped here (RECV-11).
    pub fatal: bool,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct DirSummary {
    pub bytes: u64,
    pub unframed_envelopes: u64,
    pub frames: u64,
    pub envelopes: u64,
    pub sequences: u64,
    pub largest_envelope: u64,
    pub retransmitted_bytes: u64,
    pub lost_bytes: u64,
    /// How the direction ended: `fin`, `reset`, or open at the end of the capture.
    pub closed: Option<&'static str>,
    /// Where checking stopped, if before the end.
    pub stopped_at: Option<u64>,
    /// For a direction joined midway: the offset of the first frame decoded.
    pub joined_at: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConnSummary {
    pub id: usize,
    pub client: String,
    pub server: String,
    pub first_packet: u64,
    pub last_packet: u64,
    /// `seen` (the connection from its first byte) or `joined` (the capture started later).
    pub handshake: &'static str,
    /// `v5 lz4 crc32`, once known.
    pub negotiated: Option<String>,
    pub client_to_server: DirSummary,
    pub server_to_client: DirSummary,
    /// MUST-level violations and SHOULD-level findings, counted in full.
    pub violations: u64,
    pub findings: u64,
    pub notes: Vec<String>,
    #[serde(skip)]
    pub kept: Vec<Violation>,
}

impl ConnSummary {
    fn dir(&mut self, d: usize) -> &mut DirSummary {
        if d == C2S {
            &mut self.client_to_server
        } else {
            &mut self.server_to_client
        }
    }
}

/// The two Connections of a connection seen from its start.
struct Pair {
    /// Server role: receives the client's bytes.
    server: Connection,
    /// Client role: receives the server's bytes.
    client: Connection,
    /// STARTUP seen (version, stream): later client envelopes are not shown to `client`.
    startup: Option<(u8, i16)>,
    /// The STARTUP response has been shown to `server`.
    responded: bool,
    /// Unframed client bytes so far, to replay into a re-created `server`.
    replay: Option<Vec<u8>>,
    max_body: u32,
}

/// Searching a joined direction for its first frame.
struct Sync {
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Next index of `buf` to try.
    scan: usize,
    /// Settings found (or known from the handshake before a gap).
    settings: Option<FrameSettings>,
    /// Settings are known: only frames with them count.
    known: bool,
    version: Option<u8>,
    /// A frame verified: now walking frame by frame to a self-contained one.
    walking: bool,
}

enum State {
    /// Through the Pair.
    Paired,
    Sync(Box<Sync>),
    Framed {
        decoder: Box<Decoder>,
        version: Option<u8>,
    },
    Stopped,
}

struct Dir {
    state: State,
    /// (stream offset, packet) where each packet's bytes start.
    packets: VecDeque<(u64, u64)>,
    /// Content lengths of the sequence in progress.
    pieces: Vec<usize>,
    counts: HashMap<String, u32>,
}

impl Dir {
    fn new(state: State) -> Self {
        Dir {
            state,
            packets: VecDeque::new(),
            pieces: Vec::new(),
            counts: HashMap::new(),
        }
    }

    fn packet_at(&self, offset: u64) -> Option<u64> {
        let i = self.packets.partition_point(|&(o, _)| o <= offset);
        (i > 0).then(|| self.packets[i - 1].1)
    }

    fn note_packet(&mut self, offset: u64, packet: u64) {
        if self.packets.back().is_some_and(|&(_, p)| p == packet) {
            return;
        }
        self.packets.push_back((offset, packet));
        let floor = offset.saturating_sub(PACKET_WINDOW);
        while self.packets.len() > 1 && self.packets[1].0 <= floor {
            self.packets.pop_front();
        }
    }
}

/// One finding, before it gets its connection and packet.
struct Found {
    rule: String,
    level: &'static str,
    sender_rule: Option<String>,
    kind: String,
    message: String,
    offset: u64,
    fatal: bool,
}

impl Found {
    fn error(e: &FramingError) -> Self {
        let sender = sender_rule(&e.kind);
        Found {
            rule: e.rule().to_string(),
            level: "MUST",
            sender_rule: (sender != e.rule()).then(|| sender.to_string()),
            kind: e.kind.name().to_string(),
            message: e.kind.to_string(),
            offset: e.offset,
            fatal: true,
        }
    }

    fn rule(rule: &str, level: &'static str, offset: u64, message: String) -> Self {
        Found {
            rule: rule.to_string(),
            level,
            sender_rule: None,
            kind: "sender_rule".into(),
            message,
            offset,
            fatal: false,
        }
    }

    fn rejected(e: &FramingError) -> Self {
        Found {
            fatal: false,
            ..Found::error(e)
        }
    }
}

/// Per-direction sender checks on frames and envelopes, shared by both modes.
struct Checks<'a> {
    summary: &'a mut DirSummary,
    pieces: &'a mut Vec<usize>,
    found: &'a mut Vec<Found>,
}

impl Checks<'_> {
    fn frame(&mut self, frame: &Frame<'_>) {
        let h = frame.header;
        self.summary.frames += 1;
        if h.reserved != 0 {
            let rule = if h.format == Format::Lz4 {
                "FMT-10"
            } else {
                "FMT-6"
            };
            self.found.push(Found::rule(
                rule,
                "MUST",
                frame.offset,
                format!("reserved header bits are {:#x}, not zero", h.reserved),
            ));
        }
        if h.format == Format::Lz4
            && h.uncompressed_length > 0
            && h.payload_length >= h.uncompressed_length
        {
            self.found.push(Found::rule(
                "LZ4-3",
                "SHOULD",
                frame.offset,
                format!(
                    "payload compressed to {} bytes from {}: should be stored",
                    h.payload_length, h.uncompressed_length
                ),
            ));
        }
        if !h.self_contained {
            if self.pieces.is_empty() && frame.content.len() < ENVELOPE_HEADER_LEN {
                self.found.push(Found::rule(
                    "SEND-8",
                    "MUST",
                    frame.offset,
                    format!(
                        "first frame of a sequence carries {} bytes, less than the envelope header",
                        frame.content.len()
                    ),
                ));
            }
            self.pieces.push(frame.content.len());
        }
    }

    fn envelope(&mut self, envelope: &Envelope<'_>, at: u64) {
        self.summary.envelopes += 1;
        let size = (ENVELOPE_HEADER_LEN + envelope.body.len()) as u64;
        self.summary.largest_envelope = self.summary.largest_envelope.max(size);
        if !self.pieces.is_empty() {
            self.summary.sequences += 1;
            let n = self.pieces.len();
            if self.pieces[..n - 1]
                .iter()
                .any(|&p| p < SEQUENCE_FILL_FLOOR)
            {
                self.found.push(Found::rule(
                    "SEND-7",
                    "SHOULD",
                    at,
                    format!(
                        "a sequence's frames but the last hold fewer than {SEQUENCE_FILL_FLOOR} bytes ({:?})",
                        &self.pieces[..n.min(8)]
                    ),
                ));
            }
            self.pieces.clear();
        }
        if envelope.header.flags & FLAG_COMPRESSION != 0 {
            self.found.push(Found::rule(
                "ENV-4",
                "MUST NOT",
                at,
                format!(
                    "envelope on stream {} has the COMPRESSION flag set on a framed connection",
                    envelope.header.stream
                ),
            ));
        }
    }
}

pub struct Analyzer {
    pub summary: ConnSummary,
    pair: Option<Pair>,
    dirs: [Dir; 2],
    decided: bool,
    max_body: u32,
    /// Data seen per direction (mode decision).
    seen_data: [bool; 2],
}

fn settings_name(version: Option<u8>, s: FrameSettings) -> String {
    match version {
        Some(v) => format!("v{v} {} {}", s.format.name(), s.checksum.name()),
        None => format!("{} {}", s.format.name(), s.checksum.name()),
    }
}

impl Analyzer {
    pub fn new(
        id: usize,
        client: String,
        server: String,
        packet: u64,
        from_start: bool,
        max_body: u32,
    ) -> Self {
        let mut a = Analyzer {
            summary: ConnSummary {
                id,
                client,
                server,
                first_packet: packet,
                last_packet: packet,
                handshake: "joined",
                negotiated: None,
                client_to_server: DirSummary::default(),
                server_to_client: DirSummary::default(),
                violations: 0,
                findings: 0,
                notes: Vec::new(),
                kept: Vec::new(),
            },
            pair: None,
            dirs: [Dir::new(State::Stopped), Dir::new(State::Stopped)],
            decided: false,
            max_body,
            seen_data: [false; 2],
        };
        if from_start {
            a.start_paired();
        }
        a
    }

    fn start_paired(&mut self) {
        self.decided = true;
        self.summary.handshake = "seen";
        self.pair = Some(Pair {
            server: Connection::server(
                ServerOptions::default(),
                self.max_body,
                SplitPolicy::SERVER,
            ),
            client: Connection::new(Role::Client, self.max_body, SplitPolicy::DRIVERS),
            startup: None,
            responded: false,
            replay: Some(Vec::new()),
            max_body: self.max_body,
        });
        self.dirs[C2S].state = State::Paired;
        self.dirs[S2C].state = State::Paired;
    }

    fn start_joined(&mut self) {
        self.decided = true;
        self.summary
            .notes
            .push("joined midway: no handshake in the capture; frame format detected".into());
        for d in &mut self.dirs {
            d.state = State::Sync(Box::new(Sync {
                buf: Vec::new(),
                base: 0,
                scan: 0,
                settings: None,
                known: false,
                version: None,
                walking: false,
            }));
        }
    }

    /// Records findings of direction `d`; `packet` is the packet being processed.
    fn report(&mut self, d: usize, found: Vec<Found>, packet: u64) {
        for f in found {
            if f.level.starts_with("MUST") {
                self.summary.violations += 1;
            } else {
                self.summary.findings += 1;
            }
            let count = self.dirs[d].counts.entry(f.rule.clone()).or_insert(0);
            *count += 1;
            let keep = *count <= KEEP_PER_RULE || f.fatal;
            if f.fatal {
                self.dirs[d].state = State::Stopped;
                self.summary.dir(d).stopped_at = Some(f.offset);
            }
            if keep {
                let v = Violation {
                    connection: self.summary.id,
                    direction: DIRECTION[d],
                    sender: SENDER[d],
                    rule: f.rule,
                    level: f.level,
                    sender_rule: f.sender_rule,
                    kind: f.kind,
                    message: f.message,
                    offset: f.offset,
                    packet: self.dirs[d].packet_at(f.offset),
                    detected_in_packet: packet,
                    fatal: f.fatal,
                };
                self.summary.kept.push(v);
            }
        }
    }

    /// Takes what TCP reassembly delivered for direction `d`.
    pub fn deliver(&mut self, d: usize, delivery: Delivery<'_>, packet: u64) {
        self.summary.last_packet = self.summary.last_packet.max(packet);
        match delivery {
            Delivery::Data {
                offset,
                bytes,
                packet,
            } => {
                if !self.decided {
                    self.decide(d, bytes);
                }
                self.seen_data[d] = true;
                self.summary.dir(d).bytes += bytes.len() as u64;
                self.dirs[d].note_packet(offset, packet);
                self.data(d, bytes, packet);
            }
            Delivery::Gap { offset, missing } => {
                self.summary.dir(d).lost_bytes += missing;
                self.gap(d, offset, missing);
            }
            Delivery::End { offset, reset } => {
                self.summary.dir(d).closed = Some(if reset { "reset" } else { "fin" });
                if !reset {
                    self.finish(d, offset, packet);
                }
            }
        }
    }

    /// A connection without a SYN: paired if its first bytes are a client's OPTIONS or STARTUP
    /// before the server said anything, joined otherwise.
    fn decide(&mut self, d: usize, bytes: &[u8]) {
        let handshake = d == C2S
            && !self.seen_data[S2C]
            && bytes.len() >= 5
            && (3..=6).contains(&bytes[0])
            && (bytes[4] == Opcode::Options as u8 || bytes[4] == Opcode::Startup as u8);
        if handshake {
            self.start_paired();
            self.summary.handshake = "seen";
        } else {
            self.start_joined();
        }
    }

    fn data(&mut self, d: usize, bytes: &[u8], packet: u64) {
        let mut found = Vec::new();
        let mode = match self.dirs[d].state {
            State::Stopped => return,
            State::Paired => 0,
            State::Framed { .. } => 1,
            State::Sync(_) => 2,
        };
        match mode {
            0 => {
                let negotiated = self.paired(d, bytes, &mut found);
                if let Some(n) = negotiated {
                    self.summary.negotiated.get_or_insert(n);
                }
            }
            1 => self.framed(d, bytes, &mut found),
            _ => self.sync(d, bytes, &mut found),
        }
        self.report(d, found, packet);
    }

    /// Feeds the Pair: direction `d`'s receiver gets the bytes; handshake envelopes are shown to
    /// the other side. Returns the negotiation once a side switches.
    fn paired(&mut self, d: usize, bytes: &[u8], found: &mut Vec<Found>) -> Option<String> {
        let pair = self.pair.as_mut().expect("paired mode has a pair");
        let mut recreate = None;
        let mut negotiated = None;
        let summary = self.summary.dir(d);
        let dir = &mut self.dirs[d];
        let mut checks = Checks {
            summary,
            pieces: &mut dir.pieces,
            found,
        };
        let Pair {
            server,
            client,
            startup,
            responded,
            replay,
            ..
        } = pair;
        if d == C2S && server.negotiated().is_none() {
            if let Some(r) = replay {
                if r.len() + bytes.len() <= REPLAY_LIMIT {
                    r.extend_from_slice(bytes);
                } else {
                    *replay = None;
                }
            }
        }
        // `peer` is the other side's Connection, shown the handshake envelopes.
        let (receiver, peer) = if d == C2S {
            (server, client)
        } else {
            (client, server)
        };
        let mut frame_at = 0;
        let result = receiver.receive(bytes, &mut |event| {
            match event {
                ConnectionEvent::Unframed { envelope, .. } => {
                    checks.summary.unframed_envelopes += 1;
                    let h = envelope.header;
                    let show = if d == C2S {
                        // The client's envelopes up to and including the STARTUP.
                        let before_startup = startup.is_none();
                        if before_startup && h.opcode == Opcode::Startup as u8 {
                            *startup = Some((h.protocol_version(), h.stream));
                        }
                        before_startup
                    } else {
                        if h.opcode == Opcode::Supported as u8 && startup.is_none() {
                            recreate = Some(supported_options(envelope.body));
                        }
                        // The server's envelopes up to the STARTUP response, unless that
                        // response refuses the STARTUP's version.
                        let is_response = matches!(
                            Opcode::from_u8(h.opcode),
                            Some(Opcode::Ready | Opcode::Authenticate | Opcode::Error)
                        );
                        let refusal = is_response
                            && startup.is_some_and(|(v, _)| h.version != v | RESPONSE_BIT);
                        let show = !(*responded || refusal);
                        if startup.is_some() && is_response {
                            *responded = true;
                        }
                        show
                    };
                    if show {
                        let mut sink = Vec::new();
                        let _ = peer.send(&[&envelope.to_bytes()], &mut sink);
                    }
                }
                ConnectionEvent::Frame(f) => {
                    frame_at = f.offset;
                    checks.frame(f)
                }
                ConnectionEvent::Envelope(e) => checks.envelope(&e, frame_at),
                ConnectionEvent::Rejected { error, .. } => {
                    checks.found.push(Found::rejected(&error))
                }
                ConnectionEvent::Switched { negotiated: n, .. } => {
                    negotiated = Some(settings_name(Some(n.version), n.settings));
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            found.push(Found::error(&e));
        }
        if let (Some(options), Some(replay)) = (recreate, &pair.replay) {
            // The server's own SUPPORTED says which FRAME_CHECKSUM values it acts on.
            let mut server = Connection::server(options, pair.max_body, SplitPolicy::SERVER);
            let _ = server.receive(replay, &mut |_| Ok(()));
            pair.server = server;
        }
        negotiated
    }

    fn framed(&mut self, d: usize, bytes: &[u8], found: &mut Vec<Found>) {
        let summary = self.summary.dir(d);
        let dir = &mut self.dirs[d];
        let State::Framed { decoder, version } = &mut dir.state else {
            return;
        };
        let mut checks = Checks {
            summary,
            pieces: &mut dir.pieces,
            found,
        };
        let mut frame_at = 0;
        let response = d == S2C;
        let result = decoder.decode(bytes, |event| {
            match event {
                Event::Frame(f) => {
                    frame_at = f.offset;
                    checks.frame(f);
                }
                Event::Envelope(e) => {
                    let h = e.header;
                    let v = *version.get_or_insert(h.protocol_version());
                    let expected = v | if response { RESPONSE_BIT } else { 0 };
                    if h.version != expected {
                        checks.found.push(Found::rejected(&FramingError::new(
                            cqlframe::error::ErrorKind::UnexpectedVersion {
                                found: h.version,
                                expected,
                            },
                            frame_at,
                        )));
                    } else if v == 6 && h.flags & FLAG_USE_BETA == 0 {
                        checks.found.push(Found::rejected(&FramingError::new(
                            cqlframe::error::ErrorKind::MissingBetaFlag,
                            frame_at,
                        )));
                    }
                    checks.envelope(&e, frame_at);
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            found.push(Found::error(&e));
        }
    }

    /// Looks for the first frame of a joined direction; once found, decoding starts at the next
    /// self-contained frame (a non-self-contained one may continue an envelope begun before).
    fn sync(&mut self, d: usize, bytes: &[u8], found: &mut Vec<Found>) {
        let State::Sync(s) = &mut self.dirs[d].state else {
            return;
        };
        s.buf.extend_from_slice(bytes);
        match step(s) {
            Step::More => {
                if s.scan > 2 * MAX_FRAME && !s.walking {
                    s.buf.drain(..s.scan);
                    s.base += s.scan as u64;
                    s.scan = 0;
                }
                if s.base + s.scan as u64 > SYNC_LIMIT && !s.walking {
                    let note = format!(
                        "{}: no verifiable frame in the first {} MiB: not checked",
                        DIRECTION[d],
                        SYNC_LIMIT >> 20
                    );
                    self.summary.notes.push(note);
                    self.dirs[d].state = State::Stopped;
                }
            }
            Step::Start(at) => {
                let settings = s.settings.expect("found");
                let version = s.version;
                let offset = s.base + at as u64;
                let rest = s.buf.split_off(at);
                self.summary.dir(d).joined_at = Some(offset);
                let name = settings_name(version, settings);
                self.summary.notes.push(format!(
                    "{}: decoding from byte {offset} ({name})",
                    DIRECTION[d]
                ));
                if self.summary.negotiated.is_none() {
                    self.summary.negotiated = Some(format!("{name} (detected)"));
                }
                self.dirs[d].state = State::Framed {
                    decoder: Box::new(Decoder::starting_at(settings, self.max_body, offset)),
                    version,
                };
                self.framed(d, &rest, found);
            }
        }
    }

    fn gap(&mut self, d: usize, offset: u64, missing: u64) {
        let note = format!(
            "{}: {missing} bytes at byte {offset} are missing from the capture",
            DIRECTION[d]
        );
        let (settings, version) = match &self.dirs[d].state {
            State::Stopped => return,
            State::Paired => {
                let pair = self.pair.as_ref().expect("paired");
                let conn = if d == C2S { &pair.server } else { &pair.client };
                match conn.negotiated() {
                    Some(n) => (Some(n.settings), Some(n.version)),
                    None => {
                        self.summary
                            .notes
                            .push(format!("{note}; before the switch: not checked further"));
                        self.dirs[d].state = State::Stopped;
                        return;
                    }
                }
            }
            State::Framed { decoder, version } => (Some(decoder.settings()), *version),
            State::Sync(s) => (s.settings.filter(|_| s.known), s.version),
        };
        self.summary
            .notes
            .push(format!("{note}; looking for the next frame"));
        self.dirs[d].pieces.clear();
        self.dirs[d].state = State::Sync(Box::new(Sync {
            buf: Vec::new(),
            base: offset + missing,
            scan: 0,
            settings,
            known: settings.is_some(),
            version,
            walking: false,
        }));
    }

    /// The sender closed direction `d` at `offset`: inside a frame or sequence is RECV-9.
    fn finish(&mut self, d: usize, offset: u64, packet: u64) {
        let result = match &mut self.dirs[d].state {
            State::Paired => {
                let pair = self.pair.as_mut().expect("paired");
                if d == C2S {
                    pair.server.finish()
                } else {
                    pair.client.finish()
                }
            }
            State::Framed { decoder, .. } => decoder.finish(),
            _ => Ok(()),
        };
        if let Err(e) = result {
            self.report(d, vec![Found::error(&e)], packet);
        }
        let _ = offset;
    }

    /// Summary at the end: directions still open are noted.
    pub fn close(mut self) -> ConnSummary {
        for d in [C2S, S2C] {
            if self.summary.dir(d).closed.is_none() && self.seen_data[d] {
                self.summary.dir(d).closed = Some("open at the end of the capture");
            }
        }
        self.summary
    }

    pub fn set_tcp_stats(&mut self, d: usize, retransmitted: u64) {
        self.summary.dir(d).retransmitted_bytes = retransmitted;
    }
}

/// What the server's SUPPORTED says it acts on: a server that does not list `FRAME_CHECKSUMS`
/// ignores `FRAME_CHECKSUM` (NEG-3).
fn supported_options(body: &[u8]) -> ServerOptions {
    let map = cqlframe::body::read_string_multimap(body).unwrap_or_default();
    let checksums = map
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("FRAME_CHECKSUMS"))
        .map(|(_, v)| {
            v.iter()
                .filter_map(|name| parse_checksum(name))
                .collect::<Vec<PayloadChecksum>>()
        });
    ServerOptions {
        lz4: true,
        checksums,
    }
}

enum Step {
    More,
    /// Decoding starts at this index of the buffer.
    Start(usize),
}

/// A verified frame at `at` of `buf` under `format`: its header, and whether the whole frame
/// is there (`None` when more bytes are needed to tell).
fn frame_at(
    buf: &[u8],
    at: usize,
    format: Format,
    want: Option<FrameSettings>,
) -> Option<Option<(FrameHeader, PayloadChecksum)>> {
    let hl = format.header_len();
    if buf.len() < at + hl {
        return None;
    }
    let Ok(h) = FrameHeader::read(format, &buf[at..at + hl]) else {
        return Some(None);
    };
    let checksum = if h.checksum_bit {
        PayloadChecksum::Crc32c
    } else {
        PayloadChecksum::Crc32
    };
    if let Some(w) = want {
        if w.format != format || w.checksum != checksum {
            return Some(None);
        }
    }
    if h.format == Format::Lz4 && h.uncompressed_length as usize > MAX_PAYLOAD {
        return Some(None);
    }
    let len = h.frame_len();
    if buf.len() < at + len {
        return None;
    }
    let payload = &buf[at + hl..at + len - 4];
    let t = &buf[at + len - 4..at + len];
    let trailer = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
    Some((checksum.compute(payload) == trailer).then_some((h, checksum)))
}

fn step(s: &mut Sync) -> Step {
    if s.walking {
        let settings = s.settings.expect("walking has settings");
        loop {
            match frame_at(&s.buf, s.scan, settings.format, Some(settings)) {
                None => return Step::More,
                Some(None) => {
                    // The chain broke: search again from the next byte.
                    s.walking = false;
                    if !s.known {
                        s.settings = None;
                    }
                    s.scan += 1;
                    break;
                }
                Some(Some((h, _))) if h.self_contained => {
                    if s.version.is_none() {
                        s.version = first_version(&s.buf, s.scan, h);
                    }
                    return Step::Start(s.scan);
                }
                Some(Some((h, _))) => s.scan += h.frame_len(),
            }
        }
    }
    let formats: &[Format] = match (s.known, s.settings) {
        (true, Some(k)) => match k.format {
            Format::Uncompressed => &[Format::Uncompressed],
            Format::Lz4 => &[Format::Lz4],
        },
        _ => &[Format::Uncompressed, Format::Lz4],
    };
    while s.scan + 6 <= s.buf.len() {
        let mut wait = false;
        for &format in formats {
            let want = s.settings.filter(|_| s.known);
            match frame_at(&s.buf, s.scan, format, want) {
                None => wait = true,
                Some(None) => {}
                Some(Some((_, checksum))) => {
                    s.settings = Some(FrameSettings::new(format, checksum));
                    s.walking = true;
                    return step(s);
                }
            }
        }
        if wait {
            return Step::More;
        }
        s.scan += 1;
    }
    Step::More
}

/// The protocol version of the first envelope of a self-contained, uncompressed or stored frame.
fn first_version(buf: &[u8], at: usize, h: FrameHeader) -> Option<u8> {
    let content_at = at + h.format.header_len();
    let stored = h.format == Format::Uncompressed || h.uncompressed_length == 0;
    (stored && h.payload_length as usize >= ENVELOPE_HEADER_LEN)
        .then(|| buf[content_at] & !RESPONSE_BIT)
        .filter(|v| (5..=6).contains(v))
}
