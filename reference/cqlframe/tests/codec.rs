//! Properties of the frame codec: round trips, chunking invariance, corruption detection, and
//! no panic on any input.

use cqlframe::checksum::PayloadChecksum;
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::envelope::{envelope_bytes, Opcode};
use cqlframe::{ErrorKind, Format, FrameSettings};
use cqlframe_harness::transcript::{FrameRecord, Transcript};
use proptest::prelude::*;

const MAX_BODY: u32 = 1 << 20;

fn settings() -> impl Strategy<Value = FrameSettings> {
    (
        prop_oneof![Just(Format::Uncompressed), Just(Format::Lz4)],
        prop_oneof![Just(PayloadChecksum::Crc32), Just(PayloadChecksum::Crc32c)],
    )
        .prop_map(|(f, c)| FrameSettings::new(f, c))
}

/// Envelope bodies: mostly small, some repetitive (compressible), a few past one frame.
fn bodies() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let body = prop_oneof![
        6 => proptest::collection::vec(any::<u8>(), 0..300),
        2 => (1usize..5000, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
        1 => (131_000usize..270_000).prop_map(|n| (0..n).map(|i| (i % 251) as u8).collect()),
    ];
    proptest::collection::vec(body, 1..6)
}

fn policy() -> impl Strategy<Value = SplitPolicy> {
    prop_oneof![
        Just(SplitPolicy::DRIVERS),
        Just(SplitPolicy::SERVER),
        (9usize..300).prop_map(|c| SplitPolicy::with_capacity(c).unwrap())
    ]
}

fn encode(
    settings: FrameSettings,
    policy: SplitPolicy,
    bodies: &[Vec<u8>],
) -> (Vec<Vec<u8>>, Vec<u8>) {
    let envelopes: Vec<Vec<u8>> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| envelope_bytes(0x05, 0, i as i16, Opcode::Query, b))
        .collect();
    let mut wire = Vec::new();
    FrameEncoder::new(settings, policy)
        .write_envelopes(envelopes.iter().map(Vec::as_slice), &mut wire);
    (envelopes, wire)
}

fn chunked(wire: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut prev = 0;
    for p in points.into_iter().chain([wire.len()]) {
        out.push(wire[prev..p].to_vec());
        prev = p;
    }
    out
}

/// The bytes of a split envelope still to come after frame `f`, given those before it (0: no
/// sequence open). A sequence's first frame carries the whole envelope header (SEND-8), whose
/// body length sizes the sequence.
fn sequence_left_after(left: usize, f: &FrameRecord) -> usize {
    if f.self_contained {
        return left;
    }
    let left = match left {
        0 => 9 + u32::from_be_bytes(f.content[5..9].try_into().unwrap()) as usize,
        open => open,
    };
    left - f.content.len()
}

