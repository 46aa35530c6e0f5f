//! Carry-less multiplication folding (Intel, "Fast CRC Computation for Generic Polynomials Using
//! PCLMULQDQ"), for any reflected 32-bit polynomial: the message is cut into 128-bit lanes and
//! each lane is moved forward by multiplying its halves with `x^k mod P` keys (see
//! [`crate::gf2::fold_key`]) and XORed into a later lane, until one lane stands for the whole
//! message. Several independent lanes are in flight to cover the multiplier's latency: here eight
//! 128-bit lanes with PCLMULQDQ; `wide.rs` folds 256- and 512-bit registers of lanes.

use core::arch::x86_64::*;

use crate::gf2::{fold_key, times_x_pow, Barrett};

/// Fold keys for one polynomial: `by[i]` moves a lane forward by `16 * (i + 1)` bytes; the
/// others are [`reduce`]'s.
pub(crate) struct FoldKeys {
    by: [[u64; 2]; 16],
    /// `to_end[r]`: the key pairs moving the four lanes of a 64-byte register forward by
    /// `48 + r`, `32 + r`, `16 + r` and `r` bytes (`r` in 1..64; entry 0 unused).
    to_end: [[u64; 8]; 64],
    /// `x^96 mod P` and `x^64 mod P` as fold operands (see [`reduce`]).
    x96: u64,
    x64: u64,
    barrett: Barrett,
}

impl FoldKeys {
    pub(crate) const fn new(poly: u32) -> Self {
        let mut by = [[0; 2]; 16];
        let mut i = 0;
        while i < 16 {
            by[i] = fold_key(poly, 16 * (i as u64 + 1));
            i += 1;
        }
        let mut to_end = [[0; 8]; 64];
        let mut r = 1;
        while r < 64 {
            let mut lane = 0;
            while lane < 4 {
                let key = fold_key(poly, (r + 48 - 16 * lane) as u64);
                to_end[r][2 * lane] = key[0];
                to_end[r][2 * lane + 1] = key[1];
                lane += 1;
            }
            r += 1;
        }
        FoldKeys {
            by,
            to_end,
            x96: times_x_pow(poly, 96),
            x64: times_x_pow(poly, 64),
            barrett: Barrett::new(poly),
        }
    }

    /// The key pair moving a lane forward by `bytes` (a multiple of 16, at most 256).
    #[inline(always)]
    pub(crate) fn by(&self, bytes: usize) -> [u64; 2] {
        self.by[bytes / 16 - 1]
    }

    /// The key pairs of `to_end` for `r` bytes (1..64), lane by lane.
    #[inline(always)]
    pub(crate) fn to_end(&self, r: usize) -> &[u64; 8] {
        &self.to_end[r]
    }
}

/// A key pair as a 128-bit operand: the first-bytes key in the low quadword.
#[inline(always)]
pub(crate) fn key128(key: [u64; 2]) -> __m128i {
    // SAFETY: SSE2 is part of x86-64.
    unsafe { _mm_set_epi64x(key[1] as i64, key[0] as i64) }
}

#[inline(always)]
pub(crate) fn load128(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: 16 readable bytes; SSE2 is part of x86-64; the load is unaligned.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

/// Moves one lane forward by the distance of `key`.
#[inline]
#[target_feature(enable = "pclmulqdq")]
pub(crate) fn fold128(lane: __m128i, key: __m128i) -> __m128i {
    _mm_xor_si128(
        _mm_clmulepi64_si128(lane, key, 0x00),
        _mm_clmulepi64_si128(lane, key, 0x11),
    )
}

/// Shuffle masks for the final partial lane: 16 "zero" indices, 0..16, 16 "zero" indices.
static SHIFT_MASKS: [u8; 48] = {
    let mut m = [0x80u8; 48];
    let mut i = 0;
    while i < 16 {
        m[16 + i] = i as u8;
        i += 1;
    }
    m
};

/// Absorbs the last `tail` bytes (1..=15) of `data` into `lane`, which stands for everything
/// before them (`data.len() >= 16`).
///
/// The lane and the tail form `16 + tail` bytes; the last 16 of them (the lane's last
/// `16 - tail` bytes and the tail, read by one overlapping load) become the new lane, and the
/// lane's first `tail` bytes, zero-extended in front to a full lane, are folded onto it by 16.
#[inline]
#[target_feature(enable = "pclmulqdq,sse4.1,ssse3")]
fn fold_tail(lane: __m128i, data: &[u8], tail: usize, k16: __m128i) -> __m128i {
    let mask = |from: usize| SHIFT_MASKS.get(from..).and_then(|m| m.first_chunk::<16>());
    let (Some(last), Some(head_mask), Some(body_mask)) =
        (data.last_chunk::<16>(), mask(tail), mask(16 + tail))
    else {
        return lane; // not reached: tail < 16 <= data.len()
    };
    let head_mask = load128(head_mask);
    let body_mask = load128(body_mask);
    // Head: byte i is lane[i - (16 - tail)], zero below. Body: byte i is lane[i + tail] for
    // i < 16 - tail (mask byte's top bit clear), then the data (mask byte's top bit set).
    let head = _mm_shuffle_epi8(lane, head_mask);
    let body = _mm_blendv_epi8(_mm_shuffle_epi8(lane, body_mask), load128(last), body_mask);
    _mm_xor_si128(fold128(head, k16), body)
}

/// `N` lanes folded by `16 * N` bytes per step over `lanes` (at least `N` of them), then joined
/// into one (each moved by its distance to the last, independently). Returns the lane and the
/// lanes left over (fewer than `N`).
#[inline]
#[target_feature(enable = "pclmulqdq")]
fn fold_n<'a, const N: usize>(
    inject: __m128i,
    lanes: &'a [[u8; 16]],
    keys: &FoldKeys,
) -> Option<(__m128i, &'a [[u8; 16]])> {
    let (first, more) = lanes.split_first_chunk::<N>()?;
    let mut a = first.map(|lane| load128(&lane));
    a[0] = _mm_xor_si128(a[0], inject);
    let step = key128(keys.by(16 * N));
    let (groups, leftover) = more.as_chunks::<N>();
    for group in groups {
        for (a, lane) in a.iter_mut().zip(group) {
            *a = _mm_xor_si128(fold128(*a, step), load128(lane));
        }
    }
    let (last, earlier) = a.split_last()?;
    let mut acc = *last;
    for (i, lane) in earlier.iter().enumerate() {
        acc = _mm_xor_si128(acc, fold128(*lane, key128(keys.by(16 * (N - 1 - i)))));
    }
    Some((acc, leftover))
}

