//! One-bit-at-a-time definitions: slow, short, obviously right. Every fast path is tested
//! against these.

/// CRC-24 as Cassandra computes it: poly 0x974F0B, init 0x875060, no reflection, no xorout.
pub fn crc24(bytes: &[u8]) -> u32 {
    let mut crc: u32 = 0x87_5060;
    for &b in bytes {
        crc ^= u32::from(b) << 16;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x100_0000 != 0 {
                crc ^= 0x197_4F0B;
            }
        }
    }
    crc & 0xFF_FFFF
}

/// The seed protocol v5 feeds to CRC-32 before the payload.
pub const CRC32_SEED: [u8; 4] = [0xFA, 0x2D, 0x55, 0xCA];

/// Reflected CRC-32 register update (no init, no xorout) with the reflected polynomial `poly`.
///
/// A `const fn`, so the fast paths can precompute register states (the v5 seed) with it.
pub const fn reflected_update(mut crc: u32, poly: u32, bytes: &[u8]) -> u32 {
    let mut i = 0;
    while i < bytes.len() {
        crc ^= bytes[i] as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ poly
            } else {
                crc >> 1
            };
            bit += 1;
        }
        i += 1;
    }
    crc
}

/// Reflected IEEE CRC-32 polynomial (0x04C11DB7 bit-reversed).
pub const CRC32_POLY: u32 = 0xEDB8_8320;
/// Reflected Castagnoli polynomial (0x1EDC6F41 bit-reversed).
pub const CRC32C_POLY: u32 = 0x82F6_3B78;

/// Plain IEEE CRC-32 (CRC-32/ISO-HDLC), without the v5 seed.
pub fn crc32_ieee(bytes: &[u8]) -> u32 {
    !reflected_update(!0, CRC32_POLY, bytes)
}

/// The v5 payload checksum: IEEE CRC-32 over `CRC32_SEED` then the payload.
pub fn crc32(payload: &[u8]) -> u32 {
    let seeded = reflected_update(!0, CRC32_POLY, &CRC32_SEED);
    !reflected_update(seeded, CRC32_POLY, payload)
}

/// CRC-32C (CRC-32/ISCSI), unseeded.
pub fn crc32c(bytes: &[u8]) -> u32 {
    !reflected_update(!0, CRC32C_POLY, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_check_values() {
        assert_eq!(crc24(b"123456789"), 0x4B_3F02);
        assert_eq!(crc32_ieee(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b"123456789"), 0xE2A2_61A7);
        assert_eq!(crc32(b""), 0x4477_7ED3);
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn worked_example_hello() {
        assert_eq!(crc24(&[0x05, 0x00, 0x02]), 0x9A_9919);
        assert_eq!(crc32(b"hello"), 0xB60E_8074);
    }
}
