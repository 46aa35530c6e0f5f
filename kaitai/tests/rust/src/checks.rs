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

/// Decodes one raw LZ4 block into exactly `declared` bytes. Every failure, a broken block
/// or another length, fails LZ4-4 (LZ4-1 binds senders), so the error only describes it.
pub fn lz4_decompress(block: &[u8], declared: usize) -> Result<Vec<u8>, String> {
    let size =
        i32::try_from(declared).map_err(|_| format!("declared length {declared} too large"))?;
    let mut out = vec![0; declared];
    let n =
        lz4::block::decompress_to_buffer(block, Some(size), &mut out).map_err(|e| e.to_string())?;
    if n != declared {
        return Err(format!(
            "block yields {n} bytes, header declares {declared}"
        ));
    }
    Ok(out)
}
