//! Where a command's bytes come from: `--hex`, a file, or standard input (`-`).

use crate::Failure;
use clap::{Args as ClapArgs, ValueEnum};
use cqlframe::checksum::PayloadChecksum;
use cqlframe::format::{Format, FrameSettings};
use std::io::Read;
use std::path::PathBuf;

#[derive(ClapArgs)]
pub struct Input {
    /// The bytes as hexadecimal (spaces allowed).
    #[arg(long, conflicts_with = "file")]
    hex: Option<String>,
    /// File to read, or `-` for standard input.
    #[arg(required_unless_present = "hex")]
    file: Option<PathBuf>,
}

impl Input {
    pub fn read(&self) -> Result<Vec<u8>, Failure> {
        if let Some(h) = &self.hex {
            let clean: String = h.chars().filter(|c| !c.is_whitespace()).collect();
            return hex::decode(clean).map_err(|e| Failure::Io(format!("--hex: {e}")));
        }
        let path = self
            .file
            .as_ref()
            .expect("clap requires FILE without --hex");
        let mut bytes = Vec::new();
        if path.as_os_str() == "-" {
            std::io::stdin().read_to_end(&mut bytes)?;
        } else {
            bytes =
                std::fs::read(path).map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
        }
        Ok(bytes)
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Uncompressed,
    Lz4,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ChecksumArg {
    Crc32,
    Crc32c,
}

/// The frame settings options shared by `decode` and `encode`.
#[derive(ClapArgs)]
pub struct Settings {
    /// Frame format (STARTUP COMPRESSION absent, or lz4).
    #[arg(long, value_enum, default_value = "uncompressed")]
    format: FormatArg,
    /// Payload checksum (STARTUP FRAME_CHECKSUM).
    #[arg(long, value_enum, default_value = "crc32")]
    checksum: ChecksumArg,
}

impl Settings {
    pub fn get(&self) -> FrameSettings {
        let format = match self.format {
            FormatArg::Uncompressed => Format::Uncompressed,
            FormatArg::Lz4 => Format::Lz4,
        };
        let checksum = match self.checksum {
            ChecksumArg::Crc32 => PayloadChecksum::Crc32,
            ChecksumArg::Crc32c => PayloadChecksum::Crc32c,
        };
        FrameSettings::new(format, checksum)
    }
}
