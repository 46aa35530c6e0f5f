//! The throughput ceilings of the two units the fast paths use, measured the way the paths use
//! them: independent chains of the instruction, many more than its latency needs, and no memory
//! traffic, so that only the unit's issue rate limits them. Each is reported as the payload GB/s
//! it would sustain alone: 8 bytes per `crc32` instruction; 64 bytes per two 512-bit (or 32 per
//! two 256-bit) carry-less multiplications, the cost of one folding step.

use std::hint::black_box;

use criterion::{Criterion, Throughput};

/// Independent chains per measured loop: more than any of the units' latency times throughput.
const CHAINS: usize = 12;
/// Rounds of `CHAINS` instructions per measured call.
const ROUNDS: usize = 1024;

pub fn ceilings(c: &mut Criterion) {
    #[cfg(target_arch = "x86_64")]
    x86::ceilings(c);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = c;
}

/// Bytes a run of `ROUNDS * CHAINS` instructions stands for, at `bytes` per instruction.
fn throughput(bytes_per_instruction: usize) -> Throughput {
    Throughput::BytesDecimal((ROUNDS * CHAINS * bytes_per_instruction) as u64)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use super::*;

    pub fn ceilings(c: &mut Criterion) {
        let mut group = c.benchmark_group("ceiling");
        if is_x86_feature_detected!("sse4.2") {
            group.throughput(throughput(8));
            // SAFETY: the CPU has SSE4.2 (just checked).
            group.bench_function("crc32", |b| b.iter(|| unsafe { crc32(black_box(ROUNDS)) }));
        }
        if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("vpclmulqdq") {
            group.throughput(throughput(32));
            // SAFETY: the CPU has AVX-512F and VPCLMULQDQ (just checked).
            group.bench_function("clmul512", |b| {
                b.iter(|| unsafe { clmul512(black_box(ROUNDS)) })
            });
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("vpclmulqdq") {
            group.throughput(throughput(16));
            // SAFETY: the CPU has AVX2 and VPCLMULQDQ (just checked).
            group.bench_function("clmul256", |b| {
                b.iter(|| unsafe { clmul256(black_box(ROUNDS)) })
            });
        }
        group.finish();
    }

    #[target_feature(enable = "sse4.2")]
    fn crc32(rounds: usize) -> u64 {
        let mut r: [u64; CHAINS] = core::array::from_fn(|i| i as u64);
        for round in 0..rounds as u64 {
            for r in &mut r {
                *r = _mm_crc32_u64(*r, round);
            }
        }
        r.iter().fold(0, |a, r| a ^ r)
    }

    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn clmul512(rounds: usize) -> i64 {
        let key = _mm512_set1_epi64(0x1DB7_1064_1F70_1164);
        let mut r: [__m512i; CHAINS] = core::array::from_fn(|i| _mm512_set1_epi64(i as i64 + 1));
        for _ in 0..rounds {
            for r in &mut r {
                *r = _mm512_clmulepi64_epi128(*r, key, 0x01);
            }
        }
        let all = r
            .iter()
            .fold(_mm512_setzero_si512(), |a, r| _mm512_xor_si512(a, *r));
        _mm_cvtsi128_si64(_mm512_castsi512_si128(all))
    }

    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn clmul256(rounds: usize) -> i64 {
        let key = _mm256_set1_epi64x(0x1DB7_1064_1F70_1164);
        let mut r: [__m256i; CHAINS] = core::array::from_fn(|i| _mm256_set1_epi64x(i as i64 + 1));
        for _ in 0..rounds {
            for r in &mut r {
                *r = _mm256_clmulepi64_epi128(*r, key, 0x01);
            }
        }
        let all = r
            .iter()
            .fold(_mm256_setzero_si256(), |a, r| _mm256_xor_si256(a, *r));
        _mm_cvtsi128_si64(_mm256_castsi256_si128(all))
    }
}
