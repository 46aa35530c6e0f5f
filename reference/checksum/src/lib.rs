//! The three checksums of CQL native protocol framing.
//!
//! - [`crc24`]: the frame header check (CRC-24 with Cassandra's parameters), over the 3 header
//!   bytes of an uncompressed frame or the 5 of an LZ4 frame, in wire order.
//! - [`crc32`]: the protocol v5 payload check: IEEE CRC-32 of `FA 2D 55 CA` followed by the payload.
//! - [`crc32c`]: the payload check negotiated with `FRAME_CHECKSUM=crc32c`: unseeded CRC-32C.
//!
//! [`bitwise`] holds the readable one-bit-at-a-time definitions every fast path is tested against.
//!
//! # Paths
//!
//! Each checksum has several implementations, the [`Path`]s:
//!
//! - CRC-24 is table-driven: a 5- or 3-byte header is five (three) independent lookups in
//!   positional tables, since the CRC is affine in the message (see `crc24.rs`).
//! - CRC-32 and CRC-32C have a portable slice-by-16 path with tables built by `const fn`.
//! - On x86-64: carry-less multiplication folding, 128-bit (PCLMULQDQ), 256-bit (VPCLMULQDQ with
//!   AVX2) and 512-bit (VPCLMULQDQ with AVX-512), for both polynomials, ending in a Barrett
//!   reduction; for CRC-32C, the SSE4.2 `crc32` instruction on three interleaved chains joined by
//!   PCLMULQDQ, and fused paths running 256- or 512-bit folding on part of each block while three
//!   `crc32` chains run on the rest (the `crc32` unit adds its throughput to the multiplier's); the
//!   512-bit fused path in two shapes, the chains' share chosen by the CPU's vendor (its multiplier
//!   issues every cycle on Intel, every other cycle on AMD Zen 4). From 32 KiB on (the two-quadword
//!   fused CRC-32C from 1536 bytes), the 512-bit paths fold from a 64-byte boundary: loads that
//!   straddle cache lines cost a quarter of the speed once the data is out of L1.
//! - On AArch64: the `crc32x`/`crc32cx` instructions.
//!
//! The v5 seed `FA 2D 55 CA` is a constant prefix: every CRC-32 path starts from the register
//! state it leaves, computed at compile time. Every folding, shifting and joining constant is
//! derived at compile time from the polynomial by the `const fn`s of `gf2.rs`: no constant table
//! is copied from elsewhere.
//!
//! The public functions use, per checksum, the fastest path the CPU has (detected at run time
//! with `is_x86_feature_detected!`/`is_aarch64_feature_detected!`), chosen once on first use and
//! cached. The environment variable **`CQLFRAME_CRC_PATH`**, read once at that point, forces a
//! path by its [`Path::name`] (`bitwise`, `table`, `sse42`, `pclmul`, `vpclmul`, `vpclmul-fused`,
//! `vpclmul512`, `vpclmul512-fused`, `vpclmul512-fused2`, `aarch64-crc`) for every checksum it computes and the CPU
//! can run; the others, and any unknown name, keep the automatic choice. [`selected_path`] tells which path is in use;
//! [`crc24_with`], [`crc32_with`] and [`crc32c_with`] run one path explicitly (the tests run
//! every available path that way).
//!
//! # Benchmarks
//!
//! `reference/checksum/bench.sh` runs `benches/checksums.rs` (criterion; our checksums beside
//! the `crc32c`, `crc-fast`, `crc32fast` and `crc` crates) and prints a Markdown table of the
//! medians.

pub mod bitwise;
mod crc24;
mod path;
mod table;

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "x86_64")]
mod gf2;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use path::{available_paths, selected_path, Algorithm, Path};

/// The environment variable that forces a [`Path`] (see the crate documentation).
pub const ENV_PATH: &str = "CQLFRAME_CRC_PATH";

/// The path in use for each checksum, as `crc24=table crc32=vpclmul512 crc32c=vpclmul512-fused`:
/// what the benchmarks print beside their figures.
pub fn selected_paths() -> String {
    [
        ("crc24", Algorithm::Crc24),
        ("crc32", Algorithm::Crc32),
        ("crc32c", Algorithm::Crc32c),
    ]
    .map(|(name, algorithm)| format!("{name}={}", selected_path(algorithm).name()))
    .join(" ")
}

