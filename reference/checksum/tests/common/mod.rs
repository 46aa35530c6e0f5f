//! Shared helpers of the integration tests.

use cqlframe_checksum::{crc24_with, crc32_with, crc32c_with, Algorithm, Path};

/// Deterministic bytes (xorshift64*), so failures reproduce.
pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// The checksum `algorithm` through `path`, if the CPU runs it and it computes `algorithm`.
pub fn with(algorithm: Algorithm, path: Path, data: &[u8]) -> Option<u32> {
    match algorithm {
        Algorithm::Crc24 => crc24_with(path, data),
        Algorithm::Crc32 => crc32_with(path, data),
        Algorithm::Crc32c => crc32c_with(path, data),
    }
}
