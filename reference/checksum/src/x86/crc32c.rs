//! CRC-32C with the SSE4.2 `crc32` instruction.
//!
//! The instruction has a latency of 3 cycles and a throughput of one per cycle, so one chain of
//! it runs at a third of its speed. [`sse42`] runs three chains over three consecutive stripes
//! and joins them with carry-less multiplications (Intel's and RocksDB's three-way technique).
//! [`fused`] keeps those three chains busy on one part of each block while 256- or 512-bit
//! VPCLMULQDQ folds another part: the `crc32` unit and the carry-less multiplier are separate,
//! so together they exceed either alone.

use core::arch::x86_64::*;

use super::fold::key128;
use super::wide::{acc_bytes, finish, fold_blocks, fold_wide, start, Acc, NoCopy, Wide, Ymm, Zmm};
use super::CASTAGNOLI;
use crate::bitwise::CRC32C_POLY;
use crate::gf2::{fold_key, inject_key, shift_key};

/// `data` as little-endian quadwords, and the bytes after the last whole one.
#[inline(always)]
fn words(data: &[u8]) -> (impl Iterator<Item = u64> + '_, &[u8]) {
    let (words, rest) = data.as_chunks::<8>();
    (words.iter().map(|w| u64::from_le_bytes(*w)), rest)
}

/// One `crc32` chain over `data`.
#[inline]
#[target_feature(enable = "sse4.2")]
pub(crate) fn chain(state: u32, data: &[u8]) -> u32 {
    let (words, rest) = words(data);
    let mut crc = u64::from(state);
    for word in words {
        crc = _mm_crc32_u64(crc, word);
    }
    let mut crc = crc as u32;
    for &byte in rest {
        crc = _mm_crc32_u8(crc, byte);
    }
    crc
}

/// `register * x^(8 * n)` through a [`shift_key`] for `n`, still to be reduced by one `crc32`
/// from register 0 (reductions of several shifted registers can share it, being linear).
#[inline]
#[target_feature(enable = "pclmulqdq")]
fn shifted(register: u32, key: u64) -> u64 {
    let product = _mm_clmulepi64_si128(
        _mm_cvtsi32_si128(register as i32),
        _mm_cvtsi64_si128(key as i64),
        0x00,
    );
    _mm_cvtsi128_si64(product) as u64
}

/// A three-way stripe length and the keys shifting a register over one and two stripes.
struct Stripe {
    len: usize,
    by_one: u64,
    by_two: u64,
}

impl Stripe {
    const fn new(len: usize) -> Self {
        Stripe {
            len,
            by_one: shift_key(CRC32C_POLY, len as u64),
            by_two: shift_key(CRC32C_POLY, 2 * len as u64),
        }
    }
}

/// Stripe lengths, longest first: blocks of three stripes are taken while they fit.
static STRIPES: [Stripe; 5] = [
    Stripe::new(4096),
    Stripe::new(1024),
    Stripe::new(256),
    Stripe::new(64),
    Stripe::new(16),
];

/// The register after `data`, three `crc32` chains at a time.
#[inline]
#[target_feature(enable = "sse4.2,pclmulqdq")]
pub(crate) fn sse42(mut state: u32, mut data: &[u8]) -> u32 {
    if data.len() <= CHAIN_MAX {
        return chain(state, data);
    }
    for stripe in &STRIPES {
        while let Some((block, rest)) = data.split_at_checked(3 * stripe.len) {
            let (a, bc) = block.split_at(stripe.len);
            let (b, c) = bc.split_at(stripe.len);
            let (wa, _) = words(a);
            let (wb, _) = words(b);
            let (wc, _) = words(c);
            let (mut ra, mut rb, mut rc) = (u64::from(state), 0, 0);
            for ((wa, wb), wc) in wa.zip(wb).zip(wc) {
                ra = _mm_crc32_u64(ra, wa);
                rb = _mm_crc32_u64(rb, wb);
                rc = _mm_crc32_u64(rc, wc);
            }
            let joined = shifted(ra as u32, stripe.by_two) ^ shifted(rb as u32, stripe.by_one);
            state = _mm_crc32_u64(0, joined) as u32 ^ rc as u32;
            data = rest;
        }
    }
    chain(state, data)
}

