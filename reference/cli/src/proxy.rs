//! `cqlframe proxy`: a driver's traffic to a node forwarded and judged as it flows (the work is
//! `cqlframe_harness::proxy`; this is its command line).

use crate::check::{object, write_connection_lines, write_line};
use crate::stop::Stop;
use crate::Failure;
use clap::Args as ClapArgs;
use cqlframe_harness::check::{found_line, summary_text, Event};
use cqlframe_harness::proxy::{report, Config, FaultSpec, Limits, Live, Proxy};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Forward a driver's connections to a node and judge both directions as they flow.
///
/// Point the driver at --listen instead of the node: each connection is forwarded to
/// --upstream as it is, and every byte both ways goes through the judge `cqlframe check` uses.
/// Each rule is printed when it is first broken (`connection N: RULE (LEVEL) direction: found
/// at byte …`), each connection's summary when it closes. On SIGINT, SIGTERM or the end of
/// --duration the proxy closes what is still open and writes report.json
/// (schemas/proxy-report.schema.json), junit.xml (a test case per connection and per rule
/// broken) and index.html (summaries and wire logs) into --report-dir. Exit status 1 when a
/// MUST-level rule was broken, 3 on an I/O error.
///
/// Limits (reference/cli/LIMITS.md): at most --connections open at once (one more is closed on
/// accept and counted), a connection with no byte either way for --idle seconds is closed,
/// envelopes are judged up to --max-body bytes; so memory stays under about --connections ×
/// (2 × --max-body + 1 MiB) however long it runs and whatever the peers send. A peer that
/// resets, stalls or sends garbage ends its own connection only.
#[derive(ClapArgs)]
pub struct Args {
    /// Address to listen on, e.g. 127.0.0.1:9043.
    #[arg(long)]
    listen: SocketAddr,
    /// The node, HOST:PORT.
    #[arg(long)]
    upstream: String,
    /// Write every connection, both directions, as a pcap file (server port shown as 9042):
    /// `cqlframe check` on it gives the proxy's findings.
    #[arg(long)]
    capture: Option<PathBuf>,
    /// Where report.json, junit.xml and index.html go.
    #[arg(long, default_value = "build/proxy")]
    report_dir: PathBuf,
    /// Stop after this many seconds (default: on SIGINT or SIGTERM only).
    #[arg(long)]
    duration: Option<f64>,
    /// Live output as JSON lines (schemas/check-line.schema.json): a `found` line per rule as
    /// first broken, then at each connection's close its `finding` lines and `connection` line;
    /// a `reaction` line when the proxy sees the driver fail to react as a rule requires.
    #[arg(long)]
    json_lines: bool,
    /// Text output: findings only, no summary of a connection that broke nothing.
    #[arg(long)]
    quiet: bool,
    /// Connections open at once.
    #[arg(long, default_value_t = Limits::DEFAULT.connections)]
    connections: usize,
    /// Seconds without a byte either way after which a connection is closed.
    #[arg(long, default_value_t = Limits::DEFAULT.idle.as_secs())]
    idle: u64,
    /// Largest envelope body judged acceptable (RECV-12): the node's
    /// native_transport_max_message_size (Apache Cassandra's default, 16 MiB).
    #[arg(long, default_value_t = Limits::DEFAULT.max_body)]
    max_body: u32,
    /// Disturb the traffic: `chop=N` delivers the node's bytes to the client in pieces of N
    /// bytes, each read by the driver before the next is written (as the conformance suite's
    /// recv.chop cases do). A driver that then reads an answer, sends nothing for a second while
    /// no other connection is busy, and closes the connection did not take the answer: a
    /// `RECV-4 (MUST) driver:` line, and the run fails.
    ///
    /// Or a frame fault of the catalogue (`cqlframe conformance list`: header-bitflip,
    /// payload-bitflip, trailer-bitflip, checksum-bit, truncate-frame, truncate-sequence,
    /// empty-continuation, overshoot, interleave, lz4-length, lz4-bad-offset, ...) on the node's
    /// real frames: `KIND[,connection=N][,after=N][,to=server]`. From the switch on, every
    /// envelope of that direction is decoded and framed again with the negotiated format and
    /// checksum, the first one after N (0) that the fault applies to broken as the conformance
    /// server breaks its responses; on every connection, or connection N only; `to=server`
    /// breaks the driver's frames instead.
    #[arg(long)]
    fault: Vec<String>,
    /// With a frame fault in the node's bytes: the driver must give the connection up within
    /// 10 s of the faulty frame (RECV-11); exit 1 if it does not, or if the fault never applied.
    #[arg(long)]
    expect_fault: bool,
    /// After bytes moved, a connection's thread polls its sockets without sleeping for this
    /// many microseconds before it sleeps (one connection at a time, so at most one CPU). The
    /// default covers the gaps within one exchange, so that the thread's CPU does not go idle
    /// in them: where idle CPUs halt at once (virtual machines), the scheduler then moves the
    /// thread and its peers between CPUs far less. Some hundreds cover a round trip to the node
    /// (the answer is forwarded without a wake-up), for a CPU kept busy; 0 sleeps at once.
    #[arg(long, default_value_t = 5, value_name = "MICROSECONDS")]
    spin: u64,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let mut chop = 0;
    let mut fault = None;
    for f in &args.fault {
        match f.split_once('=') {
            Some(("chop", n)) => {
                chop =
                    n.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
                        Failure::Io(format!("--fault {f}: chop takes a byte count"))
                    })?
            }
            _ if fault.is_some() => {
                return Err(Failure::Io(format!(
                    "--fault {f}: one frame fault at a time"
                )))
            }
            _ => {
                let spec = FaultSpec::parse(f).map_err(|e| Failure::Io(format!("--fault {e}")))?;
                fault = Some((spec, args.expect_fault));
            }
        }
    }
    if args.expect_fault && fault.is_none() {
        return Err(Failure::Io(
            "--expect-fault needs a frame fault (--fault KIND)".into(),
        ));
    }
    let capture: Option<Box<dyn Write + Send>> = match &args.capture {
        Some(path) => Some(Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?,
        ))),
        None => None,
    };
    let (json_lines, quiet) = (args.json_lines, args.quiet);
    let sink = Box::new(move |live: Live<'_>| {
        let mut out = std::io::stdout().lock();
        let _ = match live {
            Live::Judged(Event::Found(v)) if json_lines => write_line(&mut out, "found", object(v)),
            Live::Judged(Event::Found(v)) => writeln!(out, "{}", found_line(v)),
            Live::Judged(Event::Closed(c)) if json_lines => {
                write_connection_lines(&mut out, (**c).clone())
            }
            Live::Judged(Event::Closed(c)) => out.write_all(summary_text(c, quiet).as_bytes()),
            Live::Reaction(r) if json_lines => write_line(&mut out, "reaction", object(r)),
            Live::Reaction(r) => writeln!(out, "{}", r.line()),
        };
        let _ = out.flush();
    });
    let config = Config {
        listen: args.listen,
        upstream: args.upstream.clone(),
        limits: Limits {
            connections: args.connections,
            idle: Duration::from_secs(args.idle),
            max_body: args.max_body,
        },
        chop,
        fault,
        capture,
        spin: Duration::from_micros(args.spin),
    };
    let stop = Stop::on_signals()?;
    let proxy = Proxy::start(config, sink)
        .map_err(|e| Failure::Io(format!("proxy {} -> {}: {e}", args.listen, args.upstream)))?;
    eprintln!(
        "cqlframe proxy: listening on {}, forwarding to {}",
        proxy.local, args.upstream
    );
    stop.wait(
        args.duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0))),
    );
    let outcome = proxy.stop();
    report::write_all(&outcome, &args.report_dir)
        .map_err(|e| Failure::Io(format!("{}: {e}", args.report_dir.display())))?;
    let t = &outcome.totals;
    eprintln!(
        "cqlframe proxy: {} connections, {} violations, {} findings (SHOULD), {} refused, {} could not reach the upstream; reports: {}/index.html, report.json, junit.xml",
        t.connections,
        t.violations,
        t.findings,
        outcome.refused_connections,
        outcome.upstream_failures,
        args.report_dir.display()
    );
    if let Some(e) = &outcome.capture_error {
        return Err(Failure::Io(e.clone()));
    }
    if args.expect_fault && outcome.faults_applied == 0 {
        eprintln!("cqlframe proxy: the fault never applied: the driver's reaction is not known");
        return Err(Failure::Rule);
    }
    if outcome.broke_must() {
        return Err(Failure::Rule);
    }
    Ok(())
}
