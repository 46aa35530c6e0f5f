//! `cqlframe decode`: every frame and envelope of a stream, or the rule it breaks.

use crate::input::{Input, Settings};
use crate::Failure;
use clap::Args as ClapArgs;
use cqlframe::assembler::DEFAULT_MAX_ENVELOPE_BODY;
use cqlframe::envelope::RESPONSE_BIT;
use cqlframe_harness::transcript::Transcript;

/// Decode a stream of frames (no handshake) and list its frames and envelopes.
#[derive(ClapArgs)]
pub struct Args {
    #[command(flatten)]
    settings: Settings,
    /// Largest envelope body accepted (RECV-12).
    #[arg(long, default_value_t = DEFAULT_MAX_ENVELOPE_BODY)]
    max_envelope_body: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    input: Input,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let bytes = args.input.read()?;
    let t = Transcript::decode(
        args.settings.get(),
        args.max_envelope_body,
        [bytes.as_slice()],
    );
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&t).expect("transcript serialises")
        );
    } else {
        print_text(&t);
    }
    match &t.error {
        None => Ok(()),
        Some(_) => Err(Failure::Rule),
    }
}

fn print_text(t: &Transcript) {
    for (i, f) in t.frames.iter().enumerate() {
        let lengths = match f.uncompressed_length {
            Some(u) => format!("compressed {} uncompressed {u}", f.payload_length),
            None => format!("length {}", f.payload_length),
        };
        println!(
            "frame {i} at {}: {lengths}, {}, checksum bit {}, reserved {:#x}, crc24 {:06x}, payload checksum {:08x}",
            f.offset,
            if f.self_contained { "self-contained" } else { "not self-contained" },
            u8::from(f.checksum_bit),
            f.reserved,
            f.header_crc24,
            f.payload_checksum,
        );
    }
    for e in &t.envelopes {
        println!(
            "envelope: v{} {}, flags {:#04x}, stream {}, {}, length {}",
            e.version & !RESPONSE_BIT,
            if e.version & RESPONSE_BIT != 0 {
                "response"
            } else {
                "request"
            },
            e.flags,
            e.stream,
            e.opcode_name,
            e.length,
        );
    }
    if let Some(err) = &t.error {
        println!(
            "error: {} {} at byte {}: {}",
            err.rule(),
            err.kind.name(),
            err.offset,
            err.kind
        );
    }
}
