//! The wire log: what went over a connection, one text line per frame, envelope or event, as
//! the conformance server and the probe keep it and the reports show it. A frame's line is also
//! what `cqlframe decode` prints, so a frame reads the same in every tool.

use cqlframe::format::Format;
use cqlframe::frame_decoder::Frame;
use serde::Serialize;

/// One line of a connection's wire log.
#[derive(Clone, Debug, Serialize)]
pub struct Line {
    pub t_ms: f64,
    pub dir: Dir,
    pub text: String,
}

/// What a line is about: bytes from the client, bytes from the server, or what the tool did
/// or saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    C2s,
    S2c,
    Note,
}

impl Dir {
    /// The name the reports show (and style the line by): `c2s`, `s2c` or `note`.
    pub fn name(self) -> &'static str {
        match self {
            Dir::C2s => "c2s",
            Dir::S2c => "s2c",
            Dir::Note => "note",
        }
    }
}

/// A frame from its offset on: `at 0: length 5, self-contained, checksum bit 0, reserved 0x0,
/// crc24 9a9919, payload checksum b60e8074` (an LZ4 frame gives both lengths).
pub fn frame_text(f: &Frame<'_>) -> String {
    let h = f.header;
    let lengths = match h.format {
        Format::Lz4 => format!(
            "compressed {} uncompressed {}",
            h.payload_length, h.uncompressed_length
        ),
        Format::Uncompressed => format!("length {}", h.payload_length),
    };
    format!(
        "at {}: {lengths}, {}, checksum bit {}, reserved {:#x}, crc24 {:06x}, payload checksum {:08x}",
        f.offset,
        if h.self_contained {
            "self-contained"
        } else {
            "not self-contained"
        },
        u8::from(h.checksum_bit),
        h.reserved,
        h.crc24,
        f.payload_checksum,
    )
}

/// A frame's line in a wire log.
pub fn frame_line(f: &Frame<'_>) -> String {
    format!("frame {}", frame_text(f))
}
