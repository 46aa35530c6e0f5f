//! Memory of the streaming decoder: decodes a long stream of frames made on the fly, fed in
//! fixed-size reads, and prints one JSON line. `run.sh` runs it under `/usr/bin/time -v` and
//! reports the peak resident set.
//!
//! ```text
//! stream_rss [--bytes N] [--chunk N] [--format uncompressed|lz4] [--checksum crc32|crc32c]
//!            [--generate-only]
//! ```
//!
//! The stream repeats one cycle of frames: envelopes of 64, 2037, 16373 and 131071 bytes (the
//! last splits into a two-frame sequence) and one of 1 MiB (a nine-frame sequence), all
//! encoded once up front. Reads are cut from the endless repetition of that cycle, so read
//! boundaries fall at every position in the frames. `--generate-only` cuts the reads without
//! decoding them: the baseline the decoder's own memory is measured against.

use std::hint::black_box;
use std::time::Instant;

use cqlframe::checksum::PayloadChecksum;
use cqlframe::decoder::{Decoder, Event};
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::envelope::{envelope_bytes, Opcode};
use cqlframe::format::parse_checksum;
use cqlframe::{Format, FrameSettings};

fn body(len: usize, seed: u64) -> Vec<u8> {
    // Row-like bytes: a repeating record with a changing counter (compresses about 3x).
    let mut out = Vec::with_capacity(len + 64);
    let mut state = seed;
    while out.len() < len {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let user = 100_000 + (state >> 40) % 5000;
        out.extend_from_slice(&4u32.to_be_bytes());
        out.extend_from_slice(&(user as u32).to_be_bytes());
        let email = format!("user{user:06}@example.com");
        out.extend_from_slice(&(email.len() as u32).to_be_bytes());
        out.extend_from_slice(email.as_bytes());
    }
    out.truncate(len);
    out
}

fn main() {
    let mut bytes: u64 = 1 << 30;
    let mut chunk = 64 * 1024;
    let mut format = Format::Lz4;
    let mut checksum = PayloadChecksum::Crc32c;
    let mut generate_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().expect("value");
        match a.as_str() {
            "--bytes" => bytes = val().parse().expect("--bytes N"),
            "--chunk" => chunk = val().parse().expect("--chunk N"),
            "--format" => {
                format = match val().as_str() {
                    "lz4" => Format::Lz4,
                    "uncompressed" => Format::Uncompressed,
                    f => panic!("unknown format {f}"),
                }
            }
            "--checksum" => checksum = parse_checksum(&val()).expect("crc32|crc32c"),
            "--generate-only" => generate_only = true,
            "--bench" => {} // passed by `cargo bench`
            other => panic!("unknown argument {other}"),
        }
    }
    let settings = FrameSettings::new(format, checksum);
    let envelopes: Vec<Vec<u8>> = [64usize, 2037, 16373, 131_071, 1 << 20]
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            envelope_bytes(0x85, 0, i as i16, Opcode::Result, &body(size - 9, i as u64))
        })
        .collect();
    let mut cycle = Vec::new();
    FrameEncoder::new(settings, SplitPolicy::DRIVERS)
        .write_envelopes(envelopes.iter().map(Vec::as_slice), &mut cycle);
    let per_cycle = envelopes.len() as u64;

    let mut decoder = Decoder::new(settings, 16 << 20);
    let mut read = vec![0u8; chunk];
    let mut at = 0usize; // position in the cycle
    let mut fed: u64 = 0;
    let mut delivered: u64 = 0;
    let mut body_bytes: u64 = 0;
    let start = Instant::now();
    // Whole cycles only, so the stream ends on a frame boundary.
    let total = bytes.div_ceil(cycle.len() as u64) * cycle.len() as u64;
    while fed < total {
        let n = (chunk as u64).min(total - fed) as usize;
        let mut filled = 0;
        while filled < n {
            let take = (n - filled).min(cycle.len() - at);
            read[filled..filled + take].copy_from_slice(&cycle[at..at + take]);
            filled += take;
            at = (at + take) % cycle.len();
        }
        fed += n as u64;
        if generate_only {
            black_box(&read[..n]);
            continue;
        }
        decoder
            .decode(&read[..n], |e| {
                if let Event::Envelope(env) = e {
                    delivered += 1;
                    body_bytes += env.body.len() as u64;
                }
                Ok(())
            })
            .expect("stream decodes");
    }
    if !generate_only {
        decoder.finish().expect("stream ends on a frame boundary");
        assert_eq!(delivered, total / cycle.len() as u64 * per_cycle);
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "format": format.name(),
            "checksum": checksum.name(),
            "bytes": fed,
            "chunk": chunk,
            "cycle_bytes": cycle.len(),
            "envelopes": delivered,
            "body_bytes": body_bytes,
            "seconds": secs,
            "wire_gb_per_s": fed as f64 / secs / 1e9,
            "generate_only": generate_only,
        })
    );
}
