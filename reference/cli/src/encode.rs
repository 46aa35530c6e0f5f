//! `cqlframe encode`: frames carrying envelopes, as a conforming sender packs and splits them.

use crate::input::{Input, Settings};
use crate::Failure;
use clap::Args as ClapArgs;
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::envelope::split_envelopes;
use std::io::Write;

/// Frame a run of whole envelopes (their bytes back to back); write the frames.
#[derive(ClapArgs)]
pub struct Args {
    #[command(flatten)]
    settings: Settings,
    /// Split like Cassandra's server (131060-byte pieces for envelopes of 131060 bytes or more)
    /// instead of like the drivers (131071-byte pieces for what exceeds 131071).
    #[arg(long)]
    server_split: bool,
    /// Print the frames as hex instead of writing binary.
    #[arg(long)]
    hex_output: bool,
    #[command(flatten)]
    input: Input,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let bytes = args.input.read()?;
    let envelopes = split_envelopes(&bytes).map_err(|e| Failure::Io(e.to_string()))?;
    let policy = if args.server_split {
        SplitPolicy::SERVER
    } else {
        SplitPolicy::DRIVERS
    };
    let mut out = Vec::new();
    FrameEncoder::new(args.settings.get(), policy).write_envelopes(envelopes, &mut out);
    if args.hex_output {
        println!("{}", hex::encode(&out));
    } else {
        std::io::stdout().write_all(&out)?;
    }
    Ok(())
}
