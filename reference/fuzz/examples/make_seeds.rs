//! Writes the seed corpus, corpus/seed/<target>/, deterministically from the cqlframe encoder:
//! `cargo run --example make_seeds` (from reference/fuzz). Existing seed files are replaced.

use cqlframe::body;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::envelope::{envelope_bytes, Opcode, FLAG_USE_BETA};
use cqlframe::header::FrameHeader;
use cqlframe::{Format, FrameSettings};
use cqlframe_fuzz::{judge_input, settings, settings_bits, ChunkSpec};
use cqlframe_harness::pcap::pcapng;
use cqlframe_harness::pcap::write::Peer;
use cqlframe_harness::vectors::{self, Input};
use std::path::{Path, PathBuf};

fn frames(s: FrameSettings, capacity: usize, envelopes: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    FrameEncoder::new(s, SplitPolicy::with_capacity(capacity).unwrap())
        .write_envelopes(envelopes.iter().map(Vec::as_slice), &mut out);
    out
}

fn text(n: usize) -> Vec<u8> {
    b"SELECT key, value FROM ks.table WHERE key = ? "
        .iter()
        .copied()
        .cycle()
        .take(n)
        .collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn target_dir(root: &Path, target: &str) -> PathBuf {
    let dir = root.join("corpus/seed").join(target);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `decode_*` input: settings byte (max body index 4 = 300 bytes), chunk spec, stream.
fn decode_input(
    s: FrameSettings,
    max_sel: u8,
    cap_sel: u8,
    chunking: &[u8],
    stream: &[u8],
) -> Vec<u8> {
    let mut v = vec![settings_bits(s) | max_sel << 2 | cap_sel << 5];
    v.extend_from_slice(chunking);
    v.extend_from_slice(stream);
    v
}

fn decode_seeds(root: &Path) {
    let small = vec![
        envelope_bytes(5, 0, 1, Opcode::Query, &text(30)),
        envelope_bytes(5, 0, 2, Opcode::Options, &[]),
        envelope_bytes(0x85, 0, 1, Opcode::Result, &text(120)),
    ];
    let large = vec![
        envelope_bytes(0x85, 0, 3, Opcode::Result, &text(290)),
        envelope_bytes(0x85, 0, 4, Opcode::Ready, &[]),
    ];
    let mut seeds = Vec::new();
    for bits in 0..4 {
        let s = settings(bits);
        let name = format!("{}_{}", s.format.name(), s.checksum.name());
        let packed = frames(s, 1000, &small);
        let split = frames(s, 64, &large);
        seeds.push((
            format!("{name}_packed"),
            decode_input(s, 4, 4, &ChunkSpec::encode(0, &[7, 0, 13]), &packed),
        ));
        seeds.push((
            format!("{name}_sequence"),
            decode_input(s, 4, 2, &ChunkSpec::encode(0, &[]), &split),
        ));
        let mut both = packed.clone();
        both.extend_from_slice(&split);
        seeds.push((
            format!("{name}_both_cut"),
            decode_input(
                s,
                4,
                5,
                &ChunkSpec::encode(3, &[1, 2]),
                &both[..both.len() - 5],
            ),
        ));
    }
    // The spec's worked frame: payload "hello", not an envelope (RECV-5).
    let hello = hex_bytes("05000219999a68656c6c6f74800eb6");
    seeds.push((
        "hello_frame".into(),
        decode_input(settings(0), 7, 0, &ChunkSpec::encode(0, &[]), &hello),
    ));
    // An envelope over the limit (RECV-12) with max body 64.
    seeds.push((
        "too_large".into(),
        decode_input(
            settings(0),
            3,
            0,
            &ChunkSpec::encode(0, &[5]),
            &frames(settings(0), 1000, &large),
        ),
    ));
    for target in ["decode_whole", "decode_chunked"] {
        let dir = target_dir(root, target);
        for (name, bytes) in &seeds {
            write(&dir, name, bytes);
        }
    }
}

fn hex_bytes(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn lz4_seeds(root: &Path) {
    let dir = target_dir(root, "lz4_frames");
    let contents: [(&str, Vec<u8>); 3] = [
        ("text", text(200)),
        (
            "envelope",
            envelope_bytes(0x85, 0, 7, Opcode::Result, &[0x42; 300]),
        ),
        (
            "mixed",
            (0..1500u32).map(|i| ((i % 100) * 37 % 256) as u8).collect(),
        ),
    ];
    for (i, (name, content)) in contents.iter().enumerate() {
        let mut wire = Vec::new();
        let mut enc = FrameEncoder::new(
            FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32),
            SplitPolicy::DRIVERS,
        );
        let h = enc.write_frame(content, true, &mut wire).unwrap();
        let block = &wire[8..8 + h.payload_length as usize];
        assert_eq!(FrameHeader::read(Format::Lz4, &wire), Ok(h));
        let flags = (i as u8 & 1) | 2 | if i == 2 { 4 | 3 << 3 } else { 0 };
        let declared = h.uncompressed_length;
        for (suffix, d) in [
            ("", declared),
            ("_short", declared - 1),
            ("_long", declared + 1),
        ] {
            let mut v = vec![flags];
            v.extend_from_slice(&d.to_le_bytes()[..3]);
            v.extend_from_slice(block);
            write(&dir, &format!("{name}{suffix}"), &v);
        }
    }
    let mut stored = vec![2, 0, 0, 0];
    stored.extend_from_slice(b"stored, not compressed");
    write(&dir, "stored", &stored);
}

fn handshake_seeds(root: &Path) {
    let dir = target_dir(root, "handshake");
    let startup = |version: u8, flags: u8, opts: &[(&str, &str)]| {
        let mut v = envelope_bytes(version, flags, 0, Opcode::Options, &[]);
        v.extend(envelope_bytes(
            version,
            flags,
            1,
            Opcode::Startup,
            &body::string_map(opts),
        ));
        v
    };
    let requests = |version: u8, flags: u8| {
        vec![
            envelope_bytes(version, flags, 2, Opcode::Query, &text(40)),
            envelope_bytes(version, flags, 3, Opcode::Prepare, &text(100)),
            envelope_bytes(version, flags, 4, Opcode::Register, &[]),
        ]
    };
    let responses = |version: u8, flags: u8| {
        vec![
            envelope_bytes(version | 0x80, flags, 2, Opcode::Result, &text(150)),
            envelope_bytes(version | 0x80, flags, -1, Opcode::Event, &text(20)),
        ]
    };
    let lz4c = FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32c);
    let plain = FrameSettings::default();
    let seed = |b0: u8, b1: u8, chunking: Vec<u8>, stream: Vec<u8>| {
        let mut v = vec![b0, b1];
        v.extend(chunking);
        v.extend(stream);
        v
    };
    // Server, prefix given, v5 lz4 + crc32c, READY: framed requests in 32-byte chunks.
    write(
        &dir,
        "server_prefix_lz4_crc32c",
        &seed(
            0x0E,
            0,
            ChunkSpec::encode(5, &[]),
            frames(lz4c, 64, &requests(5, 0)),
        ),
    );
    // Server, prefix given, v5 defaults.
    write(
        &dir,
        "server_prefix_plain",
        &seed(
            0x02,
            0,
            ChunkSpec::encode(0, &[50, 3]),
            frames(plain, 64, &requests(5, 0)),
        ),
    );
    // Server, v6-beta with USE_BETA.
    write(
        &dir,
        "server_prefix_v6",
        &seed(
            0x12 | 0x0C,
            0,
            ChunkSpec::encode(0, &[]),
            frames(lz4c, 1000, &requests(6, FLAG_USE_BETA)),
        ),
    );
    // Server, v4: unframed for good.
    let mut v4 = Vec::new();
    for e in requests(4, 0) {
        v4.extend(e);
    }
    write(
        &dir,
        "server_prefix_v4",
        &seed(0x22, 0, ChunkSpec::encode(2, &[3]), v4),
    );
    // Server, no prefix: the handshake is in the stream; the first chunk ends right after STARTUP.
    let opts = [("CQL_VERSION", "3.0.0"), ("COMPRESSION", "lz4")];
    let mut stream = startup(5, 0, &opts);
    let first = stream.len() as u8;
    stream.extend(frames(
        FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32),
        64,
        &requests(5, 0),
    ));
    write(
        &dir,
        "server_raw_lz4",
        &seed(0x04, 0, ChunkSpec::encode(0, &[first]), stream),
    );
    // Client, prefix given, v5 lz4 + crc32c: framed responses.
    write(
        &dir,
        "client_prefix_lz4_crc32c",
        &seed(
            0x0F,
            0,
            ChunkSpec::encode(4, &[]),
            frames(lz4c, 64, &responses(5, 0)),
        ),
    );
    // Client, prefix given, ERROR response: framed with the defaults.
    write(
        &dir,
        "client_prefix_error",
        &seed(
            0x8F,
            0,
            ChunkSpec::encode(0, &[]),
            frames(plain, 64, &responses(5, 0)),
        ),
    );
    // Client, no prefix: SUPPORTED and READY in the stream, then frames.
    let supported = body::string_multimap(&[("FRAME_CHECKSUMS", vec!["crc32", "crc32c"])]);
    let mut stream = envelope_bytes(0x85, 0, 0, Opcode::Supported, &supported);
    stream.extend(envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]));
    stream.extend(frames(plain, 64, &responses(5, 0)));
    write(
        &dir,
        "client_raw_plain",
        &seed(0x01, 0, ChunkSpec::encode(0, &[17, 100]), stream),
    );
}