/// How many frames lie before `at` when a frame starts there and no sequence is open (all
/// envelopes before it whole); None for any other cut.
fn frames_before_clean_cut(whole: &Transcript, at: usize) -> Option<usize> {
    let mut sequence_left = 0;
    for (i, f) in whole.frames.iter().enumerate() {
        if f.offset == at as u64 {
            return (sequence_left == 0).then_some(i);
        }
        sequence_left = sequence_left_after(sequence_left, f);
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    // SEND-2, SEND-3, RECV-4, RECV-6, RECV-13: whatever the encoder writes decodes to the same
    // envelopes, in order.
    #[test]
    fn encoder_output_always_decodes(s in settings(), p in policy(), b in bodies()) {
        let (envelopes, wire) = encode(s, p, &b);
        let t = Transcript::decode(s, MAX_BODY, [wire.as_slice()]);
        prop_assert_eq!(t.error, None);
        let decoded: Vec<Vec<u8>> = t.envelopes.iter().map(|e| {
            let mut v = envelope_bytes(e.version, e.flags, e.stream, Opcode::Query, &e.body);
            v[4] = e.opcode;
            v
        }).collect();
        prop_assert_eq!(decoded, envelopes);
        let mut sequence_left = 0;
        for f in &t.frames {
            if !f.self_contained && sequence_left == 0 {
                // SEND-8: the first frame of a sequence carries the whole envelope header.
                prop_assert!(f.content.len() >= 9);
            }
            sequence_left = sequence_left_after(sequence_left, f);
            prop_assert!(f.content.len() <= p.capacity());
            prop_assert_eq!(f.checksum_bit, s.checksum == PayloadChecksum::Crc32c);
        }
    }

    // The same stream cut anywhere, or fed one byte at a time, gives the same transcript.
    #[test]
    fn chunking_does_not_matter(s in settings(), b in bodies(), cuts in proptest::collection::vec(any::<usize>(), 0..40)) {
        let (_, wire) = encode(s, SplitPolicy::DRIVERS, &b);
        let whole = Transcript::decode(s, MAX_BODY, [wire.as_slice()]);
        let pieces = chunked(&wire, &cuts);
        let split = Transcript::decode(s, MAX_BODY, pieces.iter().map(Vec::as_slice));
        prop_assert_eq!(&split, &whole);
        if wire.len() < 20_000 {
            let bytes = Transcript::decode(s, MAX_BODY, wire.chunks(1));
            prop_assert_eq!(&bytes, &whole);
        }
    }

    // A truncated stream is always an error (RECV-9), never a silent partial result. A cut
    // between whole envelopes, where a frame starts and no sequence is open, leaves a shorter
    // valid stream: that prefix decodes to the frames before the cut, without error.
    #[test]
    fn truncation_is_reported(
        s in settings(),
        b in bodies(),
        cut in any::<usize>(),
        at_frame_start in any::<bool>(),
    ) {
        let (_, wire) = encode(s, SplitPolicy::DRIVERS, &b);
        let whole = Transcript::decode(s, MAX_BODY, [wire.as_slice()]);
        let at = if at_frame_start {
            whole.frames[cut % whole.frames.len()].offset as usize
        } else {
            cut % wire.len()
        };
        let t = Transcript::decode(s, MAX_BODY, [&wire[..at]]);
        match frames_before_clean_cut(&whole, at) {
            Some(frames) => {
                prop_assert_eq!(&t.error, &None, "cut between envelopes at {}", at);
                prop_assert_eq!(&t.frames[..], &whole.frames[..frames]);
            }
            None => prop_assert!(t.error.is_some(), "cut at {} of {} accepted", at, wire.len()),
        }
    }

    // The vectored form's parts, in wire order, are the frame write_frame appends.
    #[test]
    fn frame_parts_are_the_written_frame(
        s in settings(),
        content in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..3000),
            (1usize..140_000).prop_map(|n| (0..n).map(|i| (i % 7) as u8).collect()),
        ],
        self_contained in any::<bool>(),
    ) {
        let mut written = Vec::new();
        let mut encoder = FrameEncoder::new(s, SplitPolicy::DRIVERS);
        let result = encoder.write_frame(&content, self_contained, &mut written);
        match encoder.frame(&content, self_contained) {
            Ok(parts) => {
                let joined: Vec<u8> = parts.io_slices().iter().flat_map(|p| p.to_vec()).collect();
                prop_assert_eq!(Some(parts.header), result.ok());
                prop_assert_eq!(parts.wire_len(), joined.len());
                prop_assert!(joined == written, "parts differ from the written frame");
            }
            Err(e) => prop_assert!(content.len() > 131_071 && result.is_err(), "{e}"),
        }
    }

    // Arbitrary bytes never panic, whatever the settings.
    #[test]
    fn arbitrary_input_never_panics(s in settings(), bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let _ = Transcript::decode(s, MAX_BODY, [bytes.as_slice()]);
    }
}

// RECV-1, RECV-2, RECV-3: every single-bit flip anywhere in a frame is detected.
#[test]
fn every_bit_flip_is_detected() {
    let body: Vec<u8> = b"SELECT * FROM ks.t WHERE k = 1 ".repeat(8);
    for format in [Format::Uncompressed, Format::Lz4] {
        for checksum in [PayloadChecksum::Crc32, PayloadChecksum::Crc32c] {
            let s = FrameSettings::new(format, checksum);
            let (_, wire) = encode(s, SplitPolicy::DRIVERS, &[body.clone(), b"x".to_vec()]);
            let good = Transcript::decode(s, MAX_BODY, [wire.as_slice()]);
            assert_eq!(good.error, None);
            for bit in 0..wire.len() * 8 {
                let mut bad = wire.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                let t = Transcript::decode(s, MAX_BODY, [bad.as_slice()]);
                let rule = t.error.as_ref().map(|e| e.rule());
                assert!(
                    matches!(rule, Some("RECV-1" | "RECV-2" | "RECV-3")),
                    "{s:?}: flip of bit {bit} gave {rule:?}"
                );
                assert!(
                    t.envelopes.is_empty(),
                    "flip of bit {bit} delivered data (ERR-2)"
                );
            }
        }
    }
}

