//! The CQL side of one TCP connection: the two reassembled byte streams, judged by the rules
//! engine ([`Judge`]), with what only a capture has: packet numbers, gaps, and connections the
//! capture joined midway.
//!
//! A connection seen from its start is judged from its first byte. A connection joined midway
//! has no handshake to follow: each direction is searched for a frame whose CRC24 and payload
//! checksum verify, trying both formats (the checksum bit says which payload checksum), and
//! judging starts at the next self-contained frame. After bytes missing from the capture a
//! direction is searched the same way, with the format it had.

use crate::pcap::tcp::Delivery;
use crate::rules::{Direction, Finding, Judge, RuleCount, Stats, Tally};
use crate::verdict::Level;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::envelope::{Opcode, ENVELOPE_HEADER_LEN, RESPONSE_BIT};
use cqlframe::format::{Format, FrameSettings, MAX_PAYLOAD};
use cqlframe::header::FrameHeader;
use serde::Serialize;
use std::collections::VecDeque;

/// Index of each direction.
pub const C2S: usize = 0;
pub const S2C: usize = 1;

/// Stream bytes for which the packet that carried them is remembered.
const PACKET_WINDOW: u64 = 4 << 20;
/// Bytes searched for a first frame before a joined direction is given up.
const SYNC_LIMIT: u64 = 16 << 20;
/// Largest frame: LZ4 header, payload, trailer.
const MAX_FRAME: usize = 8 + MAX_PAYLOAD + 4;

/// A rule broken on a connection of a capture, in one direction: how often, where first.
#[derive(Clone, Debug, Serialize)]
pub struct Violation {
    pub connection: usize,
    /// Who wrote the offending bytes.
    pub sender: &'static str,
    #[serde(flatten)]
    pub rule: RuleCount,
    /// The packet that carried the first offending byte, if still known.
    pub packet: Option<u64>,
    /// The packet whose bytes completed the first detection.
    pub detected_in_packet: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct DirSummary {
    pub bytes: u64,
    #[serde(flatten)]
    pub stats: Stats,
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
    /// One entry per rule broken per direction, in the order first found.
    pub rules: Vec<Violation>,
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

/// Searching a direction for its first frame (joined midway, or after a gap).
struct Sync {
    /// Stream offset where the search began.
    from: u64,
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Next index of `buf` to try.
    scan: usize,
    /// Settings found (or known from before a gap).
    settings: Option<FrameSettings>,
    /// Settings are known: only frames with them count.
    known: bool,
    version: Option<u8>,
    /// A frame verified: now walking frame by frame to a self-contained one.
    walking: bool,
}

impl Sync {
    fn new(base: u64, known: Option<(FrameSettings, Option<u8>)>) -> Box<Self> {
        Box::new(Sync {
            from: base,
            buf: Vec::new(),
            base,
            scan: 0,
            settings: known.map(|(s, _)| s),
            known: known.is_some(),
            version: known.and_then(|(_, v)| v),
            walking: false,
        })
    }
}

fn direction(d: usize) -> Direction {
    Direction::BOTH[d]
}

pub struct Analyzer {
    pub summary: ConnSummary,
    judge: Judge,
    tally: Tally,
    /// Per direction: searching for a frame boundary (joined midway, or after a gap).
    syncs: [Option<Box<Sync>>; 2],
    /// Per direction: (stream offset, packet) where each packet's bytes start.
    packets: [VecDeque<(u64, u64)>; 2],
    /// Per direction: the packet that carried the first byte of each rule's first finding.
    firsts: Vec<(Option<u64>, u64)>,
    decided: bool,
    max_body: u32,
    /// Data seen per direction (mode decision).
    seen_data: [bool; 2],
    /// Rules first broken since the last [`Analyzer::take_found`], for callers that report each
    /// as it is found.
    found: Vec<Violation>,
}

fn settings_name(version: Option<u8>, s: FrameSettings) -> String {
    match version {
        Some(v) => format!("v{v} {s}"),
        None => s.to_string(),
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
                rules: Vec::new(),
            },
            judge: Judge::joined(max_body),
            tally: Tally::default(),
            syncs: [None, None],
            packets: [VecDeque::new(), VecDeque::new()],
            firsts: Vec::new(),
            decided: false,
            max_body,
            seen_data: [false; 2],
            found: Vec::new(),
        };
        if from_start {
            a.start_paired();
        }
        a
    }

    fn start_paired(&mut self) {
        self.decided = true;
        self.summary.handshake = "seen";
        self.judge = Judge::new(self.max_body);
    }

    fn start_joined(&mut self) {
        self.decided = true;
        self.summary.notes.push(
            concat!(
                "joined midway: no handshake in the capture; each direction is decoded from a ",
                "self-contained frame whose checksums verify"
            )
            .into(),
        );
        self.syncs = [Some(Sync::new(0, None)), Some(Sync::new(0, None))];
    }

    fn packet_at(&self, d: usize, offset: u64) -> Option<u64> {
        let packets = &self.packets[d];
        let i = packets.partition_point(|&(o, _)| o <= offset);
        (i > 0).then(|| packets[i - 1].1)
    }

    fn note_packet(&mut self, d: usize, offset: u64, packet: u64) {
        let packets = &mut self.packets[d];
        if packets.back().is_some_and(|&(_, p)| p == packet) {
            return;
        }
        packets.push_back((offset, packet));
        let floor = offset.saturating_sub(PACKET_WINDOW);
        while packets.len() > 1 && packets[1].0 <= floor {
            packets.pop_front();
        }
    }

