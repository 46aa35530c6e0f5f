//! Our checksums side by side with established crates, in one criterion run:
//! CRC-32C vs `crc32c` and `crc-fast`; seeded CRC-32 vs `crc32fast` (seeded through
//! `new_with_initial`) and `crc-fast` (unseeded: the 4-byte seed is no measurable work); CRC-24
//! of 5- and 3-byte headers vs Cassandra's bit loop and the `crc` crate.
//!
//! `bench.sh` runs this in rounds and `benches/report.py` prints the tables of medians. Beside
//! them, the ceilings of the CPU's two units (see `ceilings/mod.rs`), and the CPU and the paths
//! in use, recorded in `$CRITERION_HOME/machine.txt` (also printed).

use std::hint::black_box;
use std::time::Duration;

#[path = "../tests/common/cassandra_crc24.rs"]
mod cassandra_crc24;
mod ceilings;

use cassandra_crc24::CASSANDRA_CRC24;
use cqlframe_checksum::{bitwise, crc24, crc32, crc32c, crc32c_with, selected_paths, Path};
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};

const SIZES: [usize; 4] = [64, 2037, 16373, 131_071];

fn payload(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8)
        .collect()
}

fn payloads(c: &mut Criterion) {
    let seed_crc = crc32fast::hash(&bitwise::CRC32_SEED);
    for size in SIZES {
        let data = payload(size);
        let data = data.as_slice();

        let mut group = c.benchmark_group("crc32c");
        group.throughput(Throughput::BytesDecimal(size as u64));
        group.bench_with_input(BenchmarkId::new("ours", size), data, |b, d| {
            b.iter(|| crc32c(black_box(d)))
        });
        // Two of the other paths, to show what each unit gives alone.
        for (name, path) in [
            ("ours-sse42", Path::Sse42),
            ("ours-vpclmul512", Path::Vpclmul512),
        ] {
            if crc32c_with(path, b"").is_some() {
                group.bench_with_input(BenchmarkId::new(name, size), data, |b, d| {
                    b.iter(|| crc32c_with(path, black_box(d)))
                });
            }
        }
        group.bench_with_input(BenchmarkId::new("crc32c", size), data, |b, d| {
            b.iter(|| crc32c::crc32c(black_box(d)))
        });
        group.bench_with_input(BenchmarkId::new("crc-fast", size), data, |b, d| {
            b.iter(|| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, black_box(d)))
        });
        group.finish();

        let mut group = c.benchmark_group("crc32");
        group.throughput(Throughput::BytesDecimal(size as u64));
        group.bench_with_input(BenchmarkId::new("ours", size), data, |b, d| {
            b.iter(|| crc32(black_box(d)))
        });
        group.bench_with_input(BenchmarkId::new("crc32fast", size), data, |b, d| {
            b.iter(|| {
                let mut h = crc32fast::Hasher::new_with_initial(seed_crc);
                h.update(black_box(d));
                h.finalize()
            })
        });
        group.bench_with_input(BenchmarkId::new("crc-fast", size), data, |b, d| {
            b.iter(|| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, black_box(d)))
        });
        group.finish();
    }
}

fn headers(c: &mut Criterion) {
    for header in [&[0x2A, 0x10, 0x02, 0x00, 0x40][..], &[0x05, 0x00, 0x02][..]] {
        let mut group = c.benchmark_group(format!("crc24-header{}", header.len()));
        group.bench_function("ours", |b| b.iter(|| crc24(black_box(header))));
        group.bench_function("bitwise", |b| b.iter(|| bitwise::crc24(black_box(header))));
        group.bench_function("crc", |b| {
            b.iter(|| CASSANDRA_CRC24.checksum(black_box(header)))
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = payloads, headers, ceilings::ceilings
}

/// The CPU model (`/proc/cpuinfo`) and the paths in use, one line each.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(name))
            .and_then(|l| l.split_once(':'))
            .map_or("?", |(_, v)| v.trim())
    };
    format!(
        "CPU: {} (family {} model {})\npaths: {}\n",
        field("model name"),
        field("cpu family"),
        field("model"),
        selected_paths()
    )
}

fn main() {
    let machine = machine();
    eprint!("{machine}");
    if let Some(dir) = std::env::var_os("CRITERION_HOME") {
        let dir = std::path::PathBuf::from(dir);
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("machine.txt"), &machine));
        if let Err(e) = written {
            eprintln!("cannot record the machine in {}: {e}", dir.display());
        }
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
