//! The two frame formats and the settings a connection negotiates for them.

use crate::checksum::PayloadChecksum;
use core::fmt;

/// Largest frame content in bytes: the length fields are 17 bits wide (SEND-1).
pub const MAX_PAYLOAD: usize = (1 << 17) - 1;
/// The payload checksum trailer that ends every frame (FMT-1, CRC-4).
pub const TRAILER_LEN: usize = 4;

/// Which frame layout a connection uses, chosen by STARTUP's COMPRESSION option (NEG-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Format {
    /// 6-byte header, content sent as is.
    Uncompressed,
    /// 8-byte header, content sent as a raw LZ4 block or stored.
    Lz4,
}

impl Format {
    /// Header length in bytes (FMT-2, FMT-7).
    pub const fn header_len(self) -> usize {
        match self {
            Format::Uncompressed => 6,
            Format::Lz4 => 8,
        }
    }

    /// The format a receiver of this one does not expect: a header that fails its CRC24 may
    /// verify as one of it.
    pub const fn other(self) -> Format {
        match self {
            Format::Uncompressed => Format::Lz4,
            Format::Lz4 => Format::Uncompressed,
        }
    }

    /// The longest header of either format: what a decoder reads before it judges a header,
    /// so that one that fails its CRC24 is also tried as the other format's, in any chunking.
    /// No frame is shorter (the smallest is a 6-byte header and a 4-byte trailer).
    pub const LONGEST_HEADER: usize = 8;

    /// Lower-case name used in manifests and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Uncompressed => "uncompressed",
            Format::Lz4 => "lz4",
        }
    }
}

/// What both directions of a framed connection use: the format and the payload checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FrameSettings {
    /// Compressed or not: STARTUP's COMPRESSION.
    pub format: Format,
    /// CRC32 or CRC32C: STARTUP's FRAME_CHECKSUM.
    #[cfg_attr(feature = "serde", serde(with = "checksum_by_name"))]
    pub checksum: PayloadChecksum,
}

/// Parses a payload checksum name as `FRAME_CHECKSUM` spells it (NEG-5: case-insensitive).
pub fn parse_checksum(name: &str) -> Option<PayloadChecksum> {
    [PayloadChecksum::Crc32, PayloadChecksum::Crc32c]
        .into_iter()
        .find(|c| c.name().eq_ignore_ascii_case(name))
}

/// Serialises a [`PayloadChecksum`] as its wire name (`crc32`, `crc32c`).
#[cfg(feature = "serde")]
pub mod checksum_by_name {
    use super::{parse_checksum, PayloadChecksum};
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    /// Writes the checksum's wire name.
    pub fn serialize<S: Serializer>(c: &PayloadChecksum, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(c.name())
    }

    /// Reads a wire name, in any case (NEG-5).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PayloadChecksum, D::Error> {
        let name = String::deserialize(d)?;
        parse_checksum(&name).ok_or_else(|| D::Error::custom(format!("unknown checksum {name:?}")))
    }
}

impl FrameSettings {
    /// Settings of `format` with `checksum`.
    pub const fn new(format: Format, checksum: PayloadChecksum) -> Self {
        FrameSettings { format, checksum }
    }

    /// Whether frames under these settings carry the checksum bit (FMT-13).
    pub fn checksum_bit(self) -> bool {
        self.checksum == PayloadChecksum::Crc32c
    }
}

/// `lz4 crc32c`: the names manifests, reports and the command line use.
impl fmt::Display for FrameSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.format.name(), self.checksum.name())
    }
}

impl Default for FrameSettings {
    /// Protocol v5 without options: uncompressed, CRC32.
    fn default() -> Self {
        FrameSettings::new(Format::Uncompressed, PayloadChecksum::Crc32)
    }
}