// RECV-8: a self-contained frame inside a sequence; RECV-7: an overshooting sequence.
#[test]
fn sequence_violations() {
    let s = FrameSettings::default();
    let body = vec![7u8; 40];
    let envelope = envelope_bytes(0x05, 0, 1, Opcode::Query, &body);
    let mut enc = FrameEncoder::new(s, SplitPolicy::DRIVERS);
    let mut wire = Vec::new();
    enc.write_frame(&envelope[..20], false, &mut wire).unwrap();
    enc.write_frame(&envelope, true, &mut wire).unwrap();
    let t = Transcript::decode(s, MAX_BODY, [wire.as_slice()]);
    assert_eq!(t.error.unwrap().kind, ErrorKind::SequenceInterrupted);

    let mut wire = Vec::new();
    enc.write_frame(&envelope[..20], false, &mut wire).unwrap();
    let mut tail = envelope[20..].to_vec();
    tail.push(0);
    enc.write_frame(&tail, false, &mut wire).unwrap();
    let t = Transcript::decode(s, MAX_BODY, [wire.as_slice()]);
    assert_eq!(
        t.error.unwrap().kind,
        ErrorKind::SequenceOvershoot { excess: 1 }
    );
    assert!(t.envelopes.is_empty());
}

// RECV-12: an envelope over the limit is refused from its header, before its body arrives.
#[test]
fn oversized_envelope_refused_from_header() {
    let s = FrameSettings::default();
    let envelope = envelope_bytes(0x05, 0, 1, Opcode::Query, &[0u8; 100]);
    let mut wire = Vec::new();
    FrameEncoder::new(s, SplitPolicy::DRIVERS)
        .write_frame(&envelope[..9], false, &mut wire)
        .unwrap();
    let t = Transcript::decode(s, 99, [wire.as_slice()]);
    assert_eq!(
        t.error.unwrap().kind,
        ErrorKind::EnvelopeTooLarge {
            length: 100,
            max: 99
        }
    );
}

// SEND-8: the encoder refuses split sizes that would cut the first envelope header.
#[test]
fn split_capacity_keeps_header_whole() {
    assert!(SplitPolicy::with_capacity(8).is_err());
    assert!(SplitPolicy::with_capacity(9).is_ok());
    assert!(SplitPolicy::with_capacity(131_072).is_err());
}

// RECV-11: after a framing error the decoder delivers nothing more, even for valid frames.
#[test]
fn nothing_after_an_error() {
    use cqlframe::decoder::{Decoder, Event};
    let s = FrameSettings::default();
    let (_, good) = encode(s, SplitPolicy::DRIVERS, &[b"a".to_vec()]);
    let mut bad = good.clone();
    bad[0] ^= 1;
    let mut decoder = Decoder::new(s, MAX_BODY);
    let mut delivered = 0;
    let mut count = |e: Event<'_>| {
        if let Event::Envelope(_) = e {
            delivered += 1;
        }
        Ok(())
    };
    assert_eq!(
        decoder.decode(&bad, &mut count).unwrap_err().rule(),
        "RECV-1"
    );
    let again = decoder.decode(&good, &mut count).unwrap_err();
    assert_eq!((again.rule(), delivered), ("RECV-11", 0));
}

// ERR-2, RECV-5: a self-contained frame that ends inside an envelope delivers none of its
// envelopes, not even the whole ones before the partial one.
#[test]
fn bad_frame_delivers_nothing() {
    let s = FrameSettings::default();
    let whole = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
    let content = [whole.clone(), whole.clone(), whole[..4].to_vec()].concat();
    let mut wire = Vec::new();
    FrameEncoder::new(s, SplitPolicy::DRIVERS)
        .write_frame(&content, true, &mut wire)
        .unwrap();
    let t = Transcript::decode(s, MAX_BODY, [wire.as_slice()]);
    assert_eq!(t.error.map(|e| e.rule()), Some("RECV-5"));
    assert!(t.envelopes.is_empty());
}

/// The rule a decoder names for `wire`, fed whole and one byte at a time (the same either way).
fn first_rule(s: FrameSettings, max_body: u32, wire: &[u8]) -> &'static str {
    let whole = Transcript::decode(s, max_body, [wire]);
    let bytes = Transcript::decode(s, max_body, wire.chunks(1));
    let rule = |t: &Transcript| t.error.as_ref().map_or("none", |e| e.rule());
    assert_eq!(rule(&whole), rule(&bytes));
    assert!(whole.envelopes.is_empty());
    rule(&whole)
}

