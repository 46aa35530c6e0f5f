//! Helpers shared by the fuzz targets and the seed generator: how a fuzz input is split into
//! settings, chunking and stream, and an independent LZ4 block decoder to check the library's.
//!
//! Input layout of `decode_whole` and `decode_chunked` (the same, so they share seeds):
//!
//! ```text
//! byte 0   bit 0: format (0 uncompressed, 1 lz4)       bit 1: checksum (0 crc32, 1 crc32c)
//!          bits 2-4: max envelope body (MAX_BODY)      bits 5-7: re-encode capacity (CAPACITY)
//! byte 1   chunk spec: bits 0-2 = k, bits 3-5 = shift (see `chunks`)
//! k bytes  chunk sizes
//! rest     the stream
//! ```

use cqlframe::checksum::PayloadChecksum;
use cqlframe::connection::ServerOptions;
use cqlframe::{Format, FrameSettings};

/// Maximum envelope body, chosen by 3 bits: small, so sequences and RECV-12 are reachable.
pub const MAX_BODY: [u32; 8] = [0, 1, 9, 64, 300, 4096, 70_000, 1 << 20];
/// Split capacity of the re-encoding round trip, chosen by 3 bits (at least 9, SEND-8).
pub const CAPACITY: [usize; 8] = [9, 10, 11, 16, 64, 1000, 131_060, 131_071];

/// Frame settings from two bits: bit 0 the format, bit 1 the payload checksum.
pub fn settings(bits: u8) -> FrameSettings {
    let format = if bits & 1 == 0 {
        Format::Uncompressed
    } else {
        Format::Lz4
    };
    let checksum = if bits & 2 == 0 {
        PayloadChecksum::Crc32
    } else {
        PayloadChecksum::Crc32c
    };
    FrameSettings::new(format, checksum)
}

/// The inverse of [`settings`].
pub fn settings_bits(s: FrameSettings) -> u8 {
    u8::from(s.format == Format::Lz4) | u8::from(s.checksum == PayloadChecksum::Crc32c) << 1
}

/// A parsed `decode_*` input.
#[derive(Debug)]
pub struct DecodeInput<'a> {
    pub settings: FrameSettings,
    pub max_body: u32,
    pub capacity: usize,
    pub chunking: ChunkSpec<'a>,
    pub stream: &'a [u8],
}

impl<'a> DecodeInput<'a> {
    pub fn parse(data: &'a [u8]) -> Option<Self> {
        let (&b0, rest) = data.split_first()?;
        let (chunking, stream) = ChunkSpec::parse(rest)?;
        Some(DecodeInput {
            settings: settings(b0),
            max_body: MAX_BODY[usize::from(b0 >> 2 & 7)],
            capacity: CAPACITY[usize::from(b0 >> 5)],
            chunking,
            stream,
        })
    }
}

/// What the `judge` target tells the judge of the node, from bits 0-1: nothing (`None`: it
/// learns from SUPPORTED), LZ4 with CRC32 and CRC32C, a node that predates FRAME_CHECKSUM, or
/// one without LZ4 that accepts CRC32 only.
pub fn judge_node(bits: u8) -> Option<ServerOptions> {
    match bits & 3 {
        0 => None,
        1 => Some(ServerOptions::default()),
        2 => Some(ServerOptions {
            checksums: None,
            ..ServerOptions::default()
        }),
        _ => Some(ServerOptions {
            lz4: false,
            checksums: Some(vec![PayloadChecksum::Crc32]),
        }),
    }
}

/// A `judge` input: the node byte, then each (server wrote it, bytes) as one turn.
pub fn judge_input<'a>(
    node_bits: u8,
    turns: impl IntoIterator<Item = (bool, &'a [u8])>,
) -> Vec<u8> {
    let mut v = vec![node_bits];
    for (server, bytes) in turns {
        for piece in bytes.chunks(0x7fff) {
            let turn = piece.len() as u16 | if server { 0x8000 } else { 0 };
            v.extend_from_slice(&turn.to_be_bytes());
            v.extend_from_slice(piece);
        }
    }
    v
}

/// How to cut a stream into chunks: a spec byte (k = bits 0-2, shift = bits 3-5) then k size
/// bytes. Chunk sizes cycle through `size << shift`; with k = 0 every chunk is `1 << shift` bytes.
/// A size of 0 gives an empty chunk (a `decode(&[])` call); if all k sizes are 0 they count as 1.
#[derive(Clone, Copy, Debug)]
pub struct ChunkSpec<'a> {
    pub shift: u32,
    pub sizes: &'a [u8],
}

impl<'a> ChunkSpec<'a> {
    /// Takes the spec from the front of `data`; returns it and the rest.
    pub fn parse(data: &'a [u8]) -> Option<(Self, &'a [u8])> {
        let (&spec, rest) = data.split_first()?;
        let k = usize::from(spec & 7).min(rest.len());
        let (sizes, rest) = rest.split_at(k);
        Some((
            ChunkSpec {
                shift: u32::from(spec >> 3 & 7),
                sizes,
            },
            rest,
        ))
    }

