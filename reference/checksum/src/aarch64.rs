//! AArch64 paths: the `crc32x` and `crc32cx` instructions (feature `crc`), one quadword per
//! instruction.

use std::arch::aarch64::{__crc32b, __crc32cb, __crc32cd, __crc32d};

use crate::table::CRC32_SEEDED;

/// [`crate::crc32`] with the IEEE instructions.
///
/// # Safety
/// The CPU must have the `crc` feature.
#[target_feature(enable = "crc")]
pub(crate) unsafe fn crc32(data: &[u8]) -> u32 {
    !update_crc32(CRC32_SEEDED, data)
}

/// [`crate::crc32c`] with the Castagnoli instructions.
///
/// # Safety
/// The CPU must have the `crc` feature.
#[target_feature(enable = "crc")]
pub(crate) unsafe fn crc32c(data: &[u8]) -> u32 {
    !update_crc32c(!0, data)
}

#[inline]
#[target_feature(enable = "crc")]
fn update_crc32(state: u32, data: &[u8]) -> u32 {
    let (words, rest) = data.as_chunks::<8>();
    let crc = words
        .iter()
        .fold(state, |crc, w| __crc32d(crc, u64::from_le_bytes(*w)));
    rest.iter().fold(crc, |crc, &b| __crc32b(crc, b))
}

#[inline]
#[target_feature(enable = "crc")]
fn update_crc32c(state: u32, data: &[u8]) -> u32 {
    let (words, rest) = data.as_chunks::<8>();
    let crc = words
        .iter()
        .fold(state, |crc, w| __crc32cd(crc, u64::from_le_bytes(*w)));
    rest.iter().fold(crc, |crc, &b| __crc32cb(crc, b))
}
