//! `cqlframe check CAPTURE`: every CQL connection of a pcap or pcapng capture checked against
//! the framing rules, the way each receiver would check it.
//!
//! The capture is read as a stream (memory grows with the connections open at once, not with
//! the file): each packet is decoded to its TCP segment, each direction of each connection
//! reassembled (out-of-order and retransmitted segments handled, holes reported as gaps), and
//! the byte streams go through [`analyzer`]. Every violation names its rule, the packet, the
//! connection, the direction and the stream offset; each connection gets a summary.

mod analyzer;
mod generate;
mod reader;
mod tcp;

use crate::Failure;
use analyzer::{Analyzer, ConnSummary, Violation, C2S, S2C};
use clap::Args as ClapArgs;
use cqlframe::assembler::DEFAULT_MAX_ENVELOPE_BODY;
use reader::{Addr, Reader, Skip, TCP_RST, TCP_SYN};
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;
use tcp::Direction;

/// Check every CQL connection of a capture (pcap or pcapng) against the framing rules.
///
/// Each violation is reported with its rule ID, packet number, connection, direction and byte
/// offset in that direction's stream; each connection gets a summary. Exit status 1 when any
/// MUST-level rule is broken (SHOULD-level findings are listed but do not fail).
#[derive(ClapArgs)]
pub struct Args {
    /// The capture file.
    #[arg(required_unless_present = "generate")]
    capture: Option<PathBuf>,
    /// Server ports of CQL connections (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "9042")]
    port: Vec<u16>,
    /// One JSON document on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// Text output: violations and the totals only, no per-connection summaries.
    #[arg(long)]
    quiet: bool,
    /// Largest envelope body accepted (RECV-12).
    #[arg(long, default_value_t = DEFAULT_MAX_ENVELOPE_BODY)]
    max_body: u32,
    /// Never draw a progress bar (it is drawn on a terminal for files over 64 MiB).
    #[arg(long)]
    no_progress: bool,
    /// Benchmark input: write a capture of about --megabytes MiB made by repeating the --from
    /// captures as new connections (shifted ports, sequence numbers and times).
    #[arg(long, hide = true, requires = "from")]
    generate: Option<PathBuf>,
    #[arg(long, hide = true, value_delimiter = ',')]
    from: Vec<PathBuf>,
    #[arg(long, hide = true, default_value_t = 1024)]
    megabytes: u64,
}

/// Client endpoint, server endpoint.
type Key = (Addr, u16, Addr, u16);

struct Conn {
    tcp: [Direction; 2],
    cql: Analyzer,
}

/// What the whole run found.
#[derive(Default, Serialize)]
pub struct Totals {
    pub packets: u64,
    pub tcp_segments: u64,
    pub cql_segments: u64,
    pub ip_fragments_skipped: u64,
    pub malformed_packets: u64,
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

    /// Takes one packet; calls `done` for each connection it completes.
    pub fn packet(
        &mut self,
        number: u64,
        linktype: u32,
        data: &[u8],
        done: &mut dyn FnMut(ConnSummary),
    ) {
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
        if conn.tcp[C2S].ended && conn.tcp[S2C].ended {
            self.close(&key, done);
        }
    }

    fn close(&mut self, key: &Key, done: &mut dyn FnMut(ConnSummary)) {
        if let Some(mut conn) = self.open.remove(key) {
            for d in [C2S, S2C] {
                let Conn { tcp, cql } = &mut conn;
                tcp[d].flush(&mut |delivery| cql.deliver(d, delivery, 0));
                cql.set_tcp_stats(d, tcp[d].retransmitted_bytes);
            }
            let summary = conn.cql.close();
            self.totals.connections += 1;
            self.totals.violations += summary.violations;
            self.totals.findings += summary.findings;
            done(summary);
        }
    }

