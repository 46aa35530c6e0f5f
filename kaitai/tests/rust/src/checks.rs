//! The receiver's checks the grammar cannot express, independent of the Rust reference:
//! CRC24 (CRC-1), CRC32 seeded with FA 2D 55 CA (CRC-2) and CRC32C (CRC-3), written from the
//! spec's catalogue; LZ4 blocks decoded by liblz4's `LZ4_decompress_safe` (the `lz4` crate),
//! not by the reference's lz4_flex.

/// CRC-1: width 24, poly 0x974F0B, init 0x875060, not reflected, no final XOR. The register
/// sits in the top 24 bits of a u32, so the bit that leaves it is bit 31.
pub fn crc24(data: &[u8]) -> u32 {
    const POLY: u32 = 0x97_4F0B << 8;
    let mut crc: u32 = 0x87_5060 << 8;
    for &b in data {
        crc ^= u32::from(b) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
        }
    }
    crc >> 8
}

/// A reflected CRC-32 (init and final XOR all ones) with the reflected polynomial `poly`,
/// bit by bit: the vectors are small.
fn crc32_reflected(poly: u32, chunks: &[&[u8]]) -> u32 {
    let mut crc = u32::MAX;
    for &b in chunks.iter().flat_map(|c| c.iter()) {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ poly
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// CRC-32/ISO-HDLC's polynomial 0x04C11DB7, reflected.
const ISO_HDLC: u32 = 0xEDB8_8320;
/// CRC-32/ISCSI's (Castagnoli) polynomial 0x1EDC6F41, reflected.
const ISCSI: u32 = 0x82F6_3B78;
const CRC32_SEED: [u8; 4] = [0xFA, 0x2D, 0x55, 0xCA];

/// CRC-2: CRC-32/ISO-HDLC over FA 2D 55 CA, then the payload.
pub fn crc32_seeded(payload: &[u8]) -> u32 {
    crc32_reflected(ISO_HDLC, &[&CRC32_SEED, payload])
}

/// CRC-3: CRC-32/ISCSI over the payload, no seed.
pub fn crc32c(payload: &[u8]) -> u32 {
    crc32_reflected(ISCSI, &[payload])
}

fn crc32_unseeded(data: &[u8]) -> u32 {
    crc32_reflected(ISO_HDLC, &[data])
}

/// The payload checksum a connection negotiated, as the manifest names it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    Crc32,
    Crc32c,
}

impl Algorithm {
    pub fn checksum(self, payload: &[u8]) -> u32 {
        match self {
            Algorithm::Crc32 => crc32_seeded(payload),
            Algorithm::Crc32c => crc32c(payload),
        }
    }
}

/// One check value of the spec's checksum catalogue.
pub struct CatalogueEntry {
    pub name: &'static str,
    pub function: fn(&[u8]) -> u32,
    pub input: &'static [u8],
    pub want: u32,
}

pub const CATALOGUE: [CatalogueEntry; 5] = [
    CatalogueEntry {
        name: "crc24 check value",
        function: crc24,
        input: b"123456789",
        want: 0x4B_3F02,
    },
    CatalogueEntry {
        name: "crc32 seeded check value",
        function: crc32_seeded,
        input: b"123456789",
        want: 0xE2A2_61A7,
    },
    CatalogueEntry {
        name: "crc32 seeded, empty payload",
        function: crc32_seeded,
        input: b"",
        want: 0x4477_7ED3,
    },
    CatalogueEntry {
        name: "crc32c check value",
        function: crc32c,
        input: b"123456789",
        want: 0xE306_9283,
    },
    CatalogueEntry {
        name: "crc32 unseeded (ISO-HDLC) check value",
        function: crc32_unseeded,
        input: b"123456789",
        want: 0xCBF4_3926,
    },
];

/// Why a block was refused: the receiver's rule it fails.
#[derive(Debug)]
pub enum Lz4Failure {
    /// Broken, or another length than declared (LZ4-4; the sender broke LZ4-1).
    Block,
    /// Decodes to the declared length, but the last match starts less than 12 or ends less
    /// than 5 bytes before the end (LZ4-6; the sender broke LZ4-5).
    EndOfBlock,
}

impl Lz4Failure {
    pub fn rule(&self) -> &'static str {
        match self {
            Lz4Failure::Block => "LZ4-4",
            Lz4Failure::EndOfBlock => "LZ4-6",
        }
    }
}

/// Decodes one raw LZ4 block into exactly `declared` bytes. liblz4 refuses a block that breaks
/// LZ4's end-of-block rules as it refuses a broken one, so the sequences are walked first to
/// tell LZ4-6 from LZ4-4.
pub fn lz4_decompress(block: &[u8], declared: usize) -> Result<Vec<u8>, Lz4Failure> {
    let (produced, last_match) = lz4_sequences(block)?;
    if produced != declared {
        return Err(Lz4Failure::Block);
    }
    if let Some((start, end)) = last_match {
        if start + 12 > declared || end + 5 > declared {
            return Err(Lz4Failure::EndOfBlock);
        }
    }
    let size = i32::try_from(declared).map_err(|_| Lz4Failure::Block)?;
    let mut out = vec![0; declared];
    let n = lz4::block::decompress_to_buffer(block, Some(size), &mut out)
        .map_err(|_| Lz4Failure::Block)?;
    if n != declared {
        return Err(Lz4Failure::Block);
    }
    Ok(out)
}

/// Walks a block's sequences without decoding them: the number of bytes it yields and where
/// its last match lies. It is no block (LZ4-4) when a length, literals or an offset run past
/// its end, an offset is 0 or reaches before the start of the output, or a match is not
/// followed by another sequence.
fn lz4_sequences(block: &[u8]) -> Result<(usize, Option<(usize, usize)>), Lz4Failure> {
    fn length(block: &[u8], at: &mut usize, nibble: u8) -> Result<usize, Lz4Failure> {
        let mut n = usize::from(nibble);
        if nibble == 15 {
            loop {
                let b = *block.get(*at).ok_or(Lz4Failure::Block)?;
                *at += 1;
                n += usize::from(b);
                if b != 255 {
                    break;
                }
            }
        }
        Ok(n)
    }
    let (mut at, mut produced, mut last_match) = (0, 0, None);
    loop {
        let token = *block.get(at).ok_or(Lz4Failure::Block)?;
        at += 1;
        let literals = length(block, &mut at, token >> 4)?;
        at = at
            .checked_add(literals)
            .filter(|&end| end <= block.len())
            .ok_or(Lz4Failure::Block)?;
        produced += literals;
        if at == block.len() {
            return Ok((produced, last_match));
        }
        let offset = block
            .get(at..at + 2)
            .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
            .ok_or(Lz4Failure::Block)?;
        at += 2;
        if offset == 0 || offset > produced {
            return Err(Lz4Failure::Block);
        }
        let matched = length(block, &mut at, token & 15)? + 4;
        last_match = Some((produced, produced + matched));
        produced += matched;
    }
}
