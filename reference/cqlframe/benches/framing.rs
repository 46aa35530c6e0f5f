//! Frame encode and decode, ours next to the Rust `cassandra-protocol` crate, plus the raw
//! baselines the targets are stated against (CRC32C / CRC32 of the same payload, `lz4_flex`
//! decompressing the same block) and a check of the glibc `rep movsb` 4 KiB aliasing trap.
//!
//! Inputs come from `gen_data.py` (`reference/cqlframe/benches/run.sh` makes them): the directory in
//! `CQLFRAME_BENCH_DATA`, default `<workspace>/build/bench/data`. Every decode benchmark decodes
//! the whole `stream-*.bin` (the same frame repeated, about 256 KiB) per iteration; criterion's
//! throughput is content bytes, and `report.py` divides by the manifest's frame count.
//!
//! Groups and ids (criterion/<group>/<function>/<size>):
//! - `decode/ours-FMT-CK`: `Decoder` (frames, checksums, envelopes), whole stream in one call;
//!   `decode/ours-chunked-FMT-CK` the same fed in 64 KiB reads; `decode/ours-frames-FMT-CK`
//!   the frame layer only (`FrameDecoder`, no envelope assembly).
//! - `decode/cassandra-protocol-FMT-crc32`: its `UncompressedFrameDecoder` / `Lz4FrameDecoder`,
//!   one frame per `consume` call (it re-splits its buffer after each frame, so a large read
//!   costs O(n²)); envelopes come out owned and parsed.
//! - `encode/ours-FMT-CK`: `FrameEncoder::write_frame` of the one envelope into a reused buffer;
//!   `encode/ours-parts-FMT-CK`: `FrameEncoder::frame`, the frame as header, payload and trailer
//!   for a vectored write (no copy of the payload, as the Java driver's encoder).
//! - `encode/cassandra-protocol-FMT-crc32`: `add_envelope` + `finalize_self_contained`.
//! - `raw/crc32c`, `raw/crc32`: our checksum of the frame payload alone.
//! - `raw/lz4flex-dN`: `lz4_flex::block::decompress_into` of the frame's block, output placed N
//!   bytes past the input modulo 4 KiB (`d16` is inside the aliasing window).
//! - `raw/memcpy-dN`: a plain copy of the payload with the same placements.
//! - `raw/crc32c-stream`, `raw/lz4flex-stream`: the CRC32C of every payload / decompression of
//!   every block of the decode benchmark's stream, in place: the decoder's own work without it.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use cassandra_protocol::compression::Compression;
use cassandra_protocol::frame::frame_decoder::{
    FrameDecoder as CpDecoder, Lz4FrameDecoder, UncompressedFrameDecoder,
};
use cassandra_protocol::frame::frame_encoder::{
    FrameEncoder as CpEncoder, Lz4FrameEncoder, UncompressedFrameEncoder,
};
use cqlframe::checksum::{crc32, crc32c, PayloadChecksum};
use cqlframe::decoder::{Decoder, Event};
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::frame_decoder::FrameDecoder;
use cqlframe::{Format, FrameSettings};
use criterion::measurement::WallTime;
use criterion::{criterion_group, BatchSize, BenchmarkGroup, BenchmarkId, Criterion, Throughput};

const CHUNK: usize = 64 * 1024;
const PAGE: usize = 4096;

struct Case {
    format: Format,
    checksum: PayloadChecksum,
    size: usize,
    envelope: Vec<u8>,
    frame: Vec<u8>,
    stream: Vec<u8>,
    frames: usize,
}

impl Case {
    fn label(&self) -> String {
        format!("{}-{}", self.format.name(), self.checksum.name())
    }

    fn settings(&self) -> FrameSettings {
        FrameSettings::new(self.format, self.checksum)
    }

    /// The LZ4 block of the frame, if it is compressed (not stored raw).
    fn lz4_block(&self) -> Option<&[u8]> {
        if self.format != Format::Lz4 {
            return None;
        }
        let word = u64::from_le_bytes(self.frame[..8].try_into().expect("8 bytes"));
        let compressed = (word & 0x1_FFFF) as usize;
        let uncompressed = (word >> 17 & 0x1_FFFF) as usize;
        (uncompressed != 0).then(|| &self.frame[8..8 + compressed])
    }
}

