//! Table-driven CRC-24 (Cassandra's frame header check), with a lookup-only path for the 3- and
//! 5-byte headers that are the only inputs the protocol feeds it.
//!
//! The register update is affine in the message: for an `n`-byte message,
//! `crc(m) = crc(n zero bytes) ^ XOR_i P[n-1-i][m[i]]`, where `P[j][b]` is the register that byte
//! `b` followed by `j` zero bytes leaves from register 0. So a header costs five independent
//! lookups and XORs instead of a serial chain of 40 bit steps (Cassandra's loop) or five
//! dependent table steps.

const INIT: u32 = 0x87_5060;
/// The generator without its x^24 term.
const POLY: u32 = 0x97_4F0B;
const MASK: u32 = 0xFF_FFFF;

/// One MSB-first step of the register over a byte, through `TABLE`.
const fn step(crc: u32, byte: u8) -> u32 {
    ((crc << 8) ^ TABLE[((crc >> 16) as u8 ^ byte) as usize]) & MASK
}

/// `TABLE[b]`: the register that byte `b` leaves from register 0.
static TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut b = 0;
    while b < 256 {
        let mut crc = (b as u32) << 16;
        let mut bit = 0;
        while bit < 8 {
            crc <<= 1;
            if crc & 0x100_0000 != 0 {
                crc ^= 0x100_0000 | POLY;
            }
            bit += 1;
        }
        table[b] = crc;
        b += 1;
    }
    table
};

/// `POSITIONAL[j][b]`: the register that byte `b` followed by `j` zero bytes leaves from 0.
static POSITIONAL: [[u32; 256]; 5] = {
    let mut tables = [[0u32; 256]; 5];
    let mut b = 0;
    while b < 256 {
        let mut crc = TABLE[b];
        let mut j = 0;
        while j < 5 {
            tables[j][b] = crc;
            crc = step(crc, 0);
            j += 1;
        }
        b += 1;
    }
    tables
};

/// The register left by `n` zero bytes from the initial value.
const fn zeros(n: usize) -> u32 {
    let mut crc = INIT;
    let mut i = 0;
    while i < n {
        crc = step(crc, 0);
        i += 1;
    }
    crc
}

const ZEROS_3: u32 = zeros(3);
const ZEROS_5: u32 = zeros(5);

/// CRC-24 of a 3-byte header (uncompressed frames).
#[inline]
fn header3(h: &[u8; 3]) -> u32 {
    let p = &POSITIONAL;
    ZEROS_3 ^ p[2][usize::from(h[0])] ^ p[1][usize::from(h[1])] ^ p[0][usize::from(h[2])]
}

/// CRC-24 of a 5-byte header (LZ4-compressed frames).
#[inline]
fn header5(h: &[u8; 5]) -> u32 {
    let p = &POSITIONAL;
    ZEROS_5
        ^ p[4][usize::from(h[0])]
        ^ p[3][usize::from(h[1])]
        ^ p[2][usize::from(h[2])]
        ^ p[1][usize::from(h[3])]
        ^ p[0][usize::from(h[4])]
}

/// One table step per byte, for any length.
fn bytewise(bytes: &[u8]) -> u32 {
    bytes.iter().fold(INIT, |crc, &b| step(crc, b))
}

/// CRC-24 through the tables: positional lookups for headers, byte steps otherwise.
#[inline]
pub(crate) fn compute(bytes: &[u8]) -> u32 {
    if let Ok(h) = <&[u8; 5]>::try_from(bytes) {
        header5(h)
    } else if let Ok(h) = <&[u8; 3]>::try_from(bytes) {
        header3(h)
    } else {
        bytewise(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bitwise;

    #[test]
    fn bytewise_matches_the_definition() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 37 + (i >> 3)) as u8).collect();
        for len in 0..data.len() {
            assert_eq!(
                bytewise(&data[..len]),
                bitwise::crc24(&data[..len]),
                "len {len}"
            );
        }
        assert_eq!(bytewise(b"123456789"), 0x4B_3F02);
    }

    #[test]
    fn header_paths_match_the_definition() {
        // Every value of each byte at each position, against varied other bytes.
        let mut x = 0x9E37_79B9u32;
        for pos in 0..5 {
            for b in 0..=255u8 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let mut h = x.to_le_bytes().to_vec();
                h.push((x >> 7) as u8);
                h[pos] = b;
                assert_eq!(header5(&[h[0], h[1], h[2], h[3], h[4]]), bitwise::crc24(&h));
                if pos < 3 {
                    assert_eq!(header3(&[h[0], h[1], h[2]]), bitwise::crc24(&h[..3]));
                }
            }
        }
        assert_eq!(compute(&[0x05, 0x00, 0x02]), 0x9A_9919);
    }
}