/// Up to this length one `crc32` chain is fastest: its latency (3 cycles a quadword) is no
/// worse than the fixed cost of joining chains or reducing folds, and consecutive calls overlap.
const CHAIN_MAX: usize = 128;

/// A shape of fused blocks: the register width folding them, how much each `crc32` chain takes
/// while the four registers fold [`acc_bytes`] bytes (the two units' throughputs in
/// proportion), and the blocks themselves.
pub(crate) trait Fused {
    /// The folding registers.
    type W: Wide;
    /// Quadwords each of the three chains takes per iteration.
    const CHAIN_WORDS: usize;
    /// `BLOCKS[n - 1]`: the block of `n` iterations, up to the longest. Longer blocks cost
    /// fewer joins of the chains but leave more to plain folding at the end.
    const BLOCKS: &'static [FusedBlock];
    /// Below this many iterations' worth, plain folding beats fused blocks.
    const MIN_ITERATIONS: usize;
    /// Blocks run a multiple of this many iterations, so that a block that starts on a 64-byte
    /// boundary has its folded part and the next block start on one too (1: any number).
    const ITERATION_MULTIPLE: usize;
}

/// 256-bit folding, five quadwords per chain per 128 folded bytes.
pub(crate) struct Ymm5;

impl Fused for Ymm5 {
    type W = Ymm;
    const CHAIN_WORDS: usize = 5;
    const BLOCKS: &'static [FusedBlock] = &FUSED_YMM5;
    const MIN_ITERATIONS: usize = 2;
    const ITERATION_MULTIPLE: usize = 1;
}

/// 512-bit folding, three quadwords per chain per 256 folded bytes: measured best on AMD Zen 4
/// (from 1 to 8), whose 512-bit carry-less multiplies issue every other cycle and compete with
/// the `crc32` instructions for issue slots, so that the chains take a smaller share than the
/// two units' separate throughputs suggest.
pub(crate) struct Zmm3;

impl Fused for Zmm3 {
    type W = Zmm;
    const CHAIN_WORDS: usize = 3;
    const BLOCKS: &'static [FusedBlock] = &FUSED_ZMM3;
    // About 4 KiB: measured on AMD Zen 4, where 512-bit folding alone is within 5% of the fused
    // blocks up to there and the chains' fixed costs outweigh their share below.
    const MIN_ITERATIONS: usize = 13;
    // Not measured on Zen 4 with its folded parts aligned (that would take multiples of 8).
    const ITERATION_MULTIPLE: usize = 1;
}

/// 512-bit folding, two quadwords per chain per 256 folded bytes: for CPUs whose 512-bit
/// carry-less multiplier issues every cycle (Intel's), where folding carries the larger share.
/// Measured on Intel Xeon family 6 model 207 (one to four quadwords): 91 GB/s at 131071 bytes
/// against 84 with three and 76 with four.
pub(crate) struct Zmm2;

impl Fused for Zmm2 {
    type W = Zmm;
    const CHAIN_WORDS: usize = 2;
    const BLOCKS: &'static [FusedBlock] = &FUSED_ZMM2;
    // About 8 KiB: there the fused blocks and 512-bit folding alone were level on that CPU.
    const MIN_ITERATIONS: usize = 27;
    // Four iterations are 19 cache lines, their three stripes 3 (see
    // `super::crc32c_fused512_2`).
    const ITERATION_MULTIPLE: usize = 4;
}

/// Up to 32 iterations (7936 bytes), as measured on AMD Zen 3.
static FUSED_YMM5: [FusedBlock; 32] = fused_blocks(8 * Ymm5::CHAIN_WORDS, 128);
/// Up to 64 iterations (20992 bytes): on AMD Zen 4, 3% faster than 32 at 131071 bytes.
static FUSED_ZMM3: [FusedBlock; 64] = fused_blocks(8 * Zmm3::CHAIN_WORDS, 256);
/// Up to 64 iterations (19456 bytes), as [`FUSED_ZMM3`].
static FUSED_ZMM2: [FusedBlock; 64] = fused_blocks(8 * Zmm2::CHAIN_WORDS, 256);

