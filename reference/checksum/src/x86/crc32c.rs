//! CRC-32C with the SSE4.2 `crc32` instruction.
//!
//! The instruction has a latency of 3 cycles and a throughput of one per cycle, so one chain of
//! it runs at a third of its speed. [`sse42`] runs three chains over three consecutive stripes
//! and joins them with carry-less multiplications (Intel's and RocksDB's three-way technique).
//! [`fused`] keeps those three chains busy on one part of each block while 256-bit VPCLMULQDQ
//! folds another part: the `crc32` unit and the carry-less multiplier are separate, so together
//! they exceed either alone.

use core::arch::x86_64::*;

use super::fold::{finish4, fold256, fold4, fold_vpclmul, key128, key256, start4, Acc4};
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
fn chain(state: u32, data: &[u8]) -> u32 {
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

/// Quadwords each `crc32` chain takes per fused iteration, while the folds take 128 bytes.
const CHAIN_WORDS: usize = 5;
const CHAIN_STEP: usize = 8 * CHAIN_WORDS;
/// Bytes one fused iteration consumes.
const ITERATION: usize = 3 * CHAIN_STEP + 128;
/// The most iterations in one block (7936 bytes): longer blocks cost more reductions of the
/// chains but nothing else, shorter ones leave less to plain folding at the end.
const MAX_ITERATIONS: usize = 32;

/// A fused block: three chain stripes of `iterations * CHAIN_STEP` bytes, then a folded part of
/// `iterations * 128` bytes.
struct FusedBlock {
    iterations: usize,
    /// Moves the accumulators over the stripes to the folded part (then 128 more per step).
    jump: [u64; 2],
    /// Inject the three chain registers into the last lane of the folded part.
    inject: [u64; 3],
}

impl FusedBlock {
    const fn new(iterations: usize) -> Self {
        let stripe = (iterations * CHAIN_STEP) as u64;
        let folded = (iterations * 128) as u64;
        FusedBlock {
            iterations,
            jump: fold_key(CRC32C_POLY, 3 * stripe),
            inject: [
                inject_key(CRC32C_POLY, folded + 2 * stripe),
                inject_key(CRC32C_POLY, folded + stripe),
                inject_key(CRC32C_POLY, folded),
            ],
        }
    }

    const fn len(&self) -> usize {
        self.iterations * ITERATION
    }
}

/// `FUSED_BLOCKS[n - 1]`: the block of `n` iterations. The longest are taken while they fit,
/// then one of the length that fits, so at most one iteration's worth is left to plain folding.
static FUSED_BLOCKS: [FusedBlock; MAX_ITERATIONS] = {
    let mut blocks = [const { FusedBlock::new(1) }; MAX_ITERATIONS];
    let mut n = 1;
    while n < MAX_ITERATIONS {
        blocks[n] = FusedBlock::new(n + 1);
        n += 1;
    }
    blocks
};

/// Up to this length one `crc32` chain is fastest: its latency (3 cycles a quadword) is no
/// worse than the fixed cost of joining chains or reducing folds, and consecutive calls overlap.
const CHAIN_MAX: usize = 128;
/// Below this, plain folding beats fused blocks.
const FUSED_MIN: usize = 2 * ITERATION;

/// One iteration of the three chains.
#[inline]
#[target_feature(enable = "sse4.2")]
fn chains(r: &mut [u64; 3], a: &[u8; CHAIN_STEP], b: &[u8; CHAIN_STEP], c: &[u8; CHAIN_STEP]) {
    let (wa, _) = a.as_chunks::<8>();
    let (wb, _) = b.as_chunks::<8>();
    let (wc, _) = c.as_chunks::<8>();
    for ((wa, wb), wc) in wa.iter().zip(wb).zip(wc) {
        r[0] = _mm_crc32_u64(r[0], u64::from_le_bytes(*wa));
        r[1] = _mm_crc32_u64(r[1], u64::from_le_bytes(*wb));
        r[2] = _mm_crc32_u64(r[2], u64::from_le_bytes(*wc));
    }
}

/// Runs one fused block of `shape.len()` bytes. `acc` stands for everything before the block
/// (`None` at the start of the message, whose register `state` then enters the first chain)
/// and, on return, for everything up to its end.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.2")]
fn fused_block(
    acc: Option<Acc4>,
    state: u32,
    block: &[u8],
    shape: &FusedBlock,
    k128: __m256i,
) -> Option<Acc4> {
    let stripe = shape.iterations * CHAIN_STEP;
    let (a, rest) = block.split_at_checked(stripe)?;
    let (b, rest) = rest.split_at_checked(stripe)?;
    let (c, folded) = rest.split_at_checked(stripe)?;
    let (a, _) = a.as_chunks::<CHAIN_STEP>();
    let (b, _) = b.as_chunks::<CHAIN_STEP>();
    let (c, _) = c.as_chunks::<CHAIN_STEP>();
    let (folded, _) = folded.as_chunks::<128>();
    let mut steps = a.iter().zip(b).zip(c).zip(folded);
    let mut r = [u64::from(state), 0, 0];
    let mut acc = match acc {
        Some(mut acc) => {
            let jump = key256(shape.jump);
            for a in acc.iter_mut() {
                *a = fold256(*a, jump);
            }
            acc
        }
        None => {
            let (((a, b), c), f) = steps.next()?;
            chains(&mut r, a, b, c);
            start4(0, f)
        }
    };
    for (((a, b), c), f) in steps {
        chains(&mut r, a, b, c);
        fold4(&mut acc, core::slice::from_ref(f), k128);
    }
    let inject = |register: u64, key: u64| {
        _mm_clmulepi64_si128(_mm_cvtsi64_si128(register as i64), key128([key, 0]), 0x00)
    };
    let lane = _mm_xor_si128(
        _mm_xor_si128(inject(r[0], shape.inject[0]), inject(r[1], shape.inject[1])),
        inject(r[2], shape.inject[2]),
    );
    acc[3] = _mm256_xor_si256(
        acc[3],
        _mm256_inserti128_si256(_mm256_setzero_si256(), lane, 1),
    );
    Some(acc)
}

/// The register after `data`: fused blocks, then folding, reduced with two `crc32`.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.2,sse4.1,ssse3")]
pub(crate) fn fused(state: u32, data: &[u8]) -> u32 {
    if data.len() < FUSED_MIN {
        if data.len() <= CHAIN_MAX {
            return chain(state, data);
        }
        return reduce(fold_vpclmul(state, data, &CASTAGNOLI.keys));
    }
    let k128 = key256(CASTAGNOLI.keys.by(128));
    let mut acc = None;
    let mut rest = data;
    loop {
        let iterations = (rest.len() / ITERATION).min(MAX_ITERATIONS);
        let Some(shape) = iterations.checked_sub(1).and_then(|i| FUSED_BLOCKS.get(i)) else {
            break;
        };
        let Some((block, after)) = rest.split_at_checked(shape.len()) else {
            break;
        };
        // The message's register enters the first block only.
        let entering = if acc.is_none() { state } else { 0 };
        acc = fused_block(acc, entering, block, shape, k128);
        if acc.is_none() {
            break;
        }
        rest = after;
    }
    // `None` is not reached (`data` holds a block; blocks split exactly); folding is correct
    // all the same.
    let Some(mut acc) = acc else {
        return reduce(fold_vpclmul(state, data, &CASTAGNOLI.keys));
    };
    let (blocks, tail) = rest.as_chunks::<128>();
    fold4(&mut acc, blocks, k128);
    reduce(finish4(&acc, data, tail, &CASTAGNOLI.keys))
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