    /// The spec byte and size bytes for `sizes` (at most 7) with `shift`.
    pub fn encode(shift: u32, sizes: &[u8]) -> Vec<u8> {
        assert!(sizes.len() <= 7 && shift <= 7);
        let mut v = vec![sizes.len() as u8 | (shift as u8) << 3];
        v.extend_from_slice(sizes);
        v
    }

    /// Cuts `stream` into chunks; their concatenation is `stream`.
    pub fn chunks<'s>(&self, stream: &'s [u8]) -> Vec<&'s [u8]> {
        let all_zero = self.sizes.iter().all(|&s| s == 0);
        let mut out = Vec::new();
        let mut rest = stream;
        let mut i = 0;
        while !rest.is_empty() {
            let size = if self.sizes.is_empty() || all_zero {
                1usize << self.shift
            } else {
                usize::from(self.sizes[i % self.sizes.len()]) << self.shift
            };
            i += 1;
            let (chunk, tail) = rest.split_at(size.min(rest.len()));
            out.push(chunk);
            rest = tail;
        }
        out
    }
}

/// What [`lz4_reference_decode`] made of a block: the output and its last match, if any.
pub type Lz4Decoded = (Vec<u8>, Option<(usize, usize)>);

/// Why [`lz4_reference_decode`] rejected a block.
#[derive(Debug, PartialEq, Eq)]
pub enum RefLz4Error {
    /// The block is not a well-formed sequence list (truncated, offset 0 or before the output).
    Malformed(&'static str),
    /// The block decodes to more bytes than declared.
    TooLong,
}

/// An independent, deliberately simple LZ4 block decoder (lz4 `lz4_Block_format.md`): sequences
/// of token, literals, 2-byte offset and match, the last sequence literals only. Output may not
/// exceed `max` bytes. Returns the output and where the last match lies in it (start, end), for
/// the caller to hold against LZ4's end-of-block rules (LZ4-6).
pub fn lz4_reference_decode(block: &[u8], max: usize) -> Result<Lz4Decoded, RefLz4Error> {
    fn length(block: &[u8], pos: &mut usize, base: usize) -> Result<usize, RefLz4Error> {
        let mut len = base;
        if base == 15 {
            loop {
                let b = *block
                    .get(*pos)
                    .ok_or(RefLz4Error::Malformed("length runs past the end"))?;
                *pos += 1;
                len += usize::from(b);
                if b != 255 {
                    break;
                }
            }
        }
        Ok(len)
    }
    let mut out = Vec::new();
    let mut pos = 0;
    let mut last_match = None;
    loop {
        let token = *block
            .get(pos)
            .ok_or(RefLz4Error::Malformed("block ends before a token"))?;
        pos += 1;
        let lit = length(block, &mut pos, usize::from(token >> 4))?;
        let literals = block
            .get(
                pos..pos
                    .checked_add(lit)
                    .ok_or(RefLz4Error::Malformed("literal length overflows"))?,
            )
            .ok_or(RefLz4Error::Malformed("literals run past the end"))?;
        if out.len() + lit > max {
            return Err(RefLz4Error::TooLong);
        }
        out.extend_from_slice(literals);
        pos += lit;
        if pos == block.len() {
            return Ok((out, last_match));
        }
        let offset = block
            .get(pos..pos + 2)
            .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
            .ok_or(RefLz4Error::Malformed("offset runs past the end"))?;
        pos += 2;
        if offset == 0 {
            return Err(RefLz4Error::Malformed("offset 0"));
        }
        if offset > out.len() {
            return Err(RefLz4Error::Malformed(
                "offset before the start of the output",
            ));
        }
        let mlen = length(block, &mut pos, usize::from(token & 15))? + 4;
        if out.len() + mlen > max {
            return Err(RefLz4Error::TooLong);
        }
        last_match = Some((out.len(), out.len() + mlen));
        let start = out.len() - offset;
        for i in 0..mlen {
            out.push(out[start + i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_concatenate() {
        let stream: Vec<u8> = (0..=255).collect();
        for spec in [
            ChunkSpec::encode(0, &[]),
            ChunkSpec::encode(2, &[0, 3, 1]),
            ChunkSpec::encode(7, &[0, 0]),
        ] {
            let (c, rest) = ChunkSpec::parse(&spec).unwrap();
            assert!(rest.is_empty());
            assert_eq!(c.chunks(&stream).concat(), stream);
        }
    }

    #[test]
    fn reference_lz4_decodes_known_block() {
        // "aaaaaaaaaa": literal 'a' then a match of 9 at offset 1, then an empty last literal run.
        let block = [0x15, b'a', 0x01, 0x00, 0x00];
        let (out, last_match) = lz4_reference_decode(&block, 100).unwrap();
        assert_eq!(out, b"aaaaaaaaaa");
        assert_eq!(last_match, Some((1, 10)));
        assert_eq!(lz4_reference_decode(&block, 9), Err(RefLz4Error::TooLong));
        assert!(matches!(
            lz4_reference_decode(&[0x10, b'a', 0, 0, 0], 100),
            Err(RefLz4Error::Malformed(_))
        ));
    }
}
