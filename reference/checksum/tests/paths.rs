//! Every path this CPU runs, against the bit-at-a-time reference: every length 0..=2048 at
//! every alignment 0..=63, the lengths around the block sizes of the striped paths, and large
//! random buffers.

mod common;

use common::{random_bytes, with};
use cqlframe_checksum::{available_paths, bitwise, Algorithm, Path};

const MAX_LEN: usize = 2048;
const ALGORITHMS: [Algorithm; 3] = [Algorithm::Crc24, Algorithm::Crc32, Algorithm::Crc32c];

/// The alignments swept: all 64 in release builds; in debug builds (where the sweep would take
/// minutes) the interesting ones.
fn alignments() -> Vec<usize> {
    if cfg!(debug_assertions) {
        vec![0, 1, 3, 7, 8, 15, 16, 31, 33, 63]
    } else {
        (0..64).collect()
    }
}

/// Reference checksums of every prefix of `data`, incrementally (the bitwise register update is
/// resumable), so the sweep costs one bitwise pass per algorithm.
fn prefix_references(algorithm: Algorithm, data: &[u8]) -> Vec<u32> {
    match algorithm {
        Algorithm::Crc24 => (0..=data.len())
            .map(|n| bitwise::crc24(&data[..n]))
            .collect(),
        Algorithm::Crc32 | Algorithm::Crc32c => {
            let (poly, mut register) = if algorithm == Algorithm::Crc32 {
                let seed = bitwise::reflected_update(!0, bitwise::CRC32_POLY, &bitwise::CRC32_SEED);
                (bitwise::CRC32_POLY, seed)
            } else {
                (bitwise::CRC32C_POLY, !0)
            };
            let mut refs = vec![!register];
            for &byte in data {
                register = bitwise::reflected_update(register, poly, &[byte]);
                refs.push(!register);
            }
            refs
        }
    }
}

/// A copy of `data` starting `alignment` bytes past a 64-byte boundary.
struct Aligned {
    backing: Vec<u8>,
    start: usize,
}

impl Aligned {
    fn new(data: &[u8], alignment: usize) -> Self {
        let mut backing = vec![0u8; data.len() + 128];
        let base = backing.as_ptr().align_offset(64);
        let start = base + alignment;
        backing[start..start + data.len()].copy_from_slice(data);
        Aligned { backing, start }
    }

    fn prefix(&self, len: usize) -> &[u8] {
        &self.backing[self.start..self.start + len]
    }
}

