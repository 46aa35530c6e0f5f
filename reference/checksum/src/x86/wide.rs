//! Folding with wide registers of 128-bit lanes: 256-bit (AVX2 + VPCLMULQDQ, two lanes) and
//! 512-bit (AVX-512F + VPCLMULQDQ, four lanes). One generic algorithm serves both widths: four
//! registers in flight, each folded forward over four registers' worth of bytes per step, then
//! joined into one register, narrowed to one lane and finished 16 bytes at a time by
//! `fold.rs`.
//!
//! The generic functions are `#[inline(always)]` and carry no target features: each kernel that
//! calls them enables the features of its width, and the [`Wide`] methods (enabled for their
//! width only) inline into it.

use core::arch::x86_64::*;

use super::fold::{finish_lanes, fold128, fold_pclmul, key128, FoldKeys};

/// A register of 128-bit lanes, each folded independently with the same key pair.
///
/// # Safety
/// Every method needs the CPU features of its width, checked by the caller at run time.
pub(crate) trait Wide: Copy {
    /// Bytes in one register (32 or 64).
    const BYTES: usize;

    /// Whether, below four registers' worth, one register folding beats eight 128-bit lanes.
    const SINGLE: bool;

    /// Loads the first [`Self::BYTES`] of `bytes` (unaligned).
    unsafe fn load(bytes: &[u8]) -> Self;

    /// Stores the register at `dst` (unaligned), which must have [`Self::BYTES`] writable bytes.
    unsafe fn store(self, dst: *mut u8);

    /// A key pair (see [`FoldKeys::by`]) in every lane.
    unsafe fn splat(key: [u64; 2]) -> Self;

    /// Every lane moved forward by the distance of `key`, XORed with `data`.
    unsafe fn fold_xor(self, key: Self, data: Self) -> Self;

    /// Every lane moved forward by the distance of `key`.
    unsafe fn fold(self, key: Self) -> Self;

    /// `self` with `lane` XORed into its first lane (`FIRST`) or its last one.
    unsafe fn xor_lane<const FIRST: bool>(self, lane: __m128i) -> Self;

    /// One lane standing for the whole register: every lane moved to the last one.
    unsafe fn narrow(self, keys: &FoldKeys) -> __m128i;

    /// One lane standing for `self`, which stands for `data` but its last `tail` bytes
    /// (`tail < Self::BYTES`, `data.len() >= Self::BYTES`), followed by those bytes.
    unsafe fn finish_tail(self, data: &[u8], tail: usize, keys: &FoldKeys) -> __m128i;
}

/// 256 bits: two lanes.
#[derive(Clone, Copy)]
pub(crate) struct Ymm(__m256i);

/// 512 bits: four lanes.
#[derive(Clone, Copy)]
pub(crate) struct Zmm(__m512i);