/// Folds `data` (at least 16 bytes) into one lane that stands for the message register `state`
/// followed by `data`: its CRC register is `lane * x^32 mod P` ([`reduce`]).
#[inline]
#[target_feature(enable = "pclmulqdq,sse4.1,ssse3")]
pub(crate) fn fold_pclmul(state: u32, data: &[u8], keys: &FoldKeys) -> __m128i {
    let (lanes, rest) = data.as_chunks::<16>();
    // The register enters as the first four message bytes XORed with it.
    let inject = _mm_cvtsi32_si128(state as i32);
    let Some((acc, remaining)) = fold_n::<8>(inject, lanes, keys)
        .or_else(|| fold_n::<4>(inject, lanes, keys))
        .or_else(|| fold_n::<2>(inject, lanes, keys))
        .or_else(|| fold_n::<1>(inject, lanes, keys))
    else {
        return inject; // not reached for data.len() >= 16
    };
    finish_lanes(acc, data, remaining, rest.len(), keys)
}

/// Folds `lanes` (whole 16-byte lanes) and then the last `tail` bytes (0..=15) of `data` into
/// `acc`, which stands for everything before them.
#[inline]
#[target_feature(enable = "pclmulqdq,sse4.1,ssse3")]
pub(crate) fn finish_lanes(
    mut acc: __m128i,
    data: &[u8],
    lanes: &[[u8; 16]],
    tail: usize,
    keys: &FoldKeys,
) -> __m128i {
    let k16 = key128(keys.by(16));
    for lane in lanes {
        acc = _mm_xor_si128(fold128(acc, k16), load128(lane));
    }
    if tail == 0 {
        acc
    } else {
        fold_tail(acc, data, tail, k16)
    }
}

/// The CRC register of a folded lane `A`: `A * x^32 mod P`.
///
/// `A * x^32 = A_hi * x^96 + A_lo * x^32` is first brought below degree 96 with `x^96 mod P`,
/// then below degree 64 with `x^64 mod P`, and the last 64 bits are reduced by Barrett's method
/// (see [`Barrett`]): two more carry-less products instead of table lookups.
#[inline]
#[target_feature(enable = "pclmulqdq,sse4.1")]
pub(crate) fn reduce(lane: __m128i, keys: &FoldKeys) -> u32 {
    // Bits 32..127 (reversed): A_hi * (x^96 mod P) + A_lo * x^32.
    let e = _mm_xor_si128(
        _mm_clmulepi64_si128(lane, _mm_cvtsi64_si128(keys.x96 as i64), 0x00),
        _mm_slli_si128(_mm_srli_si128(lane, 8), 4),
    );
    // High quadword: the part above x^64 times (x^64 mod P), plus the part below.
    let d = _mm_xor_si128(
        _mm_clmulepi64_si128(e, _mm_cvtsi64_si128(keys.x64 as i64), 0x00),
        e,
    );
    let d = _mm_extract_epi64(d, 1) as u64;
    let b = &keys.barrett;
    let clmul_low = |a: u64, k: u64| {
        _mm_cvtsi128_si64(_mm_clmulepi64_si128(
            _mm_cvtsi64_si128(a as i64),
            _mm_cvtsi64_si128(k as i64),
            0x00,
        )) as u64
    };
    let quotient = clmul_low(d & 0xFFFF_FFFF, b.mu) & 0xFFFF_FFFF;
    ((d ^ clmul_low(quotient, b.poly)) >> 32) as u32
}