/// Every available path but the bitwise reference, against the reference checksums of the
/// prefixes of `data` of each length in `lens`, at each alignment.
fn sweep(algorithms: &[Algorithm], data: &[u8], alignments: &[usize], lens: &[usize]) {
    for &algorithm in algorithms {
        let refs = prefix_references(algorithm, data);
        for path in available_paths() {
            if path == Path::Bitwise || with(algorithm, path, b"").is_none() {
                continue;
            }
            for &alignment in alignments {
                let buf = Aligned::new(data, alignment);
                for &len in lens {
                    assert_eq!(
                        with(algorithm, path, buf.prefix(len)),
                        Some(refs[len]),
                        "{algorithm:?} via {path:?}, len {len}, alignment {alignment}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_expected_paths_are_available() {
    let paths = available_paths();
    assert!(paths.contains(&Path::Bitwise) && paths.contains(&Path::Table));
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("sse4.2") && is_x86_feature_detected!("pclmulqdq") {
            assert!(paths.contains(&Path::Sse42) && paths.contains(&Path::Pclmul));
        }
        if is_x86_feature_detected!("vpclmulqdq") && is_x86_feature_detected!("avx2") {
            assert!(paths.contains(&Path::Vpclmul) && paths.contains(&Path::VpclmulFused));
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
                for path in [
                    Path::Vpclmul512,
                    Path::Vpclmul512Fused,
                    Path::Vpclmul512Fused2,
                ] {
                    assert!(paths.contains(&path), "{path:?}");
                }
            }
        }
    }
    eprintln!("available paths: {paths:?}");
    // The sweeps below run every available path; say which ones this CPU skips, and why.
    for path in Path::ALL.into_iter().filter(|p| !paths.contains(p)) {
        eprintln!(
            "SKIPPED {path:?} ({}): this CPU lacks what it requires: {}",
            path.name(),
            path.requires()
        );
    }
}

#[test]
fn every_length_and_alignment() {
    let data = random_bytes(0x5EED, MAX_LEN);
    let lens: Vec<usize> = (0..=MAX_LEN).collect();
    sweep(&ALGORITHMS, &data, &alignments(), &lens);
}

/// Lengths on both sides of the striped paths' block sizes and their sums: three-way blocks of
/// 3 x 16..4096-byte stripes; 256-bit fused blocks of n x 248 bytes, n up to 32 (7936 bytes),
/// the first from 496 bytes on; 512-bit fused blocks of n x 328 bytes, n up to 64 (20992 bytes),
/// the first from 13 x 328 = 4264 bytes on, and of n x 304 bytes (two quadwords per chain) from
/// 27 x 304 = 8208 bytes on, n cut to a multiple of 4 (so 24 iterations from 8208, 28 from
/// 8512, 32 from 9728, and a further block only once 4 x 304 = 1216 bytes remain after a
/// 64-iteration one); 512-bit folding's 64- and 256-byte steps.
#[test]
fn lengths_around_block_sizes() {
    let data = random_bytes(0xB10C, 3 * 20992 + 4264 + 300);
    let mut lens: Vec<usize> = Vec::new();
    for block in [
        48usize,
        192,
        768,
        3072,
        12288,
        1984,
        7936,
        2 * 7936,
        7936 + 1984,
        3 * 7936 + 1984,
        4264,
        20992,
        20992 + 4264,
        2 * 20992 + 656,
        3 * 20992 + 4264,
        8208,
        8512,
        9728,
        19456,
        19456 + 1216,
        19456 + 8208,
        2 * 19456 + 608,
        2 * 19456 + 1216,
        3 * 19456 + 8208,
    ] {
        lens.extend(block.saturating_sub(70)..=block + 70);
    }
    sweep(
        &[Algorithm::Crc32, Algorithm::Crc32c],
        &data,
        &[0, 5, 32],
        &lens,
    );
}

/// Long inputs at every alignment: from 32 KiB on the 512-bit kernels take the bytes before
/// the first 64-byte boundary apart (0 to 63 of them), then fold from there; the two-quadword
/// fused CRC-32C does so from its first fused block (8208 bytes), its blocks then a multiple of
/// four iterations (24 of them up to 8511 bytes after the head, 28 from 8512).
#[test]
fn long_inputs_at_every_alignment() {
    let data = random_bytes(0xA11C, 65_599 + 64);
    let lens = [
        8_207,
        8_208,
        8_209,
        8_208 + 63,
        8_208 + 64 + 1_215,
        8_208 + 64 + 1_216,
        8_511,
        8_512,
        8_512 + 63,
        16_373,
        32_767,
        32_768,
        32_769,
        32_768 + 63,
        65_599,
    ];
    sweep(
        &[Algorithm::Crc32, Algorithm::Crc32c],
        &data,
        &alignments(),
        &lens,
    );
}

#[test]
fn large_random_buffers() {
    for (seed, len) in [
        (1, 1 << 20),
        (2, (1 << 20) - 1),
        (3, 300_001),
        (4, 131_071),
        (5, 65_599),
    ] {
        let data = random_bytes(seed, len);
        for algorithm in [Algorithm::Crc32, Algorithm::Crc32c] {
            let expected = with(algorithm, Path::Bitwise, &data);
            for path in available_paths() {
                if path == Path::Bitwise {
                    continue;
                }
                if let Some(got) = with(algorithm, path, &data) {
                    assert_eq!(Some(got), expected, "{algorithm:?} via {path:?}, len {len}");
                }
            }
        }
    }
}

#[test]
fn catalogue_check_values_through_every_path() {
    for path in available_paths() {
        let check = |algorithm, data: &[u8], expected: u32| {
            if let Some(got) = with(algorithm, path, data) {
                assert_eq!(got, expected, "{algorithm:?} via {path:?} of {data:?}");
            }
        };
        check(Algorithm::Crc24, b"123456789", 0x4B_3F02);
        check(Algorithm::Crc24, &[0x05, 0x00, 0x02], 0x9A_9919);
        check(Algorithm::Crc32, b"123456789", 0xE2A2_61A7);
        check(Algorithm::Crc32, b"", 0x4477_7ED3);
        check(Algorithm::Crc32, b"hello", 0xB60E_8074);
        check(Algorithm::Crc32c, b"123456789", 0xE306_9283);
        check(Algorithm::Crc32c, b"", 0);
    }
}

/// `crc32_append` / `crc32c_append` (checksum and copy in one pass where the selected path can)
/// against the reference and a plain copy: every length 0..=2048 and some large ones, at several
/// source alignments and with several bytes already in the output (the frame header's place).
#[test]
fn append_checksums_and_copies() {
    let data = random_bytes(0xA99E, 2048 + 131_071);
    let lens: Vec<usize> = (0..=2048).chain([4095, 16_373, 65_599, 131_071]).collect();
    for (algorithm, append) in [
        (
            Algorithm::Crc32,
            cqlframe_checksum::crc32_append as fn(&[u8], &mut Vec<u8>) -> u32,
        ),
        (Algorithm::Crc32c, cqlframe_checksum::crc32c_append),
    ] {
        let refs = prefix_references(algorithm, &data);
        for alignment in [0, 1, 6, 33] {
            let buf = Aligned::new(&data, alignment);
            for &len in &lens {
                for before in [0usize, 6, 8] {
                    let mut out = vec![0xEE; before];
                    let got = append(buf.prefix(len), &mut out);
                    assert_eq!(
                        got, refs[len],
                        "{algorithm:?}, len {len}, alignment {alignment}"
                    );
                    assert!(
                        out.len() == before + len
                            && out[..before].iter().all(|&b| b == 0xEE)
                            && out[before..] == *buf.prefix(len),
                        "{algorithm:?} copy, len {len}, alignment {alignment}, after {before}"
                    );
                }
            }
        }
    }
}