    /// The end of the capture: every connection still open is summarised, in order.
    pub fn finish(&mut self, done: &mut dyn FnMut(ConnSummary)) {
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

fn violation_line(v: &Violation) -> String {
    format!(
        "  {} ({}) {} at byte {} (packet {}{}): {}{}{}",
        v.rule,
        v.level,
        v.direction,
        v.offset,
        v.packet.map_or_else(|| "?".to_string(), |p| p.to_string()),
        if v.packet != Some(v.detected_in_packet) && v.detected_in_packet > 0 {
            format!(", detected in {}", v.detected_in_packet)
        } else {
            String::new()
        },
        v.message,
        v.sender_rule
            .as_ref()
            .map(|r| format!(" [sender rule {r}]"))
            .unwrap_or_default(),
        if v.fatal {
            "; checking of this direction stops (RECV-11)"
        } else {
            ""
        }
    )
}

fn dir_line(name: &str, d: &analyzer::DirSummary) -> String {
    let mut s = format!(
        "  {name}: {} bytes, {} unframed envelopes, {} frames, {} envelopes ({} sequences, largest {} bytes)",
        d.bytes, d.unframed_envelopes, d.frames, d.envelopes, d.sequences, d.largest_envelope
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

fn summary_text(c: &ConnSummary, quiet: bool) -> String {
    let mut s = String::new();
    if quiet && c.kept.is_empty() {
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
    for v in &c.kept {
        s += &violation_line(v);
        s.push('\n');
    }
    let shown = c.kept.len() as u64;
    if c.violations + c.findings > shown {
        s += &format!(
            "  ... {} more of the same rules not listed\n",
            c.violations + c.findings - shown
        );
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

#[derive(Serialize)]
struct JsonConn<'a> {
    #[serde(flatten)]
    summary: &'a ConnSummary,
    listed: &'a [Violation],
}

pub fn run(args: Args) -> Result<(), Failure> {
    if let Some(out) = &args.generate {
        return generate::run(&args.from, out, args.megabytes).map_err(Failure::Io);
    }
    let path = args.capture.clone().expect("clap requires a capture");
    let file =
        std::fs::File::open(&path).map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let started = Instant::now();
    let mut reader =
        Reader::new(file).map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
    let progress = if !args.no_progress && size > 64 << 20 {
        let bar = indicatif::ProgressBar::new(size);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {bytes}/{total_bytes} [{bar:40}] {binary_bytes_per_sec}, {eta} left",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        Some(bar)
    } else {
        None
    };
    let mut checker = Checker::new(args.port.clone(), args.max_body);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut summaries: Vec<ConnSummary> = Vec::new();
    let json = args.json;
    let quiet = args.quiet;
    let mut io_error = None;
    {
        let mut done = |c: ConnSummary| {
            if json {
                summaries.push(c);
            } else if let Err(e) = out.write_all(summary_text(&c, quiet).as_bytes()) {
                io_error.get_or_insert(e);
            }
        };
        loop {
            let packet = reader
                .next_packet()
                .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
            let Some(p) = packet else { break };
            let number = p.number;
            checker.packet(number, p.linktype, p.data, &mut done);
            if number % 8192 == 0 {
                if let Some(bar) = &progress {
                    bar.set_position(reader.consumed());
                }
            }
        }
        checker.finish(&mut done);
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    if let Some(e) = io_error {
        return Err(e.into());
    }
    checker.totals.seconds = started.elapsed().as_secs_f64();
    let t = &checker.totals;
    if json {
        summaries.sort_by_key(|c| c.id);
        let connections: Vec<JsonConn> = summaries
            .iter()
            .map(|c| JsonConn {
                summary: c,
                listed: &c.kept,
            })
            .collect();
        let doc = serde_json::json!({
            "tool": "cqlframe check",
            "capture": path.display().to_string(),
            "ports": args.port,
            "totals": t,
            "connections": connections,
        });
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialisable")
        )?;
    } else {
        writeln!(
            out,
            "{}: {} packets, {} CQL connections, {} bytes of CQL streams; {} violations, {} findings (SHOULD){}; {:.2} s ({:.0} MB/s)",
            path.display(),
            t.packets,
            t.connections,
            t.bytes,
            t.violations,
            t.findings,
            if t.ip_fragments_skipped > 0 {
                format!("; {} IP fragments skipped", t.ip_fragments_skipped)
            } else {
                String::new()
            },
            t.seconds,
            size as f64 / 1e6 / t.seconds.max(1e-9)
        )?;
    }
    out.flush()?;
    if t.violations > 0 {
        return Err(Failure::Rule);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
