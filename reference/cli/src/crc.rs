//! `cqlframe crc`: one checksum of some bytes.

use crate::input::Input;
use crate::Failure;
use clap::{Args as ClapArgs, ValueEnum};
use cqlframe::checksum;

/// Print the CRC24, seeded CRC32 or CRC32C of the input in hex.
#[derive(ClapArgs)]
pub struct Args {
    #[arg(long, value_enum)]
    algorithm: Algorithm,
    #[command(flatten)]
    input: Input,
}

#[derive(Clone, Copy, ValueEnum)]
enum Algorithm {
    /// Frame header CRC24 (CRC-1).
    Crc24,
    /// Protocol v5 payload CRC32, seeded with FA 2D 55 CA (CRC-2).
    Crc32,
    /// Unseeded CRC32C (CRC-3).
    Crc32c,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let bytes = args.input.read()?;
    match args.algorithm {
        Algorithm::Crc24 => println!("{:06x}", checksum::crc24(&bytes)),
        Algorithm::Crc32 => println!("{:08x}", checksum::crc32(&bytes)),
        Algorithm::Crc32c => println!("{:08x}", checksum::crc32c(&bytes)),
    }
    Ok(())
}
