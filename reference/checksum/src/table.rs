//! Portable slice-by-16 CRC-32 and CRC-32C, with tables built by `const fn` at compile time.
//!
//! `T[k][b]` is the register left by byte `b` followed by `k` zero bytes, from register 0. Since
//! the register update is linear, 16 bytes are consumed with 16 independent lookups: the first
//! four bytes XORed with the register and the twelve others, each through the table of its
//! distance from the end of the block. Slice-by-16 measured about 1.25x as fast as slice-by-8
//! at 2 and 16 KB on the development machine (AMD Zen 3); it costs 16 KiB of tables per
//! polynomial.

use crate::bitwise::{reflected_update, CRC32C_POLY, CRC32_POLY, CRC32_SEED};

/// Sixteen 256-entry tables for one reflected polynomial.
pub(crate) type Tables = [[u32; 256]; 16];

const fn slice_by_16(poly: u32) -> Tables {
    let mut tables = [[0u32; 256]; 16];
    let mut b = 0;
    while b < 256 {
        tables[0][b] = reflected_update(0, poly, &[b as u8]);
        b += 1;
    }
    let mut k = 1;
    while k < 16 {
        let mut b = 0;
        while b < 256 {
            let prev = tables[k - 1][b];
            tables[k][b] = (prev >> 8) ^ tables[0][(prev & 0xFF) as usize];
            b += 1;
        }
        k += 1;
    }
    tables
}

/// IEEE CRC-32 tables.
pub(crate) static CRC32: Tables = slice_by_16(CRC32_POLY);
/// CRC-32C tables.
pub(crate) static CRC32C: Tables = slice_by_16(CRC32C_POLY);

/// The IEEE register after the v5 seed `FA 2D 55 CA`: every CRC32 path starts from it.
pub(crate) const CRC32_SEEDED: u32 = reflected_update(!0, CRC32_POLY, &CRC32_SEED);

/// [`crate::crc32`] through the tables.
pub(crate) fn crc32(payload: &[u8]) -> u32 {
    !update(CRC32_SEEDED, &CRC32, payload)
}

/// [`crate::crc32c`] through the tables.
pub(crate) fn crc32c(payload: &[u8]) -> u32 {
    !update(!0, &CRC32C, payload)
}

/// Advances the register `crc` (no init, no xorout applied here) over `data`.
pub(crate) fn update(mut crc: u32, tables: &Tables, data: &[u8]) -> u32 {
    let (blocks, rest) = data.as_chunks::<16>();
    for block in blocks {
        let w = crc ^ u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        let t = |k: usize, byte: u8| tables[k][usize::from(byte)];
        crc = t(15, w as u8)
            ^ t(14, (w >> 8) as u8)
            ^ t(13, (w >> 16) as u8)
            ^ t(12, (w >> 24) as u8)
            ^ t(11, block[4])
            ^ t(10, block[5])
            ^ t(9, block[6])
            ^ t(8, block[7])
            ^ t(7, block[8])
            ^ t(6, block[9])
            ^ t(5, block[10])
            ^ t(4, block[11])
            ^ t(3, block[12])
            ^ t(2, block[13])
            ^ t(1, block[14])
            ^ t(0, block[15]);
    }
    for &byte in rest {
        crc = (crc >> 8) ^ tables[0][usize::from(crc as u8 ^ byte)];
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bitwise;

    #[test]
    fn matches_the_bitwise_definition() {
        let data: Vec<u8> = (0..600u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in 0..data.len() {
            let d = &data[..len];
            assert_eq!(
                !update(CRC32_SEEDED, &CRC32, d),
                bitwise::crc32(d),
                "len {len}"
            );
            assert_eq!(!update(!0, &CRC32C, d), bitwise::crc32c(d), "len {len}");
        }
    }
}