/// A fused block: three chain stripes of `iterations * chain_step` bytes, then a folded part
/// of `iterations * fold_step` bytes.
pub(crate) struct FusedBlock {
    iterations: usize,
    /// Moves the accumulators over the stripes to the folded part.
    jump: [u64; 2],
    /// Inject the three chain registers into the last lane of the folded part.
    inject: [u64; 3],
}

/// The blocks of 1 to `N` iterations, each taking `chain_step` bytes per chain and folding
/// `fold_step` bytes.
const fn fused_blocks<const N: usize>(chain_step: usize, fold_step: usize) -> [FusedBlock; N] {
    let mut blocks = [const {
        FusedBlock {
            iterations: 0,
            jump: [0; 2],
            inject: [0; 3],
        }
    }; N];
    let mut n = 0;
    while n < N {
        let iterations = n + 1;
        let stripe = (iterations * chain_step) as u64;
        let folded = (iterations * fold_step) as u64;
        blocks[n] = FusedBlock {
            iterations,
            jump: fold_key(CRC32C_POLY, 3 * stripe),
            inject: [
                inject_key(CRC32C_POLY, folded + 2 * stripe),
                inject_key(CRC32C_POLY, folded + stripe),
                inject_key(CRC32C_POLY, folded),
            ],
        };
        n += 1;
    }
    blocks
}

/// The length from which [`fused`] runs fused blocks.
pub(crate) const fn fused_from<F: Fused>() -> usize {
    F::MIN_ITERATIONS * iteration::<F>()
}

/// Bytes each chain takes per iteration.
const fn chain_step<F: Fused>() -> usize {
    8 * F::CHAIN_WORDS
}

/// Bytes one fused iteration consumes.
const fn iteration<F: Fused>() -> usize {
    3 * chain_step::<F>() + acc_bytes::<F::W>()
}

/// One iteration of the three chains, over `chain_step::<F>()` bytes each.
#[inline(always)]
unsafe fn chains<F: Fused>(r: &mut [u64; 3], a: &[u8], b: &[u8], c: &[u8]) {
    let (wa, _) = a[..chain_step::<F>()].as_chunks::<8>();
    let (wb, _) = b[..chain_step::<F>()].as_chunks::<8>();
    let (wc, _) = c[..chain_step::<F>()].as_chunks::<8>();
    for ((wa, wb), wc) in wa.iter().zip(wb).zip(wc) {
        // SAFETY: the CPU has SSE4.2 (this function's contract).
        unsafe {
            r[0] = _mm_crc32_u64(r[0], u64::from_le_bytes(*wa));
            r[1] = _mm_crc32_u64(r[1], u64::from_le_bytes(*wb));
            r[2] = _mm_crc32_u64(r[2], u64::from_le_bytes(*wc));
        }
    }
}