/// A frame with `content` and `self_contained`, written by hand with these settings.
fn frame(s: FrameSettings, content: &[u8], self_contained: bool) -> Vec<u8> {
    use cqlframe::encoder::write_raw;
    use cqlframe::header::FrameHeader;
    let header = FrameHeader::new(
        s.format,
        content.len() as u32,
        0,
        self_contained,
        s.checksum == PayloadChecksum::Crc32c,
    );
    let mut wire = Vec::new();
    write_raw(&header, content, s.checksum.compute(content), &mut wire);
    wire
}

// RECV-14: the checksum bit is checked as soon as the header has arrived, before the receiver
// waits for the payload, so a frame whose bit disagrees fails RECV-3 even when the stream ends
// inside it (not RECV-9); a frame whose bit agrees, cut the same way, is RECV-9.
#[test]
fn the_checksum_bit_is_checked_before_the_payload_is_awaited() {
    let envelope = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[0u8; 30]);
    for format in [Format::Uncompressed, Format::Lz4] {
        let crc32c = FrameSettings::new(format, PayloadChecksum::Crc32c);
        let crc32 = FrameSettings::new(format, PayloadChecksum::Crc32);
        let wire = frame(crc32c, &envelope, true);
        let cut = &wire[..format.header_len() + 5];
        assert_eq!(first_rule(crc32, MAX_BODY, cut), "RECV-3", "{format:?}");
        assert_eq!(first_rule(crc32c, MAX_BODY, cut), "RECV-9", "{format:?}");
    }
}

// RECV-14: the payload checksum is verified before the block is decoded: a malformed block under
// a wrong trailer is RECV-2, under its own trailer LZ4-4.
#[test]
fn the_payload_checksum_comes_before_the_block() {
    use cqlframe::encoder::write_raw;
    use cqlframe::header::FrameHeader;
    let s = FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32);
    let block = [0xF0u8, 0xFF, 0xFF, 1, 2];
    let header = FrameHeader::new(Format::Lz4, block.len() as u32, 40, true, false);
    let right = s.checksum.compute(&block);
    for (trailer, want) in [(right ^ 1, "RECV-2"), (right, "LZ4-4")] {
        let mut wire = Vec::new();
        write_raw(&header, &block, trailer, &mut wire);
        assert_eq!(first_rule(s, MAX_BODY, &wire), want);
    }
}

// RECV-14: of an envelope's checks, a negative body length (ENV-3) comes first, then one above
// the maximum (RECV-12), and only then whether the envelope fits its self-contained frame
// (RECV-5) or its sequence (RECV-7): each header below also runs past its frame, and each
// sequence frame also carries bytes past the envelope it announces.
#[test]
fn envelope_checks_come_in_order() {
    let s = FrameSettings::default();
    let with_length = |length: i32| {
        let mut e = envelope_bytes(0x85, 0, 1, Opcode::Result, &[7u8; 3]);
        e[5..9].copy_from_slice(&length.to_be_bytes());
        e
    };
    for (length, want) in [(-2, "ENV-3"), (1000, "RECV-12"), (10, "RECV-5")] {
        let e = with_length(length);
        assert_eq!(first_rule(s, 99, &frame(s, &e, true)), want, "{length}");
    }
    for (length, want) in [(-2, "ENV-3"), (1000, "RECV-12"), (1, "RECV-7")] {
        let e = with_length(length);
        assert_eq!(first_rule(s, 99, &frame(s, &e, false)), want, "{length}");
    }
}

// LIFE-8: an LZ4 frame where uncompressed ones are due fails its header CRC24 (RECV-1) and is
// told for what it is, in any chunking: a failing header is held back until the longest
// header's bytes are in. Cut after six bytes, it is RECV-1 all the same, without the telling.
#[test]
fn a_frame_of_the_other_format_is_told_in_any_chunking() {
    let envelope = envelope_bytes(5, 0, 2, Opcode::Options, &[]);
    let lz4 = frame(
        FrameSettings::new(Format::Lz4, PayloadChecksum::Crc32),
        &envelope,
        true,
    );
    let plain = FrameSettings::default();
    let other = |t: &Transcript| match t.error.as_ref().map(|e| &e.kind) {
        Some(ErrorKind::HeaderCrcMismatch { other_format, .. }) => *other_format,
        kind => panic!("expected RECV-1, got {kind:?}"),
    };
    for size in 1..=lz4.len() {
        let t = Transcript::decode(plain, MAX_BODY, lz4.chunks(size));
        assert!(other(&t), "in chunks of {size}");
    }
    for cut in [6, 7] {
        let t = Transcript::decode(plain, MAX_BODY, lz4[..cut].chunks(1));
        assert!(!other(&t), "cut at {cut}");
    }
}
