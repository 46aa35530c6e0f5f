//! `cqlframe check CAPTURE`: every CQL connection of a pcap or pcapng capture checked against
//! the framing rules, the way each receiver would check it.
//!
//! The capture is read as a stream (memory grows with the connections open at once, not with
//! the file): each packet is decoded to its TCP segment, each direction of each connection
//! reassembled (out-of-order and retransmitted segments handled, holes reported as gaps), and
//! the byte streams go through [`analyzer`]. Every violation names its rule, the packet, the
//! connection, the direction and the stream offset; each connection gets a summary.

pub mod analyzer;

use crate::pcap::read::{self as reader, Addr, Skip, TCP_RST, TCP_SYN};
use crate::pcap::tcp::{self, Direction};
use crate::rules::spec_anchor;
use analyzer::{Analyzer, C2S, S2C};
pub use analyzer::{ConnSummary, DirSummary, Violation};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// Client endpoint, server endpoint.
type Key = (Addr, u16, Addr, u16);

struct Conn {
    tcp: [Direction; 2],
    cql: Analyzer,
}

/// What the checker reports as the capture is read.
pub enum Event {
    /// A rule broken for the first time in a direction of a connection, as soon as it is found;
    /// the connection's summary lists it again, counted in full.
    Found(Violation),
    /// A connection completed (both directions ended, a new SYN on its addresses, or the end of
    /// the capture): its summary. The checker forgets it.
    Closed(Box<ConnSummary>),
}

/// What the whole run found.
#[derive(Default, Serialize)]
pub struct Totals {
    pub packets: u64,
    pub tcp_segments: u64,
    pub cql_segments: u64,
    pub ip_fragments_skipped: u64,
    pub malformed_packets: u64,
    /// Packets on link types the reader does not decode: whatever they carry goes unchecked.
    pub unsupported_link_packets: u64,
    pub unsupported_link_types: BTreeSet<u32>,
    pub connections: usize,
    pub violations: u64,
    pub findings: u64,
    pub bytes: u64,
    pub seconds: f64,
}

/// The connection table: every CQL connection open at this point of the capture.
pub struct Checker {
    ports: Vec<u16>,
    max_body: u32,
    open: HashMap<Key, Conn>,
    next_id: usize,
    pub totals: Totals,
}

impl Checker {
    pub fn new(ports: Vec<u16>, max_body: u32) -> Self {
        Checker {
            ports,
            max_body,
            open: HashMap::new(),
            next_id: 1,
            totals: Totals::default(),
        }
    }

    /// Takes one packet; calls `done` for each rule it breaks first and each connection it
    /// completes.
    pub fn packet(&mut self, number: u64, linktype: u32, data: &[u8], done: &mut dyn FnMut(Event)) {
        self.totals.packets += 1;
        let seg = match reader::segment(linktype, data) {
            Ok(s) => s,
            Err(Skip::Fragment) => {
                self.totals.ip_fragments_skipped += 1;
                return;
            }
            Err(Skip::Malformed) => {
                self.totals.malformed_packets += 1;
                return;
            }
            Err(Skip::LinkType) => {
                self.totals.unsupported_link_packets += 1;
                self.totals.unsupported_link_types.insert(linktype);
                return;
            }
            Err(Skip::Other) => return,
        };
        self.totals.tcp_segments += 1;
        let (d, key) = if self.ports.contains(&seg.dport) {
            (C2S, (seg.src, seg.sport, seg.dst, seg.dport))
        } else if self.ports.contains(&seg.sport) {
            (S2C, (seg.dst, seg.dport, seg.src, seg.sport))
        } else {
            return;
        };
        self.totals.cql_segments += 1;
        self.totals.bytes += seg.payload.len() as u64;
        let syn = seg.flags & TCP_SYN != 0;
        let opening = syn && d == C2S && seg.flags & 0x10 == 0;
        if opening {
            // A new SYN on a known address pair starts a new connection.
            let stale = self
                .open
                .get(&key)
                .is_some_and(|c| c.tcp.iter().any(|t| t.offset() > 0 || t.ended));
            if stale {
                self.close(&key, done);
            }
        }
        if !self.open.contains_key(&key) {
            if !syn && seg.payload.is_empty() {
                return;
            }
            let id = self.next_id;
            self.next_id += 1;
            let client = format!("{}:{}", key.0, key.1);
            let server = format!("{}:{}", key.2, key.3);
            self.open.insert(
                key,
                Conn {
                    tcp: [Direction::default(), Direction::default()],
                    cql: Analyzer::new(id, client, server, number, syn, self.max_body),
                },
            );
        }
        let conn = self.open.get_mut(&key).expect("inserted above");
        let Conn { tcp, cql } = conn;
        tcp[d].segment(&seg, number, &mut |delivery| {
            cql.deliver(d, delivery, number)
        });
        if seg.flags & TCP_RST != 0 {
            let other = 1 - d;
            if !tcp[other].ended {
                tcp[other].ended = true;
                cql.deliver(
                    other,
                    tcp::Delivery::End {
                        offset: tcp[other].offset(),
                        reset: true,
                    },
                    number,
                );
            }
        }
        for v in conn.cql.take_found() {
            done(Event::Found(v));
        }
        if conn.tcp[C2S].ended && conn.tcp[S2C].ended {
            self.close(&key, done);
        }
    }