impl Wide for Ymm {
    const BYTES: usize = 32;
    const SINGLE: bool = false;

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load(bytes: &[u8]) -> Self {
        let bytes = &bytes[..Self::BYTES];
        // SAFETY: 32 readable bytes; the load is unaligned.
        Ymm(unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) })
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: 32 writable bytes (this function's contract).
        unsafe { _mm256_storeu_si256(dst.cast(), self.0) }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn splat(key: [u64; 2]) -> Self {
        Ymm(_mm256_broadcastsi128_si256(key128(key)))
    }

    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    unsafe fn fold_xor(self, key: Self, data: Self) -> Self {
        // SAFETY: the caller's CPU has these features (the trait's contract).
        let folded = unsafe { self.fold(key) };
        Ymm(_mm256_xor_si256(folded.0, data.0))
    }

    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    unsafe fn fold(self, key: Self) -> Self {
        Ymm(_mm256_xor_si256(
            _mm256_clmulepi64_epi128(self.0, key.0, 0x00),
            _mm256_clmulepi64_epi128(self.0, key.0, 0x11),
        ))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn xor_lane<const FIRST: bool>(self, lane: __m128i) -> Self {
        let lane = if FIRST {
            _mm256_zextsi128_si256(lane)
        } else {
            _mm256_inserti128_si256(_mm256_setzero_si256(), lane, 1)
        };
        Ymm(_mm256_xor_si256(self.0, lane))
    }

    #[inline]
    #[target_feature(enable = "avx2,pclmulqdq")]
    unsafe fn narrow(self, keys: &FoldKeys) -> __m128i {
        _mm_xor_si128(
            fold128(_mm256_castsi256_si128(self.0), key128(keys.by(16))),
            _mm256_extracti128_si256(self.0, 1),
        )
    }

    #[inline]
    #[target_feature(enable = "avx2,pclmulqdq,sse4.1,ssse3")]
    unsafe fn finish_tail(self, data: &[u8], tail: usize, keys: &FoldKeys) -> __m128i {
        let rest = &data[data.len() - tail..];
        let (lanes, tail) = rest.as_chunks::<16>();
        // SAFETY: the caller's CPU has these features (the trait's contract).
        finish_lanes(unsafe { self.narrow(keys) }, data, lanes, tail.len(), keys)
    }
}

impl Wide for Zmm {
    const BYTES: usize = 64;
    // One 512-bit product costs the multiplier what a 128-bit one does.
    const SINGLE: bool = true;

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load(bytes: &[u8]) -> Self {
        let bytes = &bytes[..Self::BYTES];
        // SAFETY: 64 readable bytes; the load is unaligned.
        Zmm(unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) })
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: 64 writable bytes (this function's contract).
        unsafe { _mm512_storeu_si512(dst.cast(), self.0) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn splat(key: [u64; 2]) -> Self {
        Zmm(_mm512_broadcast_i32x4(key128(key)))
    }

    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    unsafe fn fold_xor(self, key: Self, data: Self) -> Self {
        // Both products and the data XORed by one three-input logic instruction.
        Zmm(_mm512_ternarylogic_epi64::<0x96>(
            _mm512_clmulepi64_epi128(self.0, key.0, 0x00),
            _mm512_clmulepi64_epi128(self.0, key.0, 0x11),
            data.0,
        ))
    }

    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    unsafe fn fold(self, key: Self) -> Self {
        Zmm(_mm512_xor_si512(
            _mm512_clmulepi64_epi128(self.0, key.0, 0x00),
            _mm512_clmulepi64_epi128(self.0, key.0, 0x11),
        ))
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn xor_lane<const FIRST: bool>(self, lane: __m128i) -> Self {
        let lane = if FIRST {
            _mm512_zextsi128_si512(lane)
        } else {
            _mm512_inserti32x4::<3>(_mm512_setzero_si512(), lane)
        };
        Zmm(_mm512_xor_si512(self.0, lane))
    }

    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    unsafe fn narrow(self, keys: &FoldKeys) -> __m128i {
        // SAFETY: the caller's CPU has these features (the trait's contract).
        unsafe { xor_lanes(self.moved_to_last(keys)) }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq")]
    unsafe fn finish_tail(self, data: &[u8], tail: usize, keys: &FoldKeys) -> __m128i {
        // SAFETY (all blocks): the caller's CPU has these features (the trait's contract).
        if tail == 0 {
            return unsafe { self.narrow(keys) };
        }
        // Every lane of `self` moved to the end of `data`, and the last 64 bytes of `data` with
        // those `self` already covers masked off, their lanes moved to the end the same way:
        // eight independent products instead of a serial lane-by-lane tail.
        let key: __m512i = unsafe { _mm512_loadu_si512(keys.to_end(tail).as_ptr().cast()) };
        let moved = unsafe { self.fold(Zmm(key)) }.0;
        let last = &data[data.len() - Self::BYTES..];
        // SAFETY: 64 readable bytes.
        let last = unsafe { _mm512_maskz_loadu_epi8(!0u64 << (64 - tail), last.as_ptr().cast()) };
        let last = unsafe { Zmm(last).moved_to_last(keys) };
        xor_lanes(_mm512_xor_si512(moved, last))
    }
}

impl Zmm {
    /// Lanes 0, 1, 2 moved by 48, 32, 16 bytes (lane 3's key is zero), lane 3 as it is: four
    /// lanes that all end where lane 3 ends.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    unsafe fn moved_to_last(self, keys: &FoldKeys) -> __m512i {
        let [k48, k32, k16] = [48, 32, 16].map(|bytes| keys.by(bytes));
        let key = _mm512_set_epi64(
            0,
            0,
            k16[1] as i64,
            k16[0] as i64,
            k32[1] as i64,
            k32[0] as i64,
            k48[1] as i64,
            k48[0] as i64,
        );
        // SAFETY: the caller's CPU has these features (this function's contract).
        let moved = unsafe { self.fold(Zmm(key)) }.0;
        _mm512_mask_mov_epi64(moved, 0xC0, self.0)
    }
}

/// The four lanes of a register XORed together.
#[inline]
#[target_feature(enable = "avx512f")]
fn xor_lanes(v: __m512i) -> __m128i {
    let half = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v));
    _mm_xor_si128(
        _mm256_castsi256_si128(half),
        _mm256_extracti128_si256::<1>(half),
    )
}

/// Where the message's registers also go as they are loaded: nowhere ([`NoCopy`]), or into a
/// copy of the message ([`CopyTo`]), so that a frame's payload is checksummed and copied in one
/// pass over it.
pub(crate) trait Sink {
    /// `part`, a sub-slice of the message, was loaded as `register`.
    unsafe fn put<W: Wide>(&mut self, part: &[u8], register: W);
}

pub(crate) struct NoCopy;

impl Sink for NoCopy {
    #[inline(always)]
    unsafe fn put<W: Wide>(&mut self, _: &[u8], _: W) {}
}

/// A copy of `src` being written at `dst` (`src.len()` writable bytes) from the registers
/// loaded, in order; [`CopyTo::finish`] writes the bytes no register carried.
pub(crate) struct CopyTo<'a> {
    src: &'a [u8],
    dst: *mut u8,
    /// `dst[..written]` is written.
    written: usize,
}