/// CRC-24 of a frame header's length/flag bytes (spec rule CRC-1).
#[inline]
pub fn crc24(bytes: &[u8]) -> u32 {
    // Inlined here rather than called through the kernel pointer: a header is a few lookups.
    match selected_path(Algorithm::Crc24) {
        Path::Bitwise => bitwise::crc24(bytes),
        _ => crc24::compute(bytes),
    }
}

/// The protocol v5 payload checksum: IEEE CRC-32 seeded with `FA 2D 55 CA` (spec rule CRC-2).
#[inline]
pub fn crc32(payload: &[u8]) -> u32 {
    path::checksum_selected(Algorithm::Crc32, payload)
}

/// Unseeded CRC-32C (Castagnoli) of a payload (spec rule CRC-3).
#[inline]
pub fn crc32c(payload: &[u8]) -> u32 {
    path::checksum_selected(Algorithm::Crc32c, payload)
}

/// [`crc32`] of `payload`, appending `payload` to `out` in the same pass where the path in use
/// can (512-bit folding: the copy costs next to nothing), by [`append`] otherwise.
pub fn crc32_append(payload: &[u8], out: &mut Vec<u8>) -> u32 {
    path::checksum_append(Algorithm::Crc32, payload, out)
}

/// [`crc32c`] of `payload`, appending it to `out` (see [`crc32_append`]).
pub fn crc32c_append(payload: &[u8], out: &mut Vec<u8>) -> u32 {
    path::checksum_append(Algorithm::Crc32c, payload, out)
}

/// Appends `bytes` to `out` in 2 KiB pieces. A frame's payload lands a header (6 or 8 bytes)
/// after where the writer's buffer starts, so when that buffer and the payload's share their
/// alignment, as large allocations do, destination and source are 6 or 8 bytes apart modulo 64;
/// glibc's `memcpy` then takes `rep movsb`, which AMD Zen 4 runs 16-30 times slower than at other
/// distances (measured: 131071 bytes in 37 us instead of 2.3 us). Below 2112 bytes (its
/// threshold on CPUs with fast short `rep movsb`, higher on others) it uses its vector loop,
/// which is not affected.
pub fn append(out: &mut Vec<u8>, bytes: &[u8]) {
    for piece in bytes.chunks(2048) {
        out.extend_from_slice(piece);
    }
}

/// [`crc24`] through `path`; `None` if the CPU cannot run it or it does not compute CRC-24.
pub fn crc24_with(path: Path, bytes: &[u8]) -> Option<u32> {
    path::checksum_with(Algorithm::Crc24, path, bytes)
}

/// [`crc32`] through `path`; `None` if the CPU cannot run it or it does not compute CRC-32.
pub fn crc32_with(path: Path, payload: &[u8]) -> Option<u32> {
    path::checksum_with(Algorithm::Crc32, path, payload)
}

/// [`crc32c`] through `path`; `None` if the CPU cannot run it or it does not compute CRC-32C.
pub fn crc32c_with(path: Path, payload: &[u8]) -> Option<u32> {
    path::checksum_with(Algorithm::Crc32c, path, payload)
}

/// The payload checksum algorithm of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PayloadChecksum {
    /// Seeded IEEE CRC-32, the protocol v5 default.
    Crc32,
    /// Unseeded CRC-32C, negotiated through `FRAME_CHECKSUM=crc32c`.
    Crc32c,
}

impl PayloadChecksum {
    /// The checksum of `payload` under this algorithm.
    pub fn compute(self, payload: &[u8]) -> u32 {
        match self {
            PayloadChecksum::Crc32 => crc32(payload),
            PayloadChecksum::Crc32c => crc32c(payload),
        }
    }

    /// [`PayloadChecksum::compute`], appending `payload` to `out` in the same pass where the
    /// path in use can (see [`crc32_append`]).
    pub fn compute_append(self, payload: &[u8], out: &mut Vec<u8>) -> u32 {
        match self {
            PayloadChecksum::Crc32 => crc32_append(payload, out),
            PayloadChecksum::Crc32c => crc32c_append(payload, out),
        }
    }

    /// The name used on the wire (`FRAME_CHECKSUMS` / `FRAME_CHECKSUM` values).
    pub fn name(self) -> &'static str {
        match self {
            PayloadChecksum::Crc32 => "crc32",
            PayloadChecksum::Crc32c => "crc32c",
        }
    }
}
