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

/// Register update with folding in `W` registers, the message's registers handed to `sink`,
/// prefetching `AHEAD` bytes ahead (see [`wide::fold_blocks`]).
#[inline(always)]
unsafe fn wide<W: Wide, S: Sink, const AHEAD: usize>(
    poly: &Poly,
    state: u32,
    data: &[u8],
    sink: &mut S,
) -> u32 {
    if data.len() < 16 {
        return table::update(state, poly.tables, data);
    }
    // SAFETY: the caller's CPU has `W`'s and `fold.rs`'s features (this function's contract).
    unsafe {
        fold::reduce(
            fold_wide::<W, S, AHEAD>(state, data, &poly.keys, sink),
            &poly.keys,
        )
    }
}

/// From this length on, the 512-bit kernels start folding at a 64-byte boundary, the bytes
/// before it taken first (the two-quadword fused CRC-32C from shorter: see
/// [`crc32c_fused512_2`]). A 64-byte load that straddles two cache lines costs two line reads: once
/// the data comes from L2 rather than L1, that alone held folding to 61-64 GB/s where aligned
/// loads reach 82-85 (measured on Intel Xeon family 6 model 207 at 65536 and 131071 bytes; no
/// difference at 16373, which stays in L1). Below this the head's cost would not pay for itself.
const ALIGN_FROM: usize = 32 * 1024;

/// `data` split before its first 64-byte boundary when it is at least `from` long, so that the
/// second part starts on one; otherwise an empty head and all of `data`.
#[inline(always)]
fn aligned_split(data: &[u8], from: usize) -> (&[u8], &[u8]) {
    if data.len() < from {
        return (&[], data);
    }
    data.split_at(data.as_ptr().align_offset(64).min(data.len()))
}

/// [`wide`] over 512-bit registers from a 64-byte boundary on (see [`aligned_split`]), the bytes
/// before it through the tables.
#[inline(always)]
unsafe fn wide_aligned(poly: &Poly, state: u32, data: &[u8]) -> u32 {
    let (head, body) = aligned_split(data, ALIGN_FROM);
    let state = table::update(state, poly.tables, head);
    // SAFETY: the caller's CPU has `Zmm`'s features (this function's contract).
    unsafe { wide::<Zmm, _, PREFETCH_AHEAD>(poly, state, body, &mut NoCopy) }
}

/// How far ahead the plain 512-bit kernels prefetch, so that the lines are in L1 when the
/// multiplier wants them: frames spread over a receive buffer come from L2, where the hardware
/// prefetchers alone left folding short of them. Measured on Intel Xeon family 6 model 207,
/// CRC-32 frames decoded from the framing benchmark's 256 KiB streams (L2): 16373 bytes 228 ns
/// a frame against 265 without (512 bytes ahead: 234; 2048: 223, but its lines lie past the
/// payload for frames up to 2 KiB); 2037 bytes 2% faster, 131071 and 64 level; inputs in L1
/// level too. (The fused CRC-32C kernel does not prefetch: its loads aligned, prefetching gained
/// nothing there, and before that it cost 5% in L1.)
const PREFETCH_AHEAD: usize = 1024;

/// [`wide`] that also copies `data` to `dst` (`data.len()` writable bytes apart from `data`).
#[inline(always)]
unsafe fn wide_copy<W: Wide>(poly: &Poly, state: u32, data: &[u8], dst: *mut u8) -> u32 {
    // SAFETY: `dst`'s bytes (this function's contract); the CPU's features (the same).
    let mut copy = unsafe { CopyTo::new(data, dst) };
    let register = unsafe { wide::<W, _, 0>(poly, state, data, &mut copy) };
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
    !wide::<Ymm, _, 0>(&IEEE, CRC32_SEEDED, payload, &mut NoCopy)
}

/// [`crate::crc32c`] with 256-bit VPCLMULQDQ.
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_vpclmul(payload: &[u8]) -> u32 {
    !wide::<Ymm, _, 0>(&CASTAGNOLI, !0, payload, &mut NoCopy)
}