impl<'a> CopyTo<'a> {
    /// # Safety
    /// `dst` has `src.len()` writable bytes, not overlapping `src`.
    pub(crate) unsafe fn new(src: &'a [u8], dst: *mut u8) -> Self {
        CopyTo {
            src,
            dst,
            written: 0,
        }
    }

    /// Writes what the registers did not: afterwards `dst` holds all of `src`.
    #[inline(always)]
    pub(crate) fn finish(self) {
        let rest = &self.src[self.written..];
        // SAFETY: `dst` has `src.len()` writable bytes, apart from `src` (`new`'s contract).
        unsafe {
            core::ptr::copy_nonoverlapping(rest.as_ptr(), self.dst.add(self.written), rest.len())
        }
    }
}

impl Sink for CopyTo<'_> {
    #[inline(always)]
    unsafe fn put<W: Wide>(&mut self, part: &[u8], register: W) {
        let at = (part.as_ptr() as usize).wrapping_sub(self.src.as_ptr() as usize);
        // Only the next bytes in order: anything else is left to `finish`.
        if at == self.written && at + W::BYTES <= self.src.len() {
            // SAFETY: `dst[at..at + BYTES]` lies within the `src.len()` writable bytes; the
            // CPU has `W`'s features (this function's contract).
            unsafe { register.store(self.dst.add(at)) };
            self.written = at + W::BYTES;
        }
    }
}

/// Loads the register at the start of `part` and hands it to `sink`.
#[inline(always)]
unsafe fn load<W: Wide, S: Sink>(part: &[u8], sink: &mut S) -> W {
    // SAFETY (both): the CPU has `W`'s features (this function's contract).
    let register = unsafe { W::load(part) };
    unsafe { sink.put(part, register) };
    register
}

/// Four registers: `4 * W::BYTES` consecutive bytes in flight.
pub(crate) type Acc<W> = [W; 4];

/// The bytes one step of [`Acc`] folds.
pub(crate) const fn acc_bytes<W: Wide>() -> usize {
    4 * W::BYTES
}

/// Loads the first `acc_bytes::<W>()` bytes of a message, with the register `state` injected.
#[inline(always)]
pub(crate) unsafe fn start<W: Wide, S: Sink>(state: u32, block: &[u8], sink: &mut S) -> Acc<W> {
    // SAFETY (all blocks): the CPU has `W`'s features (this function's contract).
    let mut acc: Acc<W> = core::array::from_fn(|i| unsafe { load(&block[i * W::BYTES..], sink) });
    acc[0] = unsafe { acc[0].xor_lane::<true>(_mm_cvtsi32_si128(state as i32)) };
    acc
}