/// Runs one fused block of `shape.iterations * iteration::<F>()` bytes. `acc` stands for
/// everything before the block (`None` at the start of the message, whose register `state` then
/// enters the first chain) and, on return, for everything up to its end.
#[inline(always)]
unsafe fn fused_block<F: Fused>(
    acc: Option<Acc<F::W>>,
    state: u32,
    block: &[u8],
    shape: &FusedBlock,
    key: F::W,
) -> Option<Acc<F::W>> {
    let stripe = shape.iterations * chain_step::<F>();
    let (a, rest) = block.split_at_checked(stripe)?;
    let (b, rest) = rest.split_at_checked(stripe)?;
    let (c, folded) = rest.split_at_checked(stripe)?;
    let step = chain_step::<F>();
    let mut steps = a
        .chunks_exact(step)
        .zip(b.chunks_exact(step))
        .zip(c.chunks_exact(step))
        .zip(folded.chunks_exact(acc_bytes::<F::W>()));
    let mut r = [u64::from(state), 0, 0];
    // SAFETY (all blocks): the CPU has `F::W`'s features, SSE4.2 and PCLMULQDQ (this function's
    // contract).
    let mut acc = match acc {
        Some(acc) => {
            let jump = unsafe { F::W::splat(shape.jump) };
            acc.map(|a| unsafe { a.fold(jump) })
        }
        None => {
            let (((a, b), c), f) = steps.next()?;
            unsafe {
                chains::<F>(&mut r, a, b, c);
                start::<F::W, _>(0, f, &mut NoCopy)
            }
        }
    };
    for (((a, b), c), f) in steps {
        unsafe {
            chains::<F>(&mut r, a, b, c);
            fold_blocks::<_, _, 0>(&mut acc, f, key, &mut NoCopy);
        }
    }
    let inject = |register: u64, key: u64| unsafe {
        _mm_clmulepi64_si128(_mm_cvtsi64_si128(register as i64), key128([key, 0]), 0x00)
    };
    let lane = unsafe {
        _mm_xor_si128(
            _mm_xor_si128(inject(r[0], shape.inject[0]), inject(r[1], shape.inject[1])),
            inject(r[2], shape.inject[2]),
        )
    };
    acc[3] = unsafe { acc[3].xor_lane::<false>(lane) };
    Some(acc)
}

/// The register after `data`: fused blocks of `F`'s shape and `crc32` chains, then folding,
/// reduced with two `crc32`.
#[inline(always)]
pub(crate) unsafe fn fused<F: Fused>(state: u32, data: &[u8]) -> u32 {
    // The first fused block, cut to a multiple of `ITERATION_MULTIPLE`, is then never empty.
    const { assert!(F::MIN_ITERATIONS >= F::ITERATION_MULTIPLE) };
    let keys = &CASTAGNOLI.keys;
    // SAFETY (all blocks): the CPU has `F::W`'s features, SSE4.2, SSE4.1, SSSE3 and PCLMULQDQ
    // (this function's contract).
    if data.len() < fused_from::<F>() {
        if data.len() <= CHAIN_MAX {
            return unsafe { chain(state, data) };
        }
        return unsafe { reduce(fold_wide::<F::W, _, 0>(state, data, keys, &mut NoCopy)) };
    }
    let key = unsafe { F::W::splat(keys.by(acc_bytes::<F::W>())) };
    let mut acc = None;
    let mut rest = data;
    loop {
        let iterations = (rest.len() / iteration::<F>()).min(F::BLOCKS.len());
        let iterations = iterations - iterations % F::ITERATION_MULTIPLE;
        let Some(shape) = iterations.checked_sub(1).and_then(|i| F::BLOCKS.get(i)) else {
            break;
        };
        let Some((block, after)) = rest.split_at_checked(shape.iterations * iteration::<F>())
        else {
            break;
        };
        // The message's register enters the first block only.
        let entering = if acc.is_none() { state } else { 0 };
        acc = unsafe { fused_block::<F>(acc, entering, block, shape, key) };
        if acc.is_none() {
            break;
        }
        rest = after;
    }
    // `None` is not reached (`data` holds a block; blocks split exactly); folding is correct
    // all the same.
    let Some(mut acc) = acc else {
        return unsafe { reduce(fold_wide::<F::W, _, 0>(state, data, keys, &mut NoCopy)) };
    };
    let (blocks, tail) = rest.split_at(rest.len() / acc_bytes::<F::W>() * acc_bytes::<F::W>());
    unsafe {
        fold_blocks::<_, _, 0>(&mut acc, blocks, key, &mut NoCopy);
        reduce(finish(&acc, data, tail, keys, &mut NoCopy))
    }
}

/// The CRC register of a folded lane: `lane * x^32 mod P`, which is what `crc32` computes for
/// the lane's 16 bytes from register 0.
#[inline]
#[target_feature(enable = "sse4.2")]
fn reduce(lane: __m128i) -> u32 {
    let low = _mm_cvtsi128_si64(lane) as u64;
    let high = _mm_extract_epi64(lane, 1) as u64;
    _mm_crc32_u64(_mm_crc32_u64(0, low), high) as u32
}
