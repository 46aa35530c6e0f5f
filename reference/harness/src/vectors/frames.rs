//! Frame-level cases: streams for a receiver that is already framing. Each case is built for
//! every format and payload checksum where its point applies to all of them.

use super::{Case, Direction, Group, Input, DEFAULT_MAX_BODY};
use crate::lz4_by_hand::{lz4_block_frame, one_match_block};
use cqlframe::checksum::{bitwise, PayloadChecksum};
use cqlframe::encoder::{write_raw, FrameEncoder, SplitPolicy};
use cqlframe::envelope::{envelope_bytes, Opcode};
use cqlframe::format::{Format, FrameSettings, MAX_PAYLOAD};
use cqlframe::header::FrameHeader;

const ALL_SETTINGS: [FrameSettings; 4] = [
    FrameSettings::new(Format::Uncompressed, PayloadChecksum::Crc32),
    FrameSettings::new(Format::Uncompressed, PayloadChecksum::Crc32c),
    FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32),
    FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32c),
];

/// A response envelope (v5) with a body of `len` row-like bytes.
fn result(stream: i16, len: usize) -> Vec<u8> {
    let body: Vec<u8> = (0..len)
        .map(|i| b"row-data:0123456789;"[i % 20] ^ (i / 4096) as u8)
        .collect();
    envelope_bytes(0x85, 0, stream, Opcode::Result, &body)
}

/// Pseudo-random bytes (xorshift): incompressible and reproducible.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

/// The frames a conforming sender writes for `content`, as one frame.
fn frame(s: FrameSettings, content: &[u8], self_contained: bool) -> Vec<u8> {
    let mut out = Vec::new();
    FrameEncoder::new(s, SplitPolicy::DRIVERS)
        .write_frame(content, self_contained, &mut out)
        .expect("content fits");
    out
}

/// Frames carrying `pieces` of one envelope as a non-self-contained sequence.
fn sequence(s: FrameSettings, pieces: &[&[u8]]) -> Vec<u8> {
    pieces.iter().flat_map(|p| frame(s, p, false)).collect()
}

/// Cuts `bytes` at the given sizes (the rest is the last piece).
fn cut<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut pieces = Vec::new();
    let mut rest = bytes;
    for &n in sizes {
        let (a, b) = rest.split_at(n);
        pieces.push(a);
        rest = b;
    }
    if !rest.is_empty() {
        pieces.push(rest);
    }
    pieces
}

/// A frame with every part given explicitly, stored (not compressed) in the LZ4 format.
fn raw_frame(
    s: FrameSettings,
    content: &[u8],
    self_contained: bool,
    edit: impl FnOnce(&mut FrameHeader, &mut u32),
) -> Vec<u8> {
    let mut header = FrameHeader::new(
        s.format,
        content.len() as u32,
        0,
        self_contained,
        s.checksum_bit(),
    );
    let mut trailer = s.checksum.compute(content);
    edit(&mut header, &mut trailer);
    let mut out = Vec::new();
    write_raw(&header, content, trailer, &mut out);
    out
}

/// The FMT rule that defines each header field, in each format.
struct FieldRules {
    length: &'static str,
    layout: &'static str,
    self_contained: &'static str,
    checksum_bit: &'static str,
    reserved: &'static str,
}

impl FieldRules {
    fn of(format: Format) -> Self {
        match format {
            Format::Uncompressed => FieldRules {
                length: "FMT-3",
                layout: "FMT-2",
                self_contained: "FMT-4",
                checksum_bit: "FMT-5",
                reserved: "FMT-6",
            },
            Format::Lz4 => FieldRules {
                length: "FMT-7",
                layout: "FMT-11",
                self_contained: "FMT-8",
                checksum_bit: "FMT-9",
                reserved: "FMT-10",
            },
        }
    }
}

fn tag(s: FrameSettings) -> String {
    format!("{}.{}", s.format.name(), s.checksum.name())
}

/// The cases built so far, and the group the next ones belong to.
struct Cases(Vec<Case>, Group);