/// Folds the accumulators forward over each `acc_bytes::<W>()`-byte block of `blocks` (whose
/// length is a multiple of that), with `key` the key pair of that distance, each block's lines
/// `AHEAD` bytes further prefetched into L1 (0: none).
#[inline(always)]
pub(crate) unsafe fn fold_blocks<W: Wide, S: Sink, const AHEAD: usize>(
    acc: &mut Acc<W>,
    blocks: &[u8],
    key: W,
    sink: &mut S,
) {
    for block in blocks.chunks_exact(acc_bytes::<W>()) {
        if AHEAD > 0 {
            for line in (0..acc_bytes::<W>()).step_by(64) {
                let ahead = block.as_ptr().wrapping_add(AHEAD + line);
                // SAFETY: a prefetch is a hint: it reads nothing, and an address past `blocks`
                // or outside memory is no fault.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(ahead.cast()) };
            }
        }
        for (a, part) in acc.iter_mut().zip(block.chunks_exact(W::BYTES)) {
            // SAFETY: the CPU has `W`'s features (this function's contract).
            *a = unsafe { a.fold_xor(key, load(part, sink)) };
        }
    }
}

/// Reduces the accumulators, standing for everything before `rest` (fewer than
/// `acc_bytes::<W>()` bytes, the end of `data`), and `rest` itself to one lane.
#[inline(always)]
pub(crate) unsafe fn finish<W: Wide, S: Sink>(
    acc: &Acc<W>,
    data: &[u8],
    rest: &[u8],
    keys: &FoldKeys,
    sink: &mut S,
) -> __m128i {
    // SAFETY (all blocks): the CPU has `W`'s and `fold.rs`'s features (this function's
    // contract).
    let mut y = acc[3];
    for (i, a) in acc[..3].iter().enumerate() {
        y = unsafe { a.fold_xor(W::splat(keys.by(W::BYTES * (3 - i))), y) };
    }
    unsafe { fold_registers(y, data, rest, keys, sink) }
}

/// Folds `rest` (the end of `data`, `data.len() >= W::BYTES`) into `y`, which stands for
/// everything before it, one register at a time, then narrows to one lane.
#[inline(always)]
unsafe fn fold_registers<W: Wide, S: Sink>(
    mut y: W,
    data: &[u8],
    rest: &[u8],
    keys: &FoldKeys,
    sink: &mut S,
) -> __m128i {
    // SAFETY (all blocks): the CPU has `W`'s features (this function's contract).
    let one = unsafe { W::splat(keys.by(W::BYTES)) };
    let mut registers = rest.chunks_exact(W::BYTES);
    for part in &mut registers {
        y = unsafe { y.fold_xor(one, load(part, sink)) };
    }
    unsafe { y.finish_tail(data, registers.remainder().len(), keys) }
}

/// Folds `data` (at least 16 bytes) into one lane that stands for the message register `state`
/// followed by `data` (see `fold.rs`), with four `W` registers from `acc_bytes::<W>()` bytes up,
/// prefetching `AHEAD` bytes ahead (see [`fold_blocks`]).
#[inline(always)]
pub(crate) unsafe fn fold_wide<W: Wide, S: Sink, const AHEAD: usize>(
    state: u32,
    data: &[u8],
    keys: &FoldKeys,
    sink: &mut S,
) -> __m128i {
    let block = acc_bytes::<W>();
    let Some((first, rest)) = data.split_at_checked(block) else {
        if W::SINGLE {
            if let Some((first, rest)) = data.split_at_checked(W::BYTES) {
                // SAFETY: the CPU has `W`'s features (this function's contract).
                return unsafe {
                    let y =
                        load::<W, S>(first, sink).xor_lane::<true>(_mm_cvtsi32_si128(state as i32));
                    fold_registers(y, data, rest, keys, sink)
                };
            }
        }
        // SAFETY: `fold.rs`'s features are part of every wide kernel's.
        return unsafe { fold_pclmul(state, data, keys) };
    };
    let (blocks, rest) = rest.split_at(rest.len() / block * block);
    // SAFETY (both): the CPU has `W`'s features (this function's contract).
    let mut acc = unsafe { start::<W, S>(state, first, sink) };
    unsafe {
        fold_blocks::<W, S, AHEAD>(&mut acc, blocks, W::splat(keys.by(block)), sink);
        finish(&acc, data, rest, keys, sink)
    }
}
