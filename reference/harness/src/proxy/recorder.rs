//! Every byte the proxy forwards, in the order it forwarded them, through one checker: each
//! write is made a TCP segment of its connection (the frames `cqlframe check` reads), judged as
//! such and, with `--capture`, written to the capture. The live verdict and the verdict of
//! `cqlframe check` on the capture are then one computation on the same packets.
//!
//! A write is queued in that order before it goes out and judged once it has (the next call
//! that takes the recorder judges the queue first), so that the judge's time is not added to the
//! time a byte takes through the proxy; an answer read after a request was written is queued
//! after it, so the order the judge sees is still the order the bytes went.

use super::log::WireLog;
use super::reaction::{Reaction, REACT, STALL};
use super::tamper::{FaultSpec, Forward, Tamper};
use crate::check::{Checker, ConnSummary, Event, Totals};
use crate::pcap::write::{self as capture, Options, Peer, Segments, ACK, FIN, PSH, SYN};
use crate::wire_log::Dir;
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Closed connections whose summary the report keeps; later ones are counted.
pub const KEPT_CONNECTIONS: usize = 1000;
/// Closed connections whose wire log the report keeps (the first to close); the others keep
/// the count of their lines.
pub const KEPT_LOGS: usize = 100;
/// Wire-log lines kept per connection.
pub const LOG_LINES: usize = 400;
/// The server port of every connection in the capture, whatever the upstream's: the port a
/// CQL dissector and `cqlframe check` look at by default.
pub const CAPTURE_SERVER_PORT: u16 = capture::SERVER_PORT;
/// The MSS announced and the largest segment written: the largest an IPv4 packet holds.
const MSS: usize = capture::MAX_MSS;
/// TCP RST, for a connection the proxy or a peer cut.
const RST: u8 = 0x04;