    fn close(&mut self, key: &Key, done: &mut dyn FnMut(Event)) {
        if let Some(mut conn) = self.open.remove(key) {
            for d in [C2S, S2C] {
                let Conn { tcp, cql } = &mut conn;
                tcp[d].flush(&mut |delivery| cql.deliver(d, delivery, 0));
                cql.set_tcp_stats(d, tcp[d].retransmitted_bytes);
            }
            for v in conn.cql.take_found() {
                done(Event::Found(v));
            }
            let summary = conn.cql.close();
            self.totals.connections += 1;
            self.totals.violations += summary.violations;
            self.totals.findings += summary.findings;
            done(Event::Closed(Box::new(summary)));
        }
    }

    /// The end of the capture: every connection still open is summarised, in order.
    pub fn finish(&mut self, done: &mut dyn FnMut(Event)) {
        let mut keys: Vec<(usize, Key)> = self
            .open
            .iter()
            .map(|(k, c)| (c.cql.summary.id, *k))
            .collect();
        keys.sort();
        for (_, key) in keys {
            self.close(&key, done);
        }
    }
}

/// One line per rule broken per direction: how often, and where first.
pub fn violation_line(v: &Violation) -> String {
    let how_often = match v.rule.count {
        1 => "once".to_string(),
        n => format!("{n} times, first"),
    };
    rule_line(v, &how_often)
}

/// A rule as it is first broken in a direction (`cqlframe check --follow`), before the
/// connection's summary counts it.
pub fn found_line(v: &Violation) -> String {
    format!(
        "connection {}: {}",
        v.connection,
        rule_line(v, "found").trim_start()
    )
}

fn rule_line(v: &Violation, how_often: &str) -> String {
    let f = &v.rule.first;
    format!(
        "  {} ({}) {}: {} at byte {} (packet {}{}): {}{}{}",
        f.rule,
        f.level,
        f.direction.name(),
        how_often,
        f.offset,
        v.packet.map_or_else(|| "?".to_string(), |p| p.to_string()),
        if v.packet != Some(v.detected_in_packet) && v.detected_in_packet > 0 {
            format!(", detected in {}", v.detected_in_packet)
        } else {
            String::new()
        },
        f.message,
        f.sender_rule
            .map(|r| format!(" [sender rule {r}]"))
            .unwrap_or_default(),
        if f.fatal {
            "; checking of this direction stops (RECV-11)"
        } else {
            ""
        }
    )
}

/// Where the spec states the rules of a violation line (the sender's rule too, where it differs):
/// their anchors in the spec as `spec/build.sh` renders it.
pub fn spec_line(v: &Violation) -> String {
    let f = &v.rule.first;
    let anchors: Vec<String> = std::iter::once(f.rule)
        .chain(f.sender_rule)
        .map(spec_anchor)
        .collect();
    format!("    spec: {}", anchors.join(", "))
}

pub fn dir_line(name: &str, d: &DirSummary) -> String {
    let t = &d.stats;
    let mut s = format!(
        "  {name}: {} bytes, {} unframed envelopes, {} frames, {} envelopes ({} sequences, largest {} bytes)",
        d.bytes, t.unframed_envelopes, t.frames, t.envelopes, t.sequences, t.largest_envelope
    );
    if d.retransmitted_bytes > 0 {
        s += &format!(", {} bytes retransmitted", d.retransmitted_bytes);
    }
    if d.lost_bytes > 0 {
        s += &format!(", {} bytes missing", d.lost_bytes);
    }
    if let Some(c) = d.closed {
        s += &format!("; {c}");
    }
    s
}

pub fn summary_text(c: &ConnSummary, quiet: bool) -> String {
    let mut s = String::new();
    if quiet && c.rules.is_empty() {
        return s;
    }
    s += &format!(
        "connection {}: {} -> {}, packets {}-{}, handshake {}, {}: {} violations, {} findings\n",
        c.id,
        c.client,
        c.server,
        c.first_packet,
        c.last_packet,
        c.handshake,
        c.negotiated.as_deref().unwrap_or("not framed"),
        c.violations,
        c.findings
    );
    for v in &c.rules {
        s += &violation_line(v);
        s.push('\n');
        s += &spec_line(v);
        s.push('\n');
    }
    if !quiet {
        s += &dir_line("client-to-server", &c.client_to_server);
        s.push('\n');
        s += &dir_line("server-to-client", &c.server_to_client);
        s.push('\n');
        for n in &c.notes {
            s += &format!("  note: {n}\n");
        }
    }
    s
}

#[cfg(test)]
mod tests;
