//! The implementations ("paths") of each checksum, which of them this CPU can run, and the one
//! the public functions use: chosen once per checksum, on first use, from run-time CPU feature
//! detection, unless `CQLFRAME_CRC_PATH` names another, and kept as a function pointer.

use std::sync::OnceLock;

use crate::bitwise;
use crate::table;
#[cfg(target_arch = "x86_64")]
use crate::x86;
use crate::{crc24, ENV_PATH};

/// The three checksums of the framing layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// [`crate::crc24`].
    Crc24,
    /// [`crate::crc32`].
    Crc32,
    /// [`crate::crc32c`].
    Crc32c,
}

/// One implementation of the checksums. Each computes the same values; they differ in speed
/// and in what the CPU must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Path {
    /// One bit at a time ([`crate::bitwise`]): the reference. All three checksums.
    Bitwise,
    /// Tables built at compile time: slice-by-16 for CRC-32/CRC-32C; for CRC-24, positional
    /// tables for 3- and 5-byte headers and a byte table otherwise. All three checksums.
    Table,
    /// x86-64 SSE4.2 `crc32` instruction on three interleaved chains joined with PCLMULQDQ.
    /// CRC-32C only.
    Sse42,
    /// x86-64 128-bit PCLMULQDQ folding (with SSE4.1 and SSSE3). CRC-32 and CRC-32C.
    Pclmul,
    /// x86-64 256-bit VPCLMULQDQ folding (with AVX2). CRC-32 and CRC-32C.
    Vpclmul,
    /// x86-64 256-bit VPCLMULQDQ folding running alongside three `crc32` chains. CRC-32C only.
    VpclmulFused,
    /// x86-64 512-bit VPCLMULQDQ folding (with AVX-512F and BW). CRC-32 and CRC-32C.
    Vpclmul512,
    /// x86-64 512-bit VPCLMULQDQ folding running alongside three `crc32` chains, each taking
    /// three quadwords per 256 folded bytes. CRC-32C only.
    Vpclmul512Fused,
    /// As [`Path::Vpclmul512Fused`] with two quadwords per chain per 256 folded bytes, for CPUs
    /// whose 512-bit multiplier issues every cycle (the automatic choice on Intel). CRC-32C only.
    Vpclmul512Fused2,
    /// AArch64 `crc32x`/`crc32cx` instructions (feature `crc`). CRC-32 and CRC-32C.
    Aarch64Crc,
}

impl Path {
    /// Every path, in declaration order.
    pub const ALL: [Path; 10] = [
        Path::Bitwise,
        Path::Table,
        Path::Sse42,
        Path::Pclmul,
        Path::Vpclmul,
        Path::VpclmulFused,
        Path::Vpclmul512,
        Path::Vpclmul512Fused,
        Path::Vpclmul512Fused2,
        Path::Aarch64Crc,
    ];

    /// The path's name, as `CQLFRAME_CRC_PATH` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Path::Bitwise => "bitwise",
            Path::Table => "table",
            Path::Sse42 => "sse42",
            Path::Pclmul => "pclmul",
            Path::Vpclmul => "vpclmul",
            Path::VpclmulFused => "vpclmul-fused",
            Path::Vpclmul512 => "vpclmul512",
            Path::Vpclmul512Fused => "vpclmul512-fused",
            Path::Vpclmul512Fused2 => "vpclmul512-fused2",
            Path::Aarch64Crc => "aarch64-crc",
        }
    }

    /// The path called `name` (see [`Path::name`]).
    pub fn from_name(name: &str) -> Option<Path> {
        Path::ALL.into_iter().find(|p| p.name() == name)
    }

    /// What the CPU must have to run the path (see [`Path::is_available`]).
    pub fn requires(self) -> &'static str {
        match self {
            Path::Bitwise | Path::Table => "nothing",
            Path::Sse42 => "x86-64 with SSE4.2 and PCLMULQDQ",
            Path::Pclmul => "x86-64 with PCLMULQDQ, SSE4.1 and SSSE3",
            Path::Vpclmul => "x86-64 with AVX2 and VPCLMULQDQ (and PCLMULQDQ, SSE4.1, SSSE3)",
            Path::VpclmulFused => "x86-64 with AVX2, VPCLMULQDQ and SSE4.2",
            Path::Vpclmul512 => "x86-64 with AVX-512F, AVX-512BW and VPCLMULQDQ",
            Path::Vpclmul512Fused | Path::Vpclmul512Fused2 => {
                "x86-64 with AVX-512F, AVX-512BW, VPCLMULQDQ and SSE4.2"
            }
            Path::Aarch64Crc => "AArch64 with the CRC extension",
        }
    }

    /// Whether this CPU can run the path (detected at run time).
    pub fn is_available(self) -> bool {
        match self {
            Path::Bitwise | Path::Table => true,
            #[cfg(target_arch = "x86_64")]
            Path::Sse42 => {
                is_x86_feature_detected!("sse4.2") && is_x86_feature_detected!("pclmulqdq")
            }
            #[cfg(target_arch = "x86_64")]
            Path::Pclmul => {
                is_x86_feature_detected!("pclmulqdq")
                    && is_x86_feature_detected!("sse4.1")
                    && is_x86_feature_detected!("ssse3")
            }
            #[cfg(target_arch = "x86_64")]
            Path::Vpclmul => {
                Path::Pclmul.is_available()
                    && is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("vpclmulqdq")
            }
            #[cfg(target_arch = "x86_64")]
            Path::VpclmulFused => Path::Vpclmul.is_available() && Path::Sse42.is_available(),
            #[cfg(target_arch = "x86_64")]
            Path::Vpclmul512 => {
                Path::Vpclmul.is_available()
                    && is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
            }
            #[cfg(target_arch = "x86_64")]
            Path::Vpclmul512Fused | Path::Vpclmul512Fused2 => {
                Path::Vpclmul512.is_available() && Path::Sse42.is_available()
            }
            #[cfg(target_arch = "aarch64")]
            Path::Aarch64Crc => std::arch::is_aarch64_feature_detected!("crc"),
            _ => false,
        }
    }

    /// Whether the path computes `algorithm` (whatever the CPU).
    pub fn computes(self, algorithm: Algorithm) -> bool {
        match self {
            Path::Bitwise | Path::Table => true,
            Path::Pclmul | Path::Vpclmul | Path::Vpclmul512 | Path::Aarch64Crc => {
                algorithm != Algorithm::Crc24
            }
            Path::Sse42 | Path::VpclmulFused | Path::Vpclmul512Fused | Path::Vpclmul512Fused2 => {
                algorithm == Algorithm::Crc32c
            }
        }
    }
}

