//! `cqlframe decode`: every frame and envelope of a stream, or the rule it breaks.
//!
//! The input is read in chunks and decoding stops at the first error, so a stream that breaks a
//! rule early is never read whole. Text lines are written as the events come (memory: the
//! decoder's, bounded by one frame and `--max-envelope-body`); `--json` is one document holding
//! every frame and envelope, so its memory grows with the valid part of the stream.

use crate::input::{Input, Settings};
use crate::Failure;
use clap::Args as ClapArgs;
use cqlframe::assembler::DEFAULT_MAX_ENVELOPE_BODY;
use cqlframe::decoder::{Decoder, Event};
use cqlframe::envelope::{opcode_name, RESPONSE_BIT};
use cqlframe::error::FramingError;
use cqlframe_harness::output::{self, Versioned};
use cqlframe_harness::transcript::{EnvelopeRecord, FrameRecord, Transcript};
use cqlframe_harness::wire_log;
use std::io::{Read, Write};

/// Bytes read from the input at a time.
const CHUNK: usize = 64 << 10;

/// Decode a stream of frames (no handshake) and list its frames and envelopes.
#[derive(ClapArgs)]
pub struct Args {
    #[command(flatten)]
    settings: Settings,
    /// Largest envelope body accepted (RECV-12).
    #[arg(long, default_value_t = DEFAULT_MAX_ENVELOPE_BODY)]
    max_envelope_body: u32,
    /// Print one JSON document instead of text (schemas/decode.schema.json; its `format` field
    /// is the document's version).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    input: Input,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let mut input = args.input.open()?;
    let mut decoder = Decoder::new(args.settings.get(), args.max_envelope_body);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut transcript = Transcript::default();
    let mut frames = 0usize;
    let mut written = Ok(());
    let mut buf = vec![0u8; CHUNK];
    let mut result = Ok(());
    while result.is_ok() && written.is_ok() {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        result = decoder.decode(&buf[..n], |event| {
            if args.json {
                match event {
                    Event::Frame(f) => transcript.frames.push(FrameRecord::of(f)),
                    Event::Envelope(e) => transcript.envelopes.push(EnvelopeRecord::of(&e)),
                    _ => {}
                }
            } else if written.is_ok() {
                written = write_event(&mut out, &event, &mut frames);
            }
            Ok(())
        });
    }
    written?;
    let error = result.and_then(|()| decoder.finish()).err();
    let failed = error.is_some();
    if args.json {
        transcript.error = error;
        let document = Versioned {
            format: output::DECODE,
            document: &transcript,
        };
        serde_json::to_writer_pretty(&mut out, &document).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else if let Some(err) = &error {
        write_error(&mut out, err)?;
    }
    out.flush()?;
    if failed {
        return Err(Failure::Rule);
    }
    Ok(())
}

fn write_event(out: &mut impl Write, event: &Event<'_>, frames: &mut usize) -> std::io::Result<()> {
    match event {
        Event::Frame(f) => {
            writeln!(out, "frame {frames} {}", wire_log::frame_text(f))?;
            *frames += 1;
        }
        Event::Envelope(e) => {
            let h = e.header;
            writeln!(
                out,
                "envelope: v{} {}, flags {:#04x}, stream {}, {}, length {}",
                h.version & !RESPONSE_BIT,
                if h.version & RESPONSE_BIT != 0 {
                    "response"
                } else {
                    "request"
                },
                h.flags,
                h.stream,
                opcode_name(h.opcode),
                h.length,
            )?;
        }
        _ => {}
    }
    Ok(())
}

fn write_error(out: &mut impl Write, err: &FramingError) -> std::io::Result<()> {
    writeln!(
        out,
        "error: {} {} at byte {}: {}",
        err.rule(),
        err.kind.name(),
        err.offset,
        err.kind
    )
}
