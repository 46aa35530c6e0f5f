//! x86-64 kernels. Each is `unsafe`: the caller must have checked, at run time, that the CPU has
//! the features the kernel enables (see [`crate::Path::is_available`]). Each is one
//! `#[target_feature]` function into which its whole computation is inlined.

mod crc32c;
mod fold;
mod wide;

use crate::bitwise::{CRC32C_POLY, CRC32_POLY};
use crate::table::{self, Tables, CRC32_SEEDED};
use fold::FoldKeys;
use wide::{fold_wide, CopyTo, NoCopy, Sink, Wide, Ymm, Zmm};

/// What a folding kernel needs of its polynomial: the keys, and the tables for inputs shorter
/// than a lane.
pub(crate) struct Poly {
    pub(crate) keys: FoldKeys,
    tables: &'static Tables,
}

static IEEE: Poly = Poly {
    keys: FoldKeys::new(CRC32_POLY),
    tables: &table::CRC32,
};
pub(crate) static CASTAGNOLI: Poly = Poly {
    keys: FoldKeys::new(CRC32C_POLY),
    tables: &table::CRC32C,
};

/// Register update with 128-bit PCLMULQDQ folding.
#[inline]
#[target_feature(enable = "pclmulqdq,sse4.1,ssse3")]
fn pclmul(poly: &Poly, state: u32, data: &[u8]) -> u32 {
    if data.len() < 16 {
        return table::update(state, poly.tables, data);
    }
    fold::reduce(fold::fold_pclmul(state, data, &poly.keys), &poly.keys)
}

/// Register update with folding in `W` registers, the message's registers handed to `sink`.
#[inline(always)]
unsafe fn wide<W: Wide, S: Sink>(poly: &Poly, state: u32, data: &[u8], sink: &mut S) -> u32 {
    if data.len() < 16 {
        return table::update(state, poly.tables, data);
    }
    // SAFETY: the caller's CPU has `W`'s and `fold.rs`'s features (this function's contract).
    unsafe { fold::reduce(fold_wide::<W, S>(state, data, &poly.keys, sink), &poly.keys) }
}

/// [`wide`] that also copies `data` to `dst` (`data.len()` writable bytes apart from `data`).
#[inline(always)]
unsafe fn wide_copy<W: Wide>(poly: &Poly, state: u32, data: &[u8], dst: *mut u8) -> u32 {
    // SAFETY: `dst`'s bytes (this function's contract); the CPU's features (the same).
    let mut copy = unsafe { CopyTo::new(data, dst) };
    let register = unsafe { wide::<W, _>(poly, state, data, &mut copy) };
    copy.finish();
    register
}

/// [`crate::crc32`] with PCLMULQDQ.
#[target_feature(enable = "pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32_pclmul(payload: &[u8]) -> u32 {
    !pclmul(&IEEE, CRC32_SEEDED, payload)
}

/// [`crate::crc32c`] with PCLMULQDQ.
#[target_feature(enable = "pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_pclmul(payload: &[u8]) -> u32 {
    !pclmul(&CASTAGNOLI, !0, payload)
}

/// [`crate::crc32`] with 256-bit VPCLMULQDQ.
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32_vpclmul(payload: &[u8]) -> u32 {
    !wide::<Ymm, _>(&IEEE, CRC32_SEEDED, payload, &mut NoCopy)
}

/// [`crate::crc32c`] with 256-bit VPCLMULQDQ.
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_vpclmul(payload: &[u8]) -> u32 {
    !wide::<Ymm, _>(&CASTAGNOLI, !0, payload, &mut NoCopy)
}

/// [`crate::crc32`] with 512-bit VPCLMULQDQ.
#[target_feature(enable = "avx512f,avx512bw,avx2,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32_vpclmul512(payload: &[u8]) -> u32 {
    !wide::<Zmm, _>(&IEEE, CRC32_SEEDED, payload, &mut NoCopy)
}

/// [`crate::crc32c`] with 512-bit VPCLMULQDQ.
#[target_feature(enable = "avx512f,avx512bw,avx2,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_vpclmul512(payload: &[u8]) -> u32 {
    !wide::<Zmm, _>(&CASTAGNOLI, !0, payload, &mut NoCopy)
}

/// [`crate::crc32`] with 512-bit VPCLMULQDQ, copying the payload to `dst` in the same pass.
///
/// # Safety
/// As the other kernels, and `dst` has `payload.len()` writable bytes apart from `payload`.
#[target_feature(enable = "avx512f,avx512bw,avx2,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32_vpclmul512_copy(payload: &[u8], dst: *mut u8) -> u32 {
    !wide_copy::<Zmm>(&IEEE, CRC32_SEEDED, payload, dst)
}

/// [`crate::crc32c`] with 512-bit VPCLMULQDQ, copying the payload to `dst` in the same pass.
///
/// # Safety
/// As [`crc32_vpclmul512_copy`].
#[target_feature(enable = "avx512f,avx512bw,avx2,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_vpclmul512_copy(payload: &[u8], dst: *mut u8) -> u32 {
    !wide_copy::<Zmm>(&CASTAGNOLI, !0, payload, dst)
}

/// [`crate::crc32c`] with three interleaved `crc32` chains.
#[target_feature(enable = "sse4.2,pclmulqdq")]
pub(crate) unsafe fn crc32c_sse42(payload: &[u8]) -> u32 {
    !crc32c::sse42(!0, payload)
}

/// [`crate::crc32c`] with 256-bit VPCLMULQDQ folding fused with `crc32` chains.
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.2,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_fused(payload: &[u8]) -> u32 {
    !crc32c::fused::<Ymm>(!0, payload)
}

/// [`crate::crc32c`] with 512-bit VPCLMULQDQ folding fused with `crc32` chains.
#[target_feature(enable = "avx512f,avx512bw,avx2,vpclmulqdq,pclmulqdq,sse4.2,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_fused512(payload: &[u8]) -> u32 {
    !crc32c::fused::<Zmm>(!0, payload)
}