fn data_dir() -> PathBuf {
    std::env::var_os("CQLFRAME_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/bench/data"))
}

fn load_cases() -> Vec<Case> {
    let dir = data_dir();
    let read = |name: &str| {
        std::fs::read(dir.join(name)).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (generate the inputs with reference/cqlframe/benches/run.sh)",
                dir.join(name).display()
            )
        })
    };
    let manifest: serde_json::Value =
        serde_json::from_slice(&read("manifest.json")).expect("manifest.json");
    manifest["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().expect(k).to_owned();
            let n = |k: &str| c[k].as_u64().expect(k) as usize;
            let format = match s("format").as_str() {
                "lz4" => Format::Lz4,
                _ => Format::Uncompressed,
            };
            let checksum = cqlframe::format::parse_checksum(&s("checksum")).expect("checksum");
            Case {
                format,
                checksum,
                size: n("size"),
                envelope: read(&s("envelope_file")),
                frame: read(&s("frame_file")),
                stream: read(&s("stream_file")),
                frames: n("frames"),
            }
        })
        .collect()
}

/// Bytes copied into a buffer at a chosen address modulo 4 KiB.
struct Placed {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl Placed {
    fn new(bytes: &[u8], page_offset: usize) -> Self {
        let mut p = Placed::zeroed(bytes.len(), page_offset);
        p.get_mut().copy_from_slice(bytes);
        p
    }

    fn zeroed(len: usize, page_offset: usize) -> Self {
        let buf = vec![0u8; len + 2 * PAGE];
        let base = buf.as_ptr() as usize;
        let start = (page_offset % PAGE + PAGE - base % PAGE) % PAGE;
        Placed { buf, start, len }
    }