/// `capture_read`: golden session captures as pcap, and as pcapng in both byte orders (two of
/// them with a SUPPORTED the judge learns the node from).
fn capture_seeds(root: &Path) {
    let dir = target_dir(root, "capture_read");
    let vectors = root.join("../../vectors/pcap");
    for name in [
        "session.v5-lz4",
        "session.v5-startup-error",
        "session.unframed-after-switch",
        "session.crc32c-asked-of-old-server",
        "session.server-takes-unlisted-checksum",
    ] {
        let pcap = std::fs::read(vectors.join(format!("{name}.pcap"))).unwrap();
        let (linktype, packets) = pcapng::packets(&pcap).unwrap();
        write(&dir, &format!("{name}.pcap"), &pcap);
        for (big, order) in [(false, "le"), (true, "be")] {
            let ng = pcapng::section(linktype, &packets, big);
            write(&dir, &format!("{name}.{order}.pcapng"), &ng);
        }
    }
}

/// `judge`: the golden sessions of up to 16 KiB (the handshakes and their violations; the
/// 420 KB conversations would slow every run) as the capture exchanges them, turn by turn, the
/// judge told nothing of the node (it learns from SUPPORTED) or told the default node; max body
/// 1 MiB.
fn judge_seeds() {
    let dir = target_dir(Path::new(env!("CARGO_MANIFEST_DIR")), "judge");
    for case in vectors::cases() {
        let Input::Session(s) = &case.input else {
            continue;
        };
        if s.client.len() + s.server.len() > 16 << 10 {
            continue;
        }
        let turns = s.turns().unwrap();
        for node in [0u8, 1] {
            let turns = turns.iter().map(|t| (t.from == Peer::Server, t.bytes));
            write(
                &dir,
                &format!("{}.node{node}", case.id),
                &judge_input(node | 7 << 2, turns),
            );
        }
    }
}

/// `server_input`: the golden sessions' client streams, through a few cases' servers, whole
/// and in small reads.
fn server_seeds(root: &Path) {
    let dir = target_dir(root, "server_input");
    let vectors = root.join("../../vectors/cases");
    for name in ["session.v5-lz4", "session.v5-crc32c", "session.v4"] {
        let stream = std::fs::read(vectors.join(format!("{name}.client.bin"))).unwrap();
        for (case, chunking) in [
            (0u8, ChunkSpec::encode(7, &[])),
            (5, ChunkSpec::encode(0, &[3, 1])),
        ] {
            let mut v = vec![case];
            v.extend_from_slice(&chunking);
            v.extend_from_slice(&stream);
            write(&dir, &format!("{name}.case{case}"), &v);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    decode_seeds(root);
    lz4_seeds(root);
    handshake_seeds(root);
    capture_seeds(root);
    server_seeds(root);
    judge_seeds();
    println!("seeds written under {}", root.join("corpus/seed").display());
}