/// Whether CPUID names Intel as this CPU's vendor.
fn cpu_is_intel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let id = std::arch::x86_64::__cpuid(0);
        [id.ebx, id.edx, id.ecx] == [0x756e_6547, 0x4965_6e69, 0x6c65_746e] // "GenuineIntel"
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The paths this CPU can run, in declaration order.
pub fn available_paths() -> Vec<Path> {
    Path::ALL.into_iter().filter(|p| p.is_available()).collect()
}

/// An implementation of one checksum: its whole computation, from the algorithm's initial
/// register to the final XOR. `unsafe` because most need CPU features checked beforehand.
type Kernel = unsafe fn(&[u8]) -> u32;

/// The implementation of `algorithm` through `path` on this target, if there is one.
fn kernel(algorithm: Algorithm, path: Path) -> Option<Kernel> {
    use Algorithm::{Crc24, Crc32, Crc32c};
    let kernel: Kernel = match (algorithm, path) {
        (Crc24, Path::Bitwise) => bitwise::crc24,
        (Crc24, Path::Table) => crc24::compute,
        (Crc32, Path::Bitwise) => bitwise::crc32,
        (Crc32, Path::Table) => table::crc32,
        (Crc32c, Path::Bitwise) => bitwise::crc32c,
        (Crc32c, Path::Table) => table::crc32c,
        #[cfg(target_arch = "x86_64")]
        (Crc32, Path::Pclmul) => x86::crc32_pclmul,
        #[cfg(target_arch = "x86_64")]
        (Crc32c, Path::Pclmul) => x86::crc32c_pclmul,
        #[cfg(target_arch = "x86_64")]
        (Crc32, Path::Vpclmul) => x86::crc32_vpclmul,
        #[cfg(target_arch = "x86_64")]
        (Crc32c, Path::Vpclmul) => x86::crc32c_vpclmul,
        #[cfg(target_arch = "x86_64")]
        (Crc32c, Path::Sse42) => x86::crc32c_sse42,
        #[cfg(target_arch = "x86_64")]
        (Crc32c, Path::VpclmulFused) => x86::crc32c_fused,
        #[cfg(target_arch = "x86_64")]
        (Crc32, Path::Vpclmul512) => x86::crc32_vpclmul512,
        #[cfg(target_arch = "x86_64")]
        (Crc32c, Path::Vpclmul512) => x86::crc32c_vpclmul512,
        #[cfg(target_arch = "x86_64")]
        (Crc32c, Path::Vpclmul512Fused) => x86::crc32c_fused512,
        #[cfg(target_arch = "x86_64")]
        (Crc32c, Path::Vpclmul512Fused2) => x86::crc32c_fused512_2,
        #[cfg(target_arch = "aarch64")]
        (Crc32, Path::Aarch64Crc) => crate::aarch64::crc32,
        #[cfg(target_arch = "aarch64")]
        (Crc32c, Path::Aarch64Crc) => crate::aarch64::crc32c,
        _ => return None,
    };
    Some(kernel)
}