    /// Records findings of direction `d`; `packet` is the packet being processed.
    fn report(&mut self, d: usize, found: Vec<Finding>, packet: u64) {
        for f in found {
            match f.level {
                Level::Must => self.summary.violations += 1,
                Level::Should => self.summary.findings += 1,
            }
            if f.fatal {
                self.summary.dir(d).stopped_at = Some(f.offset);
            }
            let first = self.packet_at(d, f.offset);
            if self.tally.add(&f) {
                self.firsts.push((first, packet));
                self.found.push(Violation {
                    connection: self.summary.id,
                    sender: f.direction.sender(),
                    rule: RuleCount { first: f, count: 1 },
                    packet: first,
                    detected_in_packet: packet,
                });
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
                self.note_packet(d, offset, packet);
                self.data(d, bytes, packet);
            }
            Delivery::Gap { offset, missing } => {
                self.summary.dir(d).lost_bytes += missing;
                self.gap(d, offset, missing);
            }
            Delivery::End { reset, .. } => {
                self.summary.dir(d).closed = Some(if reset { "reset" } else { "fin" });
                if !reset {
                    let mut found = Vec::new();
                    self.judge.finish(direction(d), &mut found);
                    self.report(d, found, packet);
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
        } else {
            self.start_joined();
        }
    }

    fn data(&mut self, d: usize, bytes: &[u8], packet: u64) {
        let mut found = Vec::new();
        if self.syncs[d].is_some() {
            self.sync(d, bytes, &mut found);
        } else {
            self.judge.receive(direction(d), bytes, &mut found);
        }
        if self.summary.negotiated.is_none() {
            if let Some(n) = self.judge.negotiated() {
                self.summary.negotiated = Some(settings_name(Some(n.version), n.settings));
            }
        }
        self.report(d, found, packet);
    }

    /// Looks for the first frame of a direction; once found, judging starts at the next
    /// self-contained frame (a non-self-contained one may continue an envelope begun before).
    fn sync(&mut self, d: usize, bytes: &[u8], found: &mut Vec<Finding>) {
        let Some(s) = &mut self.syncs[d] else {
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
                        direction(d).name(),
                        SYNC_LIMIT >> 20
                    );
                    self.summary.notes.push(note);
                    self.syncs[d] = None;
                    self.judge.stop(direction(d));
                }
            }
            Step::Start(at) => {
                let settings = s.settings.expect("found");
                let version = s.version;
                let offset = s.base + at as u64;
                let rest = s.buf.split_off(at);
                self.syncs[d] = None;
                self.summary.dir(d).joined_at.get_or_insert(offset);
                let name = settings_name(version, settings);
                self.summary.notes.push(format!(
                    "{}: decoding from byte {offset} ({name})",
                    direction(d).name()
                ));
                if self.summary.negotiated.is_none() {
                    self.summary.negotiated = Some(format!("{name} (detected)"));
                }
                self.judge.resume(direction(d), settings, version, offset);
                self.judge.receive(direction(d), &rest, found);
            }
        }
    }

    fn gap(&mut self, d: usize, offset: u64, missing: u64) {
        let note = format!(
            "{}: {missing} bytes at byte {offset} are missing from the capture",
            direction(d).name()
        );
        let known = match &self.syncs[d] {
            Some(s) => s.settings.filter(|_| s.known).map(|k| (k, s.version)),
            None if self.judge.stopped(direction(d)) => return,
            None => match self.judge.framing(direction(d)) {
                Some(k) => Some(k),
                None => {
                    self.summary
                        .notes
                        .push(format!("{note}; before the switch: not checked further"));
                    self.judge.stop(direction(d));
                    return;
                }
            },
        };
        self.summary
            .notes
            .push(format!("{note}; looking for the next frame"));
        // What was decoded before the gap is abandoned: judging resumes at the next frame.
        self.judge.stop(direction(d));
        self.syncs[d] = Some(Sync::new(offset + missing, known));
    }

    /// Summary at the end: directions still open are noted, and so are bytes searched for a
    /// frame in vain (a join or a gap that never found its way back), so that what was not
    /// checked never reads as clean; the findings are tallied per rule.
    pub fn close(mut self) -> ConnSummary {
        for d in [C2S, S2C] {
            if let Some(s) = &self.syncs[d] {
                let searched = s.base + s.buf.len() as u64 - s.from;
                if searched > 0 {
                    let note = format!(
                        "{}: no self-contained frame whose checksums verify in the {searched} \
                         bytes from byte {}: not checked",
                        direction(d).name(),
                        s.from
                    );
                    self.summary.notes.push(note);
                }
            }
            if self.summary.dir(d).closed.is_none() && self.seen_data[d] {
                self.summary.dir(d).closed = Some("open at the end of the capture");
            }
            self.summary.dir(d).stats = self.judge.stats(direction(d)).clone();
        }
        let unjudged = self.judge.unjudged().into_iter().map(|u| u.to_string());
        self.summary.notes.extend(unjudged);
        let connection = self.summary.id;
        self.summary.rules = self
            .tally
            .rules()
            .iter()
            .zip(&self.firsts)
            .map(|(rule, &(packet, detected_in_packet))| Violation {
                connection,
                sender: rule.first.direction.sender(),
                rule: rule.clone(),
                packet,
                detected_in_packet,
            })
            .collect();
        self.summary
    }

    /// The rules first broken (in a direction) since the last call, each as its first finding:
    /// what the connection's summary will list, with the counts still growing.
    pub fn take_found(&mut self) -> Vec<Violation> {
        std::mem::take(&mut self.found)
    }

    pub fn set_tcp_stats(&mut self, d: usize, retransmitted: u64) {
        self.summary.dir(d).retransmitted_bytes = retransmitted;
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