/// [`crate::crc32`] with 512-bit VPCLMULQDQ.
#[target_feature(enable = "avx512f,avx512bw,avx2,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32_vpclmul512(payload: &[u8]) -> u32 {
    !wide_aligned(&IEEE, CRC32_SEEDED, payload)
}

/// [`crate::crc32c`] with 512-bit VPCLMULQDQ.
#[target_feature(enable = "avx512f,avx512bw,avx2,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_vpclmul512(payload: &[u8]) -> u32 {
    !wide_aligned(&CASTAGNOLI, !0, payload)
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
    !crc32c::fused::<crc32c::Ymm5>(!0, payload)
}

/// [`crate::crc32c`] with 512-bit folding fused with `crc32` chains in `F`'s shape, from a
/// 64-byte boundary on once `payload` is `align_from` long (see [`aligned_split`]), the bytes
/// before it through one chain.
#[inline(always)]
unsafe fn fused512<F: crc32c::Fused<W = Zmm>>(payload: &[u8], align_from: usize) -> u32 {
    let (head, body) = aligned_split(payload, align_from);
    // SAFETY: the caller's CPU has the 512-bit fused kernels' features (this function's contract).
    unsafe { !crc32c::fused::<F>(crc32c::chain(!0, head), body) }
}

/// [`crate::crc32c`] with 512-bit VPCLMULQDQ folding fused with `crc32` chains, three quadwords
/// per chain per 256 folded bytes.
#[target_feature(enable = "avx512f,avx512bw,avx2,vpclmulqdq,pclmulqdq,sse4.2,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_fused512(payload: &[u8]) -> u32 {
    fused512::<crc32c::Zmm3>(payload, ALIGN_FROM)
}

/// [`crate::crc32c`] with 512-bit VPCLMULQDQ folding fused with `crc32` chains, two quadwords
/// per chain per 256 folded bytes.
///
/// Aligned from [`FUSED2_ALIGN_FROM`], not only from [`ALIGN_FROM`], so wherever its fused blocks
/// run: this shape's blocks keep their folded parts on 64-byte boundaries (a multiple of four
/// iterations), and payloads of that size (8208 bytes and up) read from L2, as frames spread over a
/// receive buffer are, lost a third of their speed to loads straddling two lines. Measured on Intel
/// Xeon family 6 model 207, decoding the framing benchmark's 256 KiB streams: 202 ns a 16373-byte
/// frame against 295 unaligned (81 against 55 GB/s), 1.45 us a 131071-byte one against 1.52; one
/// 16373-byte payload in L1, 171 ns against 177. (Software prefetching, tried instead, gained 13%
/// at 16373 bytes from L2 and cost 5% in L1; with the loads aligned it gained nothing.)
#[target_feature(enable = "avx512f,avx512bw,avx2,vpclmulqdq,pclmulqdq,sse4.2,sse4.1,ssse3")]
pub(crate) unsafe fn crc32c_fused512_2(payload: &[u8]) -> u32 {
    const { assert!(FUSED2_ALIGN_FROM <= crc32c::fused_from::<crc32c::Zmm2>()) };
    fused512::<crc32c::Zmm2>(payload, FUSED2_ALIGN_FROM)
}

/// From this length on, [`crc32c_fused512_2`] folds from a 64-byte boundary, below its fused
/// blocks too. Straddling loads cost even from L1 on Intel Xeon family 6 model 167: one payload
/// folded with 512-bit registers in 18.5-19.5 ns at 2037 bytes on a boundary against 20.5-23.4
/// off one, 33 ns against 38 at 4096. Taking the bytes before the boundary through one `crc32`
/// chain first (as `crc-fast` does) made payloads off a boundary 8-11% faster at 2037 bytes,
/// 3-5% at 1536-1792 and level to 10% at 4096 (between two builds), and those on one level to 6%
/// slower (the chain's latency); at 1024-1280 bytes it was level or slower (interleaved
/// min-of-30 timings of both builds in one process, 2026-11-27).
const FUSED2_ALIGN_FROM: usize = 1536;