/// The path and kernel the public functions use for `algorithm`, chosen on first use.
#[inline]
fn selected(algorithm: Algorithm) -> (Path, Kernel) {
    static SELECTED: [OnceLock<(Path, Kernel)>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    *SELECTED[algorithm as usize].get_or_init(|| select(algorithm))
}

#[cold]
fn select(algorithm: Algorithm) -> (Path, Kernel) {
    let path = choose(algorithm);
    // Every chosen path has a kernel; the table one is always there.
    let table: Kernel = match algorithm {
        Algorithm::Crc24 => crc24::compute,
        Algorithm::Crc32 => table::crc32,
        Algorithm::Crc32c => table::crc32c,
    };
    kernel(algorithm, path).map_or((Path::Table, table), |k| (path, k))
}

/// The path the public functions use for `algorithm`: `CQLFRAME_CRC_PATH` if it names an
/// available path that computes `algorithm`, otherwise the fastest available one.
#[inline]
pub fn selected_path(algorithm: Algorithm) -> Path {
    selected(algorithm).0
}

fn choose(algorithm: Algorithm) -> Path {
    let forced = std::env::var(ENV_PATH)
        .ok()
        .and_then(|name| Path::from_name(name.trim()));
    let usable = |p: &Path| p.computes(algorithm) && p.is_available();
    if let Some(path) = forced.filter(usable) {
        return path;
    }
    let preference: &[Path] = match algorithm {
        Algorithm::Crc24 => &[],
        Algorithm::Crc32 => &[
            Path::Vpclmul512,
            Path::Vpclmul,
            Path::Pclmul,
            Path::Aarch64Crc,
        ],
        // The 512-bit fused shape by the multiplier's issue rate, which the vendor tells: Intel's
        // (Ice Lake and later) issues every cycle and takes the two-quadword shape; AMD Zen 4's
        // every other cycle (`benches/ceilings` measures it). Zen 5 is not measured here.
        Algorithm::Crc32c => &[
            if cpu_is_intel() {
                Path::Vpclmul512Fused2
            } else {
                Path::Vpclmul512Fused
            },
            Path::VpclmulFused,
            Path::Sse42,
            Path::Aarch64Crc,
        ],
    };
    preference
        .iter()
        .copied()
        .find(usable)
        .unwrap_or(Path::Table)
}

/// The checksum `algorithm` of `data` through `path`, if this CPU can run it and it computes
/// `algorithm`.
pub(crate) fn checksum_with(algorithm: Algorithm, path: Path, data: &[u8]) -> Option<u32> {
    let kernel = kernel(algorithm, path).filter(|_| path.is_available())?;
    // SAFETY: the CPU has the path's features (just checked).
    Some(unsafe { kernel(data) })
}

/// A kernel that also copies its input to a destination with as many writable bytes.
type CopyKernel = unsafe fn(&[u8], *mut u8) -> u32;

/// The copying kernel of `algorithm` for the selected path, where one makes the copy nearly
/// free: 512-bit folding is limited by the multiplier, leaving the stores idle. (The fused
/// CRC-32C path is not: its `crc32` chains would need stores of their own, so the plain 512-bit
/// fold, copying, serves it.)
fn copy_kernel(algorithm: Algorithm) -> Option<CopyKernel> {
    match (algorithm, selected_path(algorithm)) {
        #[cfg(target_arch = "x86_64")]
        (Algorithm::Crc32, Path::Vpclmul512) => Some(x86::crc32_vpclmul512_copy),
        #[cfg(target_arch = "x86_64")]
        (Algorithm::Crc32c, Path::Vpclmul512 | Path::Vpclmul512Fused | Path::Vpclmul512Fused2) => {
            Some(x86::crc32c_vpclmul512_copy)
        }
        _ => None,
    }
}

/// The checksum of `data` through the selected path's copying kernel, `data` appended to `out`
/// in the same pass; without one, appended by [`crate::append`] then checksummed.
pub(crate) fn checksum_append(algorithm: Algorithm, data: &[u8], out: &mut Vec<u8>) -> u32 {
    // Short payloads copy in a few nanoseconds: the plain kernel's call is the cheaper one.
    const COPY_KERNEL_MIN: usize = 1024;
    let kernel = (data.len() >= COPY_KERNEL_MIN)
        .then(|| copy_kernel(algorithm))
        .flatten();
    let Some(kernel) = kernel else {
        crate::append(out, data);
        return checksum_selected(algorithm, data);
    };
    out.reserve(data.len());
    let len = out.len();
    // SAFETY: `reserve` left `data.len()` writable bytes after `len`, in `out`'s own buffer
    // (not `data`'s: `out` is borrowed mutably); the kernel writes all of them and the CPU has
    // its features (a selected path's).
    unsafe {
        let register = kernel(data, out.as_mut_ptr().add(len));
        out.set_len(len + data.len());
        register
    }
}

/// The checksum through the selected path.
#[inline]
pub(crate) fn checksum_selected(algorithm: Algorithm, data: &[u8]) -> u32 {
    let (_, kernel) = selected(algorithm);
    // SAFETY: `selected` only keeps kernels of available paths.
    unsafe { kernel(data) }
}
