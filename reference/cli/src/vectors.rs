//! `cqlframe vectors`: write or check the golden vectors and the spec's generated examples.

use crate::Failure;
use clap::{Args as ClapArgs, Subcommand};
use std::path::PathBuf;

#[derive(ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    /// Repository root (holds vectors/ and spec/).
    #[arg(long, default_value = ".", global = true)]
    root: PathBuf,
}

#[derive(Subcommand)]
enum Action {
    /// Write vectors/manifest.json, vectors/cases/*.bin, vectors/pcap/*.pcap and spec/generated/examples.adoc.
    Generate,
    /// Check the committed files equal a fresh generation and decode as expected in every chunking.
    Verify,
}

pub fn run(args: Args) -> Result<(), Failure> {
    match args.action {
        Action::Generate => {
            let n = cqlframe_harness::vectors::write(&args.root).map_err(Failure::Io)?;
            println!("wrote {n} files under {}", args.root.display());
            Ok(())
        }
        Action::Verify => match cqlframe_harness::vectors::verify(&args.root) {
            Ok(n) => {
                println!("vectors: {n} passed, 0 failed");
                Ok(())
            }
            Err(problems) => {
                for p in &problems {
                    println!("FAIL {p}");
                }
                println!("vectors: 0 passed, {} failed", problems.len());
                Err(Failure::Rule)
            }
        },
    }
}