impl Cases {
    fn add(
        &mut self,
        s: FrameSettings,
        name: &str,
        description: &str,
        rules: &[&'static str],
        breaks: Option<&'static str>,
        bytes: Vec<u8>,
    ) {
        self.add_with(
            s,
            name,
            description,
            rules,
            breaks,
            bytes,
            DEFAULT_MAX_BODY,
            false,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn add_with(
        &mut self,
        s: FrameSettings,
        name: &str,
        description: &str,
        rules: &[&'static str],
        breaks: Option<&'static str>,
        bytes: Vec<u8>,
        max_body: u32,
        decode_only: bool,
    ) {
        self.0.push(Case {
            id: format!("{}.{name}", tag(s)),
            group: self.1,
            description: description.to_string(),
            rules: rules.to_vec(),
            breaks,
            input: Input::Frames {
                settings: s,
                direction: Direction::ServerToClient,
                max_body,
                bytes,
                decode_only,
            },
        });
    }
}

pub fn cases() -> Vec<Case> {
    let mut c = Cases(Vec::new(), Group::Boundaries);
    for s in ALL_SETTINGS {
        c.1 = Group::Boundaries;
        valid(&mut c, s);
        c.1 = Group::Negatives;
        invalid(&mut c, s);
    }
    c.1 = Group::Lz4;
    lz4_only(&mut c);
    c.1 = Group::ChecksumConfusion;
    checksum_confusion(&mut c);
    c.0
}

/// Valid streams: boundaries of every header field, packing and splitting.
fn valid(c: &mut Cases, s: FrameSettings) {
    let f = FieldRules::of(s.format);
    let ck = if s.checksum == PayloadChecksum::Crc32c {
        "CRC-3"
    } else {
        "CRC-2"
    };
    let base = [
        f.length,
        f.layout,
        f.self_contained,
        f.checksum_bit,
        "FMT-1",
        "FMT-13",
        "CRC-1",
        ck,
        "CRC-4",
        "RECV-4",
    ];
    let with = |extra: &[&'static str]| [&base[..], extra].concat();

    c.add(
        s,
        "empty-self-contained",
        "A self-contained frame with no content: zero envelopes.",
        &with(&["SEND-2"]),
        None,
        frame(s, &[], true),
    );
    let ready = envelope_bytes(0x85, 0, 0, Opcode::Ready, &[]);
    c.add(
        s,
        "one-envelope",
        "One READY response, the smallest envelope (9 bytes).",
        &with(&["SEND-2", "ENV-1"]),
        None,
        frame(s, &ready, true),
    );
    let several: Vec<u8> = (0..5)
        .flat_map(|i| result(i, 10 + 37 * i as usize))
        .collect();
    c.add(
        s,
        "several-envelopes",
        "Five envelopes packed in one self-contained frame, delivered in order.",
        &with(&["SEND-2", "SEND-7", "RECV-13"]),
        None,
        frame(s, &several, true),
    );
    for len in [131_060usize, 131_070, MAX_PAYLOAD] {
        let content = result(1, len - 9);
        c.add(
            s,
            &format!("length-{len}"),
            &format!("One self-contained frame of {len} content bytes."),
            &with(&["SEND-1", "SEND-2"]),
            None,
            frame(s, &content, true),
        );
    }
    let two = [result(1, 65_000), result(2, MAX_PAYLOAD - 65_009 - 9)].concat();
    c.add(
        s,
        "two-envelopes-exact-fit",
        "Two envelopes filling a frame to exactly 131071 bytes.",
        &with(&["SEND-1", "SEND-2"]),
        None,
        frame(s, &two, true),
    );

    c.1 = Group::Sequences;
    let big = result(3, 300_000);
    for (policy, name, description) in [
        (
            SplitPolicy::DRIVERS,
            "sequence-split-131071",
            "A 300009-byte envelope split into 131071-byte pieces, as the drivers do.",
        ),
        (
            SplitPolicy::SERVER,
            "sequence-split-131060",
            "The same envelope split into 131060-byte pieces, as Cassandra's server does.",
        ),
    ] {
        let mut wire = Vec::new();
        FrameEncoder::new(s, policy).write_envelopes([big.as_slice()], &mut wire);
        let rules = with(&["SEND-3", "SEND-7", "RECV-6"]);
        c.add(s, name, description, &rules, None, wire);
    }
    let exact = result(4, 2 * MAX_PAYLOAD - 9);
    c.add(
        s,
        "sequence-exact-fit",
        "An envelope of exactly 2 x 131071 bytes: two full frames.",
        &with(&["SEND-3", "RECV-6"]),
        None,
        sequence(s, &cut(&exact, &[MAX_PAYLOAD])),
    );
    let small = result(5, 40);
    c.add_with(s, "sequence-header-split", "An envelope whose 9-byte header spans frames of 1, 3 and 5 bytes: the sender breaks SEND-8, yet a receiver accepts it (decode only).", &with(&["SEND-4", "SEND-8", "RECV-6"]), None, sequence(s, &cut(&small, &[1, 3, 5])), DEFAULT_MAX_BODY, true);
    c.add_with(s, "sequence-of-one-byte-frames", "An envelope sent one byte per frame: the sender breaks SEND-8, yet a receiver accepts it (decode only).", &with(&["SEND-4", "SEND-8", "RECV-6"]), None, sequence(s, &cut(&small, &[1; 48])), DEFAULT_MAX_BODY, true);
    let twenty = result(7, 20_000);
    c.add_with(s, "sequence-of-short-frames", "An envelope of 20009 bytes in 500-byte frames, as a server splitting small writes might: the sender does not follow SEND-7's recommendation to fill them, a receiver accepts it (decode only; a tool listing the lengths of the 40 frames before the last in one message must keep it short enough to show).", &with(&["SEND-4", "SEND-7", "RECV-6"]), None, sequence(s, &cut(&twenty, &[500; 40])), DEFAULT_MAX_BODY, true);
    let server_one = result(6, 131_060 - 9);
    c.add(
        s,
        "sequence-single-frame",
        "A 131060-byte envelope as a one-frame sequence (the server's split threshold).",
        &with(&["SEND-4", "RECV-6"]),
        None,
        sequence(s, &[&server_one]),
    );
    let mixed = [
        frame(s, &several, true),
        sequence(s, &cut(&small, &[20])),
        frame(s, &ready, true),
    ]
    .concat();
    c.add(
        s,
        "sequence-between-self-contained",
        "Self-contained frames before and after a sequence.",
        &with(&["SEND-5", "RECV-6", "RECV-13"]),
        None,
        mixed,
    );
    c.1 = Group::Boundaries;
    let rsv_bits: u8 = if s.format == Format::Lz4 { 0xF } else { 0x1F };
    let reserved = raw_frame(s, &ready, true, |h, _| {
        h.reserved = rsv_bits;
        *h = FrameHeader { crc24: 0, ..*h };
        h.crc24 = cqlframe::checksum::crc24(&h.word().to_le_bytes()[..h.format.header_len() - 3]);
    });
    c.add_with(
        s,
        "reserved-bits-set",
        "Every reserved header bit set (CRC24 valid): a receiver ignores them. No conforming sender writes this (decode only).",
        &with(&["FMT-12", f.reserved]),
        None,
        reserved,
        DEFAULT_MAX_BODY,
        true,
    );
}

/// Streams that break a rule, one rule each.
fn invalid(c: &mut Cases, s: FrameSettings) {
    let ready = envelope_bytes(0x85, 0, 0, Opcode::Ready, &[]);
    let good = frame(s, &ready, true);
    let hlen = s.format.header_len();

    let mut bad = good.clone();
    bad[hlen - 1] ^= 0x01;
    c.add(
        s,
        "header-crc-mismatch",
        "One bit of the stored CRC24 flipped.",
        &["RECV-1", "CRC-1"],
        Some("RECV-1"),
        bad,
    );
    let mut bad = good.clone();
    bad[0] ^= 0x04;
    c.add(
        s,
        "header-length-corrupted",
        "One bit of the length flipped: the CRC24 catches it before the length is used.",
        &["RECV-1", "CRC-1"],
        Some("RECV-1"),
        bad,
    );
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 1] ^= 0x80;
    c.add(
        s,
        "payload-checksum-mismatch",
        "One bit of the trailer flipped.",
        &["RECV-2", "CRC-4"],
        Some("RECV-2"),
        bad,
    );
    let mut bad = good.clone();
    bad[hlen] ^= 0x10;
    c.add(
        s,
        "payload-corrupted",
        "One bit of the payload flipped.",
        &["RECV-2", "CRC-4", "ERR-2"],
        Some("RECV-2"),
        bad,
    );

    let body = result(1, 30);
    let whole = frame(s, &body, true);
    let payload_len = whole.len() - hlen - 4;
    for (part, at) in [
        ("header", 1),
        ("header-end", hlen - 1),
        ("payload", hlen + 1),
        ("payload-end", hlen + payload_len - 1),
        ("trailer", hlen + payload_len + 1),
        ("trailer-end", whole.len() - 1),
    ] {
        c.add(
            s,
            &format!("truncated-{part}"),
            &format!(
                "The stream ends after {at} bytes of a {}-byte frame.",
                whole.len()
            ),
            &["RECV-9"],
            Some("RECV-9"),
            whole[..at].to_vec(),
        );
    }
    let envelope = result(2, 300);
    c.add(
        s,
        "truncated-sequence",
        "The stream ends between the frames of an incomplete sequence.",
        &["RECV-9", "RECV-6"],
        Some("RECV-9"),
        sequence(s, &cut(&envelope, &[100])[..1]),
    );

    let first = frame(s, &envelope[..100], false);
    let second = frame(s, &envelope[100..], false);
    c.add(
        s,
        "truncated-frame-in-sequence",
        "The stream ends inside the second frame of a sequence: the error is at that frame, not at the sequence's first.",
        &["RECV-9", "RECV-6", "ERR-5"],
        Some("RECV-9"),
        [first, second[..hlen + 1].to_vec()].concat(),
    );
    c.add(
        s,
        "partial-envelope-header",
        "A self-contained frame ending 4 bytes into an envelope header.",
        &["RECV-5", "SEND-2"],
        Some("RECV-5"),
        frame(s, &[ready.clone(), ready[..4].to_vec()].concat(), true),
    );
    c.add(
        s,
        "partial-envelope-body",
        "A self-contained frame ending inside an envelope body.",
        &["RECV-5", "SEND-2"],
        Some("RECV-5"),
        frame(s, &envelope[..200], true),
    );
    let mut tail = envelope[150..].to_vec();
    tail.extend_from_slice(&ready);
    c.add(
        s,
        "sequence-overshoot",
        "The last frame of a sequence carries 9 bytes past its envelope.",
        &["RECV-7", "SEND-3"],
        Some("RECV-7"),
        sequence(s, &[&envelope[..150], &tail]),
    );
    let interrupted = [
        frame(s, &envelope[..150], false),
        good.clone(),
        frame(s, &envelope[150..], false),
    ]
    .concat();
    c.add(
        s,
        "sequence-interrupted",
        "A self-contained frame between two frames of a sequence.",
        &["RECV-8", "SEND-5"],
        Some("RECV-8"),
        interrupted,
    );
    c.add(
        s,
        "empty-continuation",
        "A non-self-contained frame with no content.",
        &["RECV-10", "SEND-6"],
        Some("RECV-10"),
        frame(s, &[], false),
    );

    let mut negative = ready.clone();
    negative[5] = 0x80;
    c.add(
        s,
        "envelope-length-negative",
        "An envelope whose body length has bit 31 set.",
        &["ENV-3", "ENV-1"],
        Some("ENV-3"),
        frame(s, &negative, true),
    );
    let large = result(3, 1001);
    c.add_with(s, "envelope-over-limit", "A 1001-byte envelope body to a receiver whose limit is 1000, in a sequence: refused from its header.", &["RECV-12"], Some("RECV-12"), sequence(s, &cut(&large, &[9])), 1000, false);
    // The envelope header split after 5 bytes, so its length arrives with the second frame:
    // the error is at that frame (ERR-5), and the first frame was reported before it.
    let split_length = |envelope: &[u8]| sequence(s, &cut(envelope, &[5]));
    c.add_with(s, "envelope-length-negative-in-later-frame", "A sequence whose envelope header spans two frames and whose body length, in the second, is negative.", &["ENV-3", "ERR-5", "RECV-6"], Some("ENV-3"), split_length(&[&negative[..], &[0; 16]].concat()), DEFAULT_MAX_BODY, true);
    c.add_with(s, "envelope-over-limit-in-later-frame", "A sequence whose envelope header spans two frames and whose body length, in the second, exceeds the receiver's limit of 1000.", &["RECV-12", "ERR-5", "RECV-6"], Some("RECV-12"), split_length(&large[..200]), 1000, true);

    let flipped = raw_frame(s, &ready, true, |h, trailer| {
        let wrong = !h.checksum_bit;
        *h = FrameHeader::new(
            h.format,
            h.payload_length,
            h.uncompressed_length,
            true,
            wrong,
        );
        *trailer = s.checksum.compute(&ready);
    });
    c.add(
        s,
        "checksum-bit-disagrees",
        "The checksum bit inverted (CRC24 recomputed): it disagrees with the negotiation.",
        &["RECV-3", "FMT-13", FieldRules::of(s.format).checksum_bit],
        Some("RECV-3"),
        flipped,
    );
}

/// LZ4 blocks: compressible, stored, made by hand (not as lz4_flex would), and broken ones.
fn lz4_only(c: &mut Cases) {
    for checksum in [PayloadChecksum::Crc32, PayloadChecksum::Crc32c] {
        let s = FrameSettings::new(Format::Lz4, checksum);
        let with_block = |block: &[u8], declared: u32| lz4_block_frame(s, block, declared);
        let rows = result(1, 20_000);
        c.add(
            s,
            "compressible",
            "Row-like data that LZ4 shrinks.",
            &["LZ4-1", "LZ4-4", "FMT-7"],
            None,
            frame(s, &rows, true),
        );
        let random = envelope_bytes(0x85, 0, 2, Opcode::Result, &noise(5000, 7));
        c.add(
            s,
            "incompressible-stored",
            "Random data: stored, uncompressed length 0.",
            &["LZ4-2", "LZ4-3"],
            None,
            frame(s, &random, true),
        );
        // Literal-only block: a token of 15 literals plus length bytes, no match.
        let ready = envelope_bytes(0x85, 0, 0, Opcode::Ready, &[]);
        let envelope = [ready.clone(), ready.clone(), ready.clone()].concat();
        let mut literal_only = vec![0xF0, (envelope.len() - 15) as u8];
        literal_only.extend_from_slice(&envelope);
        c.add_with(s, "foreign-literal-only-block", "A block of literals only, as some compressors emit for short input: decodes, though our encoder would store it.", &["LZ4-1", "LZ4-4"], None, with_block(&literal_only, envelope.len() as u32), DEFAULT_MAX_BODY, true);
        // Overlapping match: 10 literals (envelope header and one 'z'), then a match at offset 1
        // of 294 bytes (run-length, extended length bytes), then the 5 closing literals.
        let body_len = 300;
        let rle = one_match_block(
            &envelope_bytes(0x85, 0, 3, Opcode::Result, &vec![b'z'; body_len]),
            10,
            1,
            294,
        );
        c.add_with(
            s,
            "foreign-overlapping-match",
            "A block with a run-length match (offset 1) and extended length bytes.",
            &["LZ4-1", "LZ4-4"],
            None,
            with_block(&rle, 9 + body_len as u32),
            DEFAULT_MAX_BODY,
            true,
        );
        // LZ4's end-of-block rules on a 29-byte envelope whose body is 20 'z's: the last match
        // may start at byte 17 at the latest (12 before the end) and end at byte 24 (5 before).
        let zs = envelope_bytes(0x85, 0, 4, Opcode::Result, &[b'z'; 20]);
        c.add_with(s, "block-end-of-block-limits", "A block whose last match starts exactly 12 bytes and ends exactly 5 bytes before the end of the content: the limits of LZ4's end-of-block rules, accepted.", &["LZ4-1", "LZ4-4", "LZ4-5", "LZ4-6"], None, with_block(&one_match_block(&zs, 17, 1, 7), 29), DEFAULT_MAX_BODY, true);
        for (name, description, start, length) in [
            ("block-last-match-too-late", "A block that decodes to the declared length but whose last match starts 11 bytes before the end (LZ4 asks for 12).", 18, 4),
            ("block-last-literals-too-few", "A block that decodes to the declared length but ends with 4 literals after its last match (LZ4 asks for 5).", 17, 8),
        ] {
            let block = one_match_block(&zs, start, 1, length);
            c.add(s, name, description, &["LZ4-6", "LZ4-5", "LZ4-4"], Some("LZ4-6"), with_block(&block, 29));
        }
        c.add(
            s,
            "block-malformed",
            "A block whose match offset points before the start of the output: the sender broke LZ4-1, the receiver fails it under LZ4-4.",
            &["LZ4-4", "LZ4-1"],
            Some("LZ4-4"),
            with_block(&[0x10, b'a', 0x05, 0x00], 20),
        );
        // 9 literals (an envelope header), then a match of the 4 bytes before it, and no closing
        // literals: the output has the declared length, but the block ends where a token is due.
        let content = envelope_bytes(0x85, 0, 5, Opcode::Result, &[0; 4]);
        let content = [&content[..9], &content[5..9]].concat();
        let ends_after_match = one_match_block(&content, 9, 4, 4);
        c.add(
            s,
            "block-ends-after-match",
            "A block whose last sequence ends with a match (LZ4 ends every block with literals): it yields the declared length, but the sender broke LZ4-1 and the receiver fails it under LZ4-4.",
            &["LZ4-4", "LZ4-1"],
            Some("LZ4-4"),
            with_block(&ends_after_match, 13),
        );
        let mut short = literal_only.clone();
        short[1] -= 1;
        short.pop();
        c.add(
            s,
            "block-shorter-than-declared",
            "A valid block decompressing to one byte less than the header declares.",
            &["LZ4-4"],
            Some("LZ4-4"),
            with_block(&short, envelope.len() as u32),
        );
        c.add(
            s,
            "block-longer-than-declared",
            "A valid block decompressing to one byte more than the header declares.",
            &["LZ4-4"],
            Some("LZ4-4"),
            with_block(&literal_only, envelope.len() as u32 - 1),
        );
    }
}

/// Frames whose trailer was computed with another algorithm than the one negotiated.
fn checksum_confusion(c: &mut Cases) {
    let ready = envelope_bytes(0x85, 0, 0, Opcode::Ready, &[]);
    let unseeded = bitwise::crc32_ieee(&ready);
    for (s, wrong, what) in [
        (
            ALL_SETTINGS[0],
            cqlframe::checksum::crc32c(&ready),
            "CRC32C on a CRC32 connection",
        ),
        (
            ALL_SETTINGS[0],
            unseeded,
            "unseeded CRC-32 on a CRC32 connection (the seed forgotten)",
        ),
        (
            ALL_SETTINGS[1],
            cqlframe::checksum::crc32(&ready),
            "seeded CRC32 on a CRC32C connection",
        ),
        (
            ALL_SETTINGS[1],
            unseeded,
            "plain CRC-32 on a CRC32C connection",
        ),
    ] {
        let bytes = raw_frame(s, &ready, true, |_, trailer| *trailer = wrong);
        let name = if wrong == unseeded {
            "trailer-unseeded-crc32"
        } else {
            "trailer-other-algorithm"
        };
        c.add(
            s,
            name,
            &format!("Checksum bit right, trailer computed as {what}."),
            &["RECV-2", "CRC-2", "CRC-3"],
            Some("RECV-2"),
            bytes,
        );
    }
}
