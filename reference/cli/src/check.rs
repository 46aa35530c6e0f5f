//! `cqlframe check CAPTURE`: every CQL connection of a pcap or pcapng capture checked against
//! the framing rules (the work is `cqlframe_harness::check`; this is its command line).

use crate::Failure;
use clap::Args as ClapArgs;
use cqlframe::assembler::DEFAULT_MAX_ENVELOPE_BODY;
use cqlframe_harness::check::{found_line, summary_text, Checker, ConnSummary, Event, Totals};
use cqlframe_harness::output;
use cqlframe_harness::pcap::{generate, read::Reader};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Check every CQL connection of a capture (pcap or pcapng) against the framing rules.
///
/// Each violation is reported with its rule ID, packet number, connection, direction and byte
/// offset in that direction's stream; each connection gets a summary. Exit status 1 when any
/// MUST-level rule is broken (SHOULD-level findings are listed but do not fail); 3 when the
/// capture is corrupt or cut short (what came before is still checked and reported) or when
/// every packet is on a link type this command does not decode (nothing was checked).
///
/// Machine-readable output, each versioned by its `format` field and described by a JSON Schema
/// in schemas/: --json writes one document at the end (schemas/check.schema.json), its memory
/// growing with the connections; --json-lines streams one JSON object per line as connections
/// close, in bounded memory (schemas/check-line.schema.json): a `finding` line per rule broken
/// per direction, then that connection's `connection` line, and a `totals` line at the end.
///
/// Live traffic: `dumpcap -w - -f 'tcp port 9042' | cqlframe check - --follow` judges a running
/// system. The capture `-` is standard input; --follow prints each rule as soon as it is first
/// broken in a direction (a `found` line with --json-lines) and each connection's summary as it
/// closes, flushed at once. Memory stays bounded however long it runs: a closed connection is
/// forgotten (one that never closes is held, within the limits of reference/cli/LIMITS.md).
#[derive(ClapArgs)]
pub struct Args {
    /// The capture file; `-` reads standard input.
    #[arg(required_unless_present = "generate")]
    capture: Option<PathBuf>,
    /// Report each rule as it is first broken and each connection as it closes, flushing the
    /// output each time (text or --json-lines).
    #[arg(long, conflicts_with = "json")]
    follow: bool,
    /// Server ports of CQL connections (comma-separated); 9042 by default, as the Wireshark
    /// dissector's `cqlframe.port`.
    #[arg(long, value_delimiter = ',', default_value = "9042")]
    port: Vec<u16>,
    /// One JSON document on stdout instead of text (schemas/check.schema.json).
    #[arg(long, conflicts_with = "json_lines")]
    json: bool,
    /// One JSON object per line on stdout as connections close, for large captures: findings,
    /// connection summaries, then the totals (schemas/check-line.schema.json).
    #[arg(long)]
    json_lines: bool,
    /// Text output: violations and the totals only, no per-connection summaries.
    #[arg(long)]
    quiet: bool,
    /// Largest envelope body accepted (RECV-12). A capture does not show the receiver's
    /// configured maximum: by default 256 MiB, the most an Apache Cassandra node takes, so that
    /// no envelope a node may accept is called too large (the Wireshark dissector's
    /// `cqlframe.max_body` defaults to the same).
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

pub fn run(args: Args) -> Result<(), Failure> {
    if let Some(out) = &args.generate {
        return generate::run(&args.from, out, args.megabytes).map_err(Failure::Io);
    }
    let path = args.capture.clone().expect("clap requires a capture");
    let (input, size): (Box<dyn Read>, u64) = if path.as_os_str() == "-" {
        (Box::new(std::io::stdin().lock()), 0)
    } else {
        let file = std::fs::File::open(&path)
            .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        (Box::new(file), size)
    };
    let started = Instant::now();
    let mut reader =
        Reader::new(input).map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
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
    let json_lines = args.json_lines;
    let quiet = args.quiet;
    let follow = args.follow;
    let mut io_error = None;
    let mut capture_error = None;
    {
        let mut done = |event: Event| {
            let written = match event {
                Event::Found(v) if follow && json_lines => {
                    write_line(&mut out, "found", object(&v))
                }
                Event::Found(v) if follow => writeln!(out, "{}", found_line(&v)),
                Event::Found(_) => Ok(()),
                Event::Closed(c) if json => {
                    summaries.push(*c);
                    Ok(())
                }
                Event::Closed(c) if json_lines => write_connection_lines(&mut out, *c),
                Event::Closed(c) => out.write_all(summary_text(&c, quiet).as_bytes()),
            };
            let written = written.and_then(|()| if follow { out.flush() } else { Ok(()) });
            if let Err(e) = written {
                io_error.get_or_insert(e);
            }
        };
        loop {
            let p = match reader.next_packet() {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(e) => {
                    capture_error = Some(e);
                    break;
                }
            };
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
        let mut doc = run_json(&path, &args.port, t, capture_error.as_deref());
        doc.insert("format".into(), json!(output::CHECK));
        doc.insert("connections".into(), json!(summaries));
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialisable")
        )?;
    } else if json_lines {
        let run = run_json(&path, &args.port, t, capture_error.as_deref());
        write_line(&mut out, "totals", run)?;
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
    if !t.unsupported_link_types.is_empty() {
        eprintln!(
            "cqlframe check: warning: {} packets on link types {:?} that are not decoded (Ethernet, Linux cooked, raw IP and BSD loopback are): their traffic is not checked",
            t.unsupported_link_packets, t.unsupported_link_types
        );
    }
    if let Some(e) = capture_error {
        return Err(Failure::Io(format!(
            "{}: {e}; only what came before is checked",
            path.display()
        )));
    }
    if t.packets > 0 && t.unsupported_link_packets == t.packets {
        return Err(Failure::Io(format!(
            "{}: nothing checked: no packet is on a link type this command decodes",
            path.display()
        )));
    }
    if t.violations > 0 {
        return Err(Failure::Rule);
    }
    Ok(())
}

/// What the JSON of a run says besides its connections: the capture, the ports and the totals.
fn run_json(
    path: &Path,
    ports: &[u16],
    totals: &Totals,
    capture_error: Option<&str>,
) -> serde_json::Map<String, Value> {
    let Value::Object(map) = json!({
        "tool": "cqlframe check",
        "capture": path.display().to_string(),
        "ports": ports,
        "totals": totals,
        "capture_error": capture_error,
    }) else {
        unreachable!("an object literal")
    };
    map
}

/// A closed connection as --json-lines writes it: a `finding` line per rule broken per
/// direction (the entries of the connection's `rules` in --json), then the `connection` line,
/// the summary without those entries.
pub(crate) fn write_connection_lines(out: &mut impl Write, c: ConnSummary) -> std::io::Result<()> {
    for v in &c.rules {
        write_line(out, "finding", object(v))?;
    }
    let mut summary = object(&c);
    summary.remove("rules");
    write_line(out, "connection", summary)
}

pub(crate) fn object(value: &impl serde::Serialize) -> serde_json::Map<String, Value> {
    match serde_json::to_value(value).expect("serialisable") {
        Value::Object(map) => map,
        other => unreachable!("a struct serialises to an object, not {other}"),
    }
}

/// One line of --json-lines: `fields` with the line's `format` version and `type`.
pub(crate) fn write_line(
    out: &mut impl Write,
    kind: &str,
    mut fields: serde_json::Map<String, Value>,
) -> std::io::Result<()> {
    fields.insert("format".into(), json!(output::CHECK_LINE));
    fields.insert("type".into(), json!(kind));
    serde_json::to_writer(&mut *out, &fields)?;
    out.write_all(b"\n")
}