/// What the proxy reports as it happens: the judge's events, and its own checks of the
/// driver's reactions.
pub enum Live<'a> {
    Judged(&'a Event),
    Reaction(&'a Reaction),
}

/// Where each report goes as it happens (the command's live output).
pub type Sink = Box<dyn FnMut(Live<'_>) + Send>;

/// A connection closed, as the report shows it.
pub struct Closed {
    pub summary: ConnSummary,
    pub log: WireLog,
}

struct Open {
    tcp: Segments,
    log: WireLog,
    ended: [bool; 2],
    /// When each side's bytes were last forwarded (the node's: delivered).
    last: [Option<Instant>; 2],
    /// The judge found a rule broken in the node's bytes.
    server_broke: bool,
    tamper: Option<Tamper>,
    /// When the fault was delivered, and whether the proxy closed the connection after it.
    faulted: Option<(Instant, bool)>,
    /// When the client closed its side (FIN or reset), not the proxy.
    client_closed: Option<Instant>,
    /// The node's bytes delivered after the fault (answers to what was in flight, or more).
    answered_after_fault: bool,
    /// The client's first bytes written after that: it kept using the connection.
    used_after_fault: Option<Instant>,
}

/// A write queued to be judged: `bytes` as forwarded, and the fault's note when they carry it.
struct Queued {
    id: usize,
    from: Peer,
    bytes: Vec<u8>,
    fault: Option<(String, bool)>,
}

pub struct Recorder {
    checker: Checker,
    queued: VecDeque<Queued>,
    capture: Option<Box<dyn Write + Send>>,
    capture_error: Option<String>,
    packets: u64,
    /// Connections are numbered from 1 in the order they open, as the checker numbers them.
    next_id: usize,
    open: HashMap<usize, Open>,
    pub closed: Vec<Closed>,
    pub closed_not_kept: usize,
    /// The proxy's checks of the drivers' reactions that failed.
    pub reactions: Vec<Reaction>,
    /// The node's bytes are delivered in pieces of this many bytes (0: as read).
    chop: usize,
    /// The frame fault, if any, and whether the driver's reaction to it is checked.
    pub fault: Option<(FaultSpec, bool)>,
    max_body: u32,
    /// Connections on which the fault was applied.
    pub faults_applied: usize,
    /// The last byte forwarded on a connection closed since.
    closed_traffic: Option<Instant>,
    sink: Sink,
}

impl Recorder {
    pub fn new(
        max_body: u32,
        chop: usize,
        fault: Option<(FaultSpec, bool)>,
        capture: Option<Box<dyn Write + Send>>,
        sink: Sink,
    ) -> Self {
        let mut r = Recorder {
            checker: Checker::new(vec![CAPTURE_SERVER_PORT], max_body),
            queued: VecDeque::new(),
            capture,
            capture_error: None,
            packets: 0,
            next_id: 1,
            open: HashMap::new(),
            closed: Vec::new(),
            closed_not_kept: 0,
            reactions: Vec::new(),
            chop,
            fault,
            max_body,
            faults_applied: 0,
            closed_traffic: None,
            sink,
        };
        let header = capture::file_header();
        r.write_capture(&header);
        r
    }

    pub fn totals_mut(&mut self) -> &mut Totals {
        &mut self.checker.totals
    }

    pub fn capture_error(&self) -> Option<&str> {
        self.capture_error.as_deref()
    }

    fn write_capture(&mut self, bytes: &[u8]) {
        if let Some(w) = &mut self.capture {
            if let Err(e) = w.write_all(bytes).and_then(|()| w.flush()) {
                self.capture_error = Some(format!("capture: {e}; not written further"));
                self.capture = None;
            }
        }
    }

    /// A connection accepted and connected upstream: its number, and its three-way handshake.
    pub fn open(&mut self, note: String) -> usize {
        self.judge_queued();
        let id = self.next_id;
        self.next_id += 1;
        let i = id as u32;
        let options = Options {
            client_port: client_port(id),
            server_port: CAPTURE_SERVER_PORT,
            client_isn: 0x1c5a_0000u32.wrapping_add(i << 20),
            server_isn: 0x5e4b_0000u32.wrapping_add(i << 20),
            mss: MSS,
        };
        let mut log = WireLog::new(LOG_LINES);
        log.push(Dir::Note, note);
        let tamper = self
            .fault
            .map(|(f, _)| f)
            .filter(|f| f.connection.is_none_or(|c| c == id))
            .map(|f| Tamper::new(f, self.max_body));
        self.open.insert(
            id,
            Open {
                tcp: Segments::new(&options),
                log,
                ended: [false; 2],
                last: [None; 2],
                server_broke: false,
                tamper,
                faulted: None,
                client_closed: None,
                answered_after_fault: false,
                used_after_fault: None,
            },
        );
        let mss = (MSS as u16).to_be_bytes();
        let option = [2, 4, mss[0], mss[1]];
        self.segment(id, Peer::Client, SYN, &option, &[]);
        self.segment(id, Peer::Server, SYN | ACK, &option, &[]);
        self.segment(id, Peer::Client, ACK, &[], &[]);
        id
    }

    /// `bytes` that `from` wrote, queued to be judged as forwarded: what to forward instead when
    /// the fault is on this connection (`None`: `bytes` as read).
    pub fn forward(&mut self, id: usize, from: Peer, bytes: &[u8]) -> Option<Forward> {
        let tamper = self.open.get_mut(&id).and_then(|c| c.tamper.as_mut());
        let mut out = tamper.map(|t| t.pass(from, bytes));
        let fault = out.as_mut().and_then(|o| Some((o.note.take()?, o.close)));
        let forwarded = out.as_ref().map_or(bytes, |o| &o.bytes[..]);
        self.queued.push_back(Queued {
            id,
            from,
            bytes: forwarded.to_vec(),
            fault,
        });
        out
    }

    /// Judges the writes queued, in their order.
    fn judge_queued(&mut self) {
        while let Some(q) = self.queued.pop_front() {
            // The fault's own bytes are not an answer after it: judged before it is marked.
            self.data(q.id, q.from, &q.bytes);
            if let Some((note, close)) = q.fault {
                self.faults_applied += 1;
                if let Some(c) = self.open.get_mut(&q.id) {
                    c.faulted = Some((Instant::now(), close));
                    c.log.push(Dir::Note, note);
                }
            }
        }
    }

    /// The client closed its side of connection `id` (the proxy did not).
    pub fn client_closed(&mut self, id: usize) {
        self.judge_queued();
        if let Some(c) = self.open.get_mut(&id) {
            c.client_closed.get_or_insert_with(Instant::now);
        }
    }

    fn data(&mut self, id: usize, from: Peer, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(c) = self.open.get_mut(&id) {
            match from {
                Peer::Client if c.answered_after_fault => {
                    c.used_after_fault.get_or_insert_with(Instant::now);
                }
                Peer::Server if c.faulted.is_some() => c.answered_after_fault = true,
                _ => {}
            }
            let dir = dir(from);
            c.log.push(dir, format!("{} bytes", bytes.len()));
            c.last[from.index()] = Some(Instant::now());
        }
        let count = bytes.len().div_ceil(MSS);
        for (i, chunk) in bytes.chunks(MSS).enumerate() {
            let flags = if i + 1 == count { PSH | ACK } else { ACK };
            self.segment(id, from, flags, &[], chunk);
        }
    }

    /// The bytes of `from` last given to [`Recorder::forward`] have all been written to the other
    /// end: judged now.
    pub fn delivered(&mut self, id: usize, from: Peer) {
        self.judge_queued();
        if let Some(c) = self.open.get_mut(&id) {
            c.last[from.index()] = Some(Instant::now());
        }
    }

    /// A line in the connection's wire log (what the proxy did or saw).
    pub fn note(&mut self, id: usize, dir: Dir, text: String) {
        self.judge_queued();
        if let Some(c) = self.open.get_mut(&id) {
            c.log.push(dir, text);
        }
    }

    /// `from` closed its side in order (FIN), or the connection was cut (`reset`: by a peer's
    /// reset, or by the proxy itself at a limit or at its end; what was cut is not judged as a
    /// frame left unfinished).
    pub fn end(&mut self, id: usize, from: Peer, reset: bool) {
        self.judge_queued();
        let Some(c) = self.open.get_mut(&id) else {
            return;
        };
        if c.ended[from.index()] {
            return;
        }
        c.ended[from.index()] = true;
        if from == Peer::Client && self.chop > 0 {
            self.stalled(id);
        }
        let Some(c) = self.open.get_mut(&id) else {
            return;
        };
        if reset {
            c.ended = [true; 2];
            self.segment(id, from, RST | ACK, &[], &[]);
        } else {
            self.segment(id, from, FIN | ACK, &[], &[]);
        }
    }

    /// The client closes connection `id`: had it been waiting for an answer delivered in
    /// pieces (see [`super::reaction`])?
    fn stalled(&mut self, id: usize) {
        let Some(c) = self.open.get(&id) else {
            return;
        };
        let [Some(asked), Some(answered)] = c.last else {
            return;
        };
        let silence = answered.elapsed();
        let others = self
            .open
            .iter()
            .filter(|(other, _)| **other != id)
            .flat_map(|(_, o)| o.last.iter().flatten())
            .chain(self.closed_traffic.iter())
            .any(|&t| t > answered);
        if c.server_broke || asked > answered || silence < STALL || others {
            return;
        }
        let r = Reaction::stalled(id, self.chop, silence);
        if let Some(c) = self.open.get_mut(&id) {
            c.log.push(Dir::Note, r.line());
        }
        (self.sink)(Live::Reaction(&r));
        self.reactions.push(r);
    }

    /// `--expect-fault`: a fault in the node's bytes that the client must refuse; the client
    /// must write nothing on the connection once later bytes of the node reached it, and give it
    /// up within [`REACT`] (a truncation too: it closed the node's side there).
    fn reacted(&mut self, id: usize, open: &Open) {
        let Some((fault, true)) = self.fault else {
            return;
        };
        if fault.from != Peer::Server {
            return;
        }
        let Some((at, _)) = open.faulted else {
            return;
        };
        let closed = open.client_closed.map(|c| c.duration_since(at));
        let used = open.used_after_fault.map(|u| u.duration_since(at));
        let gave_up = closed.is_some_and(|c| c <= REACT);
        if gave_up && used.is_none() {
            return;
        }
        let r = Reaction::kept(id, fault.kind, used, closed);
        (self.sink)(Live::Reaction(&r));
        self.reactions.push(r);
    }

    /// Every connection still open is cut, then summarised.
    pub fn finish(&mut self) {
        self.judge_queued();
        let mut ids: Vec<usize> = self.open.keys().copied().collect();
        ids.sort();
        for id in ids {
            self.end(id, Peer::Client, true);
        }
        let mut events = Vec::new();
        self.checker.finish(&mut |e| events.push(e));
        self.take(events);
    }

    fn segment(&mut self, id: usize, from: Peer, flags: u8, options: &[u8], payload: &[u8]) {
        let Some(c) = self.open.get_mut(&id) else {
            return;
        };
        let frame = c.tcp.frame(from, flags, options, payload);
        self.packets += 1;
        if self.capture.is_some() {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let mut record = Vec::with_capacity(16 + frame.len());
            capture::record(
                &mut record,
                now.as_secs() as u32,
                now.subsec_micros(),
                &frame,
            );
            self.write_capture(&record);
        }
        let mut events = Vec::new();
        self.checker
            .packet(self.packets, capture::LINKTYPE_ETHERNET, &frame, &mut |e| {
                events.push(e)
            });
        self.take(events);
    }

    fn take(&mut self, events: Vec<Event>) {
        for e in events {
            (self.sink)(Live::Judged(&e));
            match e {
                Event::Found(v) => {
                    if let Some(c) = self.open.get_mut(&v.connection) {
                        c.server_broke |= v.sender == "server";
                        let dir = if v.sender == "client" {
                            Dir::C2s
                        } else {
                            Dir::S2c
                        };
                        c.log.push(dir, crate::check::found_line(&v));
                    }
                }
                Event::Closed(summary) => {
                    let Some(open) = self.open.remove(&summary.id) else {
                        continue;
                    };
                    let last = open.last.iter().flatten().max().copied();
                    self.closed_traffic = self.closed_traffic.max(last);
                    self.reacted(summary.id, &open);
                    if self.closed.len() < KEPT_CONNECTIONS {
                        let mut log = open.log;
                        if self.closed.len() >= KEPT_LOGS {
                            log.dropped += log.lines.len();
                            log.lines = Vec::new();
                        }
                        self.closed.push(Closed {
                            summary: *summary,
                            log,
                        });
                    } else {
                        self.closed_not_kept += 1;
                    }
                }
            }
        }
    }
}

/// The client port of connection `id` in the capture: distinct for every connection open at
/// once (far fewer than 50000), never the server port.
pub fn client_port(id: usize) -> u16 {
    10_000 + ((id - 1) % 50_000) as u16
}

fn dir(from: Peer) -> Dir {
    match from {
        Peer::Client => Dir::C2s,
        Peer::Server => Dir::S2c,
    }
}