    fn get(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    fn get_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

fn decode(c: &mut Criterion) {
    let cases = load_cases();
    let mut group = c.benchmark_group("decode");
    for case in &cases {
        let label = case.label();
        let content = (case.size * case.frames) as u64;
        group.throughput(Throughput::BytesDecimal(content));
        // The stream starts on a page boundary (the frame layout then fixes every other address).
        let input = Placed::new(&case.stream, 0);
        let input = input.get();

        let mut decoder = Decoder::new(case.settings(), 16 << 20);
        let mut envelopes = 0usize;
        decoder
            .decode(input, |e| {
                if let Event::Envelope(env) = e {
                    assert_eq!(env.body.len() + 9, case.size);
                    envelopes += 1;
                }
                Ok(())
            })
            .expect("stream decodes");
        assert_eq!(envelopes, case.frames);

        group.bench_function(BenchmarkId::new(format!("ours-{label}"), case.size), |b| {
            b.iter(|| {
                let mut bytes = 0usize;
                decoder
                    .decode(black_box(input), |e| {
                        if let Event::Envelope(env) = e {
                            bytes += env.body.len();
                        }
                        Ok(())
                    })
                    .expect("decodes");
                bytes
            })
        });
        if case.checksum == PayloadChecksum::Crc32c {
            group.bench_function(
                BenchmarkId::new(format!("ours-chunked-{label}"), case.size),
                |b| {
                    b.iter(|| {
                        let mut bytes = 0usize;
                        for chunk in black_box(input).chunks(CHUNK) {
                            decoder
                                .decode(chunk, |e| {
                                    if let Event::Envelope(env) = e {
                                        bytes += env.body.len();
                                    }
                                    Ok(())
                                })
                                .expect("decodes");
                        }
                        bytes
                    })
                },
            );
            let mut frames = FrameDecoder::new(case.settings());
            group.bench_function(
                BenchmarkId::new(format!("ours-frames-{label}"), case.size),
                |b| {
                    b.iter(|| {
                        let mut bytes = 0usize;
                        frames
                            .decode(black_box(input), |f| {
                                bytes += f.content.len();
                                Ok(())
                            })
                            .expect("decodes");
                        bytes
                    })
                },
            );
        }
        if case.checksum == PayloadChecksum::Crc32 {
            // One frame per call: the crate splits its buffer after every frame.
            group.throughput(Throughput::BytesDecimal(case.size as u64));
            let id = BenchmarkId::new(format!("cassandra-protocol-{label}"), case.size);
            match case.format {
                Format::Uncompressed => {
                    bench_cp_decode(&mut group, id, UncompressedFrameDecoder::default(), case)
                }
                Format::Lz4 => bench_cp_decode(&mut group, id, Lz4FrameDecoder::default(), case),
            }
        }
    }
    group.finish();
}

/// `cassandra-protocol` decoding the case's frame, after checking it gives the one envelope.
/// Generic (not `dyn`) so the peer's decoder is called as directly as ours.
fn bench_cp_decode<D: CpDecoder>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    mut d: D,
    case: &Case,
) {
    let compression = match case.format {
        Format::Lz4 => Compression::Lz4,
        Format::Uncompressed => Compression::None,
    };
    let envs = d
        .consume(&mut case.frame.clone(), compression)
        .expect("cassandra-protocol decodes the frame");
    assert_eq!(envs.len(), 1);
    assert_eq!(envs[0].body.len() + 9, case.size);
    group.bench_function(id, |b| {
        b.iter_batched(
            || case.frame.clone(),
            |mut data| d.consume(&mut data, compression).expect("ok").len(),
            BatchSize::SmallInput,
        )
    });
}

fn encode(c: &mut Criterion) {
    let cases = load_cases();
    let mut group = c.benchmark_group("encode");
    for case in &cases {
        let label = case.label();
        group.throughput(Throughput::BytesDecimal(case.size as u64));
        let mut encoder = FrameEncoder::new(case.settings(), SplitPolicy::DRIVERS);
        let mut out = Vec::with_capacity(case.frame.len() + 1024);
        encoder
            .write_frame(&case.envelope, true, &mut out)
            .expect("fits");
        assert_eq!(
            out, case.frame,
            "write_frame gives the same frame as cqlframe encode"
        );
        group.bench_function(BenchmarkId::new(format!("ours-{label}"), case.size), |b| {
            b.iter(|| {
                out.clear();
                encoder
                    .write_frame(black_box(&case.envelope), true, &mut out)
                    .expect("fits");
                out.len()
            })
        });
        let parts = encoder.frame(&case.envelope, true).expect("fits");
        let joined: Vec<u8> = parts.io_slices().iter().flat_map(|s| s.to_vec()).collect();
        assert_eq!(
            joined, case.frame,
            "frame gives the parts of the same frame"
        );
        let id = BenchmarkId::new(format!("ours-parts-{label}"), case.size);
        group.bench_function(id, |b| {
            b.iter(|| {
                encoder
                    .frame(black_box(&case.envelope), true)
                    .expect("fits")
                    .wire_len()
            })
        });
        if case.checksum == PayloadChecksum::Crc32 {
            let id = BenchmarkId::new(format!("cassandra-protocol-{label}"), case.size);
            let mut e: Box<dyn CpEncoder> = match case.format {
                Format::Uncompressed => Box::<UncompressedFrameEncoder>::default(),
                Format::Lz4 => Box::<Lz4FrameEncoder>::default(),
            };
            group.bench_function(id, |b| {
                b.iter_batched(
                    || case.envelope.clone(),
                    |env| {
                        e.reset();
                        e.add_envelope(env);
                        e.finalize_self_contained().len()
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

fn raw(c: &mut Criterion) {
    let cases = load_cases();
    let mut group = c.benchmark_group("raw");
    let mut placements = Vec::new();
    for case in &cases {
        if case.format == Format::Uncompressed && case.checksum == PayloadChecksum::Crc32c {
            let payload = &case.envelope[..];
            group.throughput(Throughput::BytesDecimal(case.size as u64));
            group.bench_function(BenchmarkId::new("crc32c", case.size), |b| {
                b.iter(|| crc32c(black_box(payload)))
            });
            group.bench_function(BenchmarkId::new("crc32", case.size), |b| {
                b.iter(|| crc32(black_box(payload)))
            });
            if case.size >= 2037 {
                for delta in [16usize, 2048] {
                    let src = Placed::new(payload, 0);
                    let mut dst = Placed::zeroed(payload.len(), delta);
                    group.bench_function(
                        BenchmarkId::new(format!("memcpy-d{delta}"), case.size),
                        |b| {
                            b.iter(|| {
                                dst.get_mut().copy_from_slice(black_box(src.get()));
                                dst.get()[0]
                            })
                        },
                    );
                }
            }
        }
        if case.checksum == PayloadChecksum::Crc32c {
            // The same work over the decode benchmark's stream, at the stream's addresses: the
            // baseline without cache-residency differences (the stream is about 256 KiB).
            let input = Placed::new(&case.stream, 0);
            let hlen = case.format.header_len();
            let payload_len = case.frame.len() - hlen - 4;
            group.throughput(Throughput::BytesDecimal((case.size * case.frames) as u64));
            if case.format == Format::Uncompressed {
                group.bench_function(BenchmarkId::new("crc32c-stream", case.size), |b| {
                    b.iter(|| {
                        let mut x = 0;
                        for frame in black_box(input.get()).chunks_exact(case.frame.len()) {
                            x ^= crc32c(&frame[hlen..hlen + payload_len]);
                        }
                        x
                    })
                });
            } else if case.lz4_block().is_some() {
                let mut dst = Placed::zeroed(case.size, 2048);
                group.bench_function(BenchmarkId::new("lz4flex-stream", case.size), |b| {
                    b.iter(|| {
                        let mut n = 0;
                        for frame in black_box(input.get()).chunks_exact(case.frame.len()) {
                            n += lz4_flex::block::decompress_into(
                                &frame[hlen..hlen + payload_len],
                                dst.get_mut(),
                            )
                            .expect("valid");
                        }
                        n
                    })
                });
            }
            if let Some(block) = case.lz4_block() {
                group.throughput(Throughput::BytesDecimal(case.size as u64));
                for delta in [0usize, 16, 2048] {
                    let src = Placed::new(block, 0);
                    let mut dst = Placed::zeroed(case.size, delta);
                    let n = lz4_flex::block::decompress_into(src.get(), dst.get_mut())
                        .expect("valid block");
                    assert_eq!(n, case.size);
                    assert_eq!(dst.get(), &case.envelope[..]);
                    group.bench_function(
                        BenchmarkId::new(format!("lz4flex-d{delta}"), case.size),
                        |b| {
                            b.iter(|| {
                                lz4_flex::block::decompress_into(
                                    black_box(src.get()),
                                    dst.get_mut(),
                                )
                                .expect("valid")
                            })
                        },
                    );
                }
                // Where our decoder's scratch (the decompression output) lands relative to the
                // block it decompresses, for the report.
                let input = Placed::new(&case.stream, 0);
                let mut decoder = FrameDecoder::new(case.settings());
                let mut deltas = Vec::new();
                decoder
                    .decode(input.get(), |f| {
                        let d =
                            (f.content.as_ptr() as usize).wrapping_sub(f.payload.as_ptr() as usize);
                        deltas.push(d % PAGE);
                        Ok(())
                    })
                    .expect("decodes");
                let trapped = deltas.iter().filter(|&&d| (1..32).contains(&d)).count();
                placements.push(serde_json::json!({
                    "case": format!("{}-{}", case.label(), case.size),
                    "frames": deltas.len(),
                    // Frames whose decompression output starts 1-31 bytes past the block
                    // modulo 4 KiB (the window of the rep movsb aliasing slowdown).
                    "frames_in_aliasing_window": trapped,
                    "scratch_minus_payload_mod_4096_first": &deltas[..deltas.len().min(8)],
                }));
            }
        }
    }
    group.finish();
    let out = data_dir().join("../rust-placement.json");
    let _ = std::fs::write(out, serde_json::to_vec_pretty(&placements).expect("json"));
}

fn criterion() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(400))
        .measurement_time(Duration::from_millis(1200))
        .configure_from_args()
}

criterion_group! {
    name = benches;
    config = criterion();
    targets = decode, encode, raw
}

fn main() {
    // The checksum paths in use beside the figures: printed, and kept for report.py.
    let paths = cqlframe::checksum::selected_paths();
    eprintln!("checksum paths: {paths}");
    if let Some(dir) = std::env::var_os("CRITERION_HOME") {
        let dir = std::path::PathBuf::from(dir);
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("checksum-paths.txt"), format!("{paths}\n")));
        if let Err(e) = written {
            eprintln!("cannot record the checksum paths in {}: {e}", dir.display());
        }
    }
    benches();
    criterion().final_summary();
}
