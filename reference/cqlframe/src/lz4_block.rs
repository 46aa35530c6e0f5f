//! Raw LZ4 blocks as a receiver checks them, in one pass: decoded into exactly the declared
//! length (LZ4-4) and held to LZ4's end-of-block rules (LZ4-6), which Apache Cassandra's decoder
//! enforces and lz4_flex's does not. Checking the rules while decoding costs next to nothing (a
//! whole frame decodes in fewer instructions than lz4_flex takes for its block); a second walk
//! over the sequences after lz4_flex, as before, made LZ4 decode 1.6-2x slower.

use crate::error::{ErrorKind, Lz4Fault};

/// LZ4's end-of-block rules (`lz4_Block_format.md`, "End of block conditions"): the last match
/// starts at least `MFLIMIT` bytes before the end of the output and ends at least
/// `LAST_LITERALS` bytes before it.
const MFLIMIT: usize = 12;
const LAST_LITERALS: usize = 5;

/// Copies go in chunks of this many bytes where input and output have room for the last chunk
/// to run past the bytes it copies (bytes that later sequences overwrite).
const CHUNK: usize = 16;
/// The longest match a token holds without length bytes (14 + LZ4's minimum of 4).
const SHORT_MATCH: usize = 18;
/// Input after a token that holds its literals' length: 16 bytes hold up to 14 literals (copied
/// as 16) and the 2-byte offset after them.
const FAST_INPUT: usize = CHUNK;
/// Matches up to this long that lie before the output window are copied as one move of this
/// many bytes (those up to [`SHORT_MATCH`] long, of that many).
const LONG_MATCH: usize = 32;
/// Output such a sequence may touch: 14 literals and a match copied as [`LONG_MATCH`] bytes.
const FAST_OUTPUT: usize = 14 + LONG_MATCH;

/// Decompresses one raw LZ4 block into exactly `declared` bytes, never writing past them
/// (LZ4-4), and checks where its last match lies (LZ4-6).
/// Kept out of line, like lz4_flex's decoder before it, whose copy loop measured much slower
/// inlined into the frame loop; for this one the two measured alike within the VM's noise.
#[inline(never)]
pub(crate) fn decompress(block: &[u8], declared: u32, out: &mut Vec<u8>) -> Result<(), ErrorKind> {
    out.resize(declared as usize, 0);
    decode(block, out)
}

/// Decodes `block` into all of `out`. The checks, in the order the Python and JavaScript Kaitai
/// runners and the dissector make them too: a length that runs past the block, literals past the
/// block, output past `out`, then the match offset and length; at the end, the decoded length
/// and where the last match lies.
#[inline(always)]
fn decode(block: &[u8], out: &mut [u8]) -> Result<(), ErrorKind> {
    let malformed = |reason| Err(ErrorKind::Lz4Malformed { reason });
    let declared = out.len() as u32;
    let too_long = || {
        Err(ErrorKind::Lz4LengthMismatch {
            declared,
            actual: None,
        })
    };
    let (mut ip, mut op) = (0usize, 0usize);
    // Where the last match starts; it ends where the last sequence's literals begin. No match
    // ends at 0 (an offset reaches back at least 1 byte), so a match end of 0 means no match.
    let mut last_match_start = 0;
    // Whether the last match so far came from the fast loop, which does not keep where its
    // matches start (one register fewer there measured 2-15% faster): each starts 32 bytes or
    // more before the end of the output, where MFLIMIT allows it, so the start is needed only
    // when the end breaks LAST_LITERALS, and is then found again.
    let mut last_match_fast = false;
    if block.is_empty() {
        return malformed(Lz4Fault::EmptyBlock);
    }
    let match_end = loop {
        // The fast loop: sequences far from both ends of block and output, with at most 14
        // literals (their length in the token) and a match that starts 18 bytes or more before
        // the output window, which makes its offset valid. The literals go as one 16-byte copy
        // from a fixed-size window of the input that holds the offset too, into a fixed-size
        // window of the output with room for them and a match of up to 32 bytes; a match that
        // short goes as one copy of 18 or 32 bytes. Limits set once per entry let the compiler
        // drop the windows' bounds checks, in safe code. Any other sequence goes to the general
        // step below, which makes the same checks in the same order. A whole 16373-byte frame of
        // the benchmark's rows decodes in fewer instructions than lz4_flex's unchecked decoder
        // takes for its block alone (valgrind: 63 against 67 thousand), a quarter fewer than
        // with the fast path before this loop, which checked both ends and the offset on every
        // sequence.
        if let (Some(ip_end), Some(op_end)) = (
            block.len().checked_sub(1 + FAST_INPUT),
            out.len().checked_sub(FAST_OUTPUT),
        ) {
            let entry = ip;
            while ip <= ip_end && op <= op_end {
                let token = block[ip];
                let short_literals = usize::from(token >> 4);
                let Some(input) = block[ip + 1..].first_chunk::<FAST_INPUT>() else {
                    break;
                };
                if short_literals == 15 {
                    break;
                }
                // Two bytes into a 2-byte array: cannot fail, and loads them as one.
                let offset = usize::from(u16::from_le_bytes(
                    input[short_literals..short_literals + 2]
                        .try_into()
                        .unwrap(),
                ));
                // How far before the window the match starts.
                let back = offset.wrapping_sub(short_literals);
                if !(SHORT_MATCH..=op).contains(&back) {
                    break;
                }
                let (done, rest) = out.split_at_mut(op);
                let Some(window) = rest.first_chunk_mut::<FAST_OUTPUT>() else {
                    break;
                };
                window[..CHUNK].copy_from_slice(&input[..CHUNK]);
                ip += 1 + short_literals + 2;
                let at = op + short_literals;
                let matched =
                    length(block, &mut ip, token & 0x0F, Lz4Fault::MatchLengthPastEnd)? + 4;
                if matched <= SHORT_MATCH {
                    window[short_literals..short_literals + SHORT_MATCH]
                        .copy_from_slice(&done[op - back..][..SHORT_MATCH]);
                } else if matched <= LONG_MATCH && back >= LONG_MATCH {
                    window[short_literals..short_literals + LONG_MATCH]
                        .copy_from_slice(&done[op - back..][..LONG_MATCH]);
                } else {
                    if matched > out.len() - at {
                        return too_long();
                    }
                    copy_match(out, at, offset, matched);
                }
                op = at + matched;
            }
            last_match_fast |= ip != entry;
        }

        // The general step: one sequence, anywhere.
        let Some(&token) = block.get(ip) else {
            return malformed(Lz4Fault::EndsAfterMatch);
        };
        ip += 1;
        let literals = length(block, &mut ip, token >> 4, Lz4Fault::LiteralLengthPastEnd)?;
        if literals > block.len() - ip {
            return malformed(Lz4Fault::LiteralsPastEnd);
        }
        if literals > out.len() - op {
            return too_long();
        }
        if literals <= CHUNK && block.len() - ip >= CHUNK && out.len() - op >= CHUNK {
            out[op..op + CHUNK].copy_from_slice(&block[ip..ip + CHUNK]);
        } else {
            out[op..op + literals].copy_from_slice(&block[ip..ip + literals]);
        }
        ip += literals;
        op += literals;
        if ip == block.len() {
            break op - literals; // the last sequence has literals only
        }

        if block.len() - ip < 2 {
            return malformed(Lz4Fault::OffsetPastEnd);
        }
        let offset = usize::from(u16::from_le_bytes([block[ip], block[ip + 1]]));
        ip += 2;
        if offset == 0 || offset > op {
            return malformed(Lz4Fault::OffsetOutsideOutput);
        }
        let matched = length(block, &mut ip, token & 0x0F, Lz4Fault::MatchLengthPastEnd)? + 4;
        if matched > out.len() - op {
            return too_long();
        }
        last_match_start = op;
        last_match_fast = false;
        copy_match(out, op, offset, matched);
        op += matched;
    };
    if op != out.len() {
        return Err(ErrorKind::Lz4LengthMismatch {
            declared,
            actual: Some(op as u32),
        });
    }
    if match_end == 0 {
        return Ok(()); // literals only
    }
    let last_match_start = match last_match_fast {
        false => last_match_start,
        true if match_end + LAST_LITERALS <= out.len() => return Ok(()),
        true => last_match_start_of(block),
    };
    if last_match_start + MFLIMIT > out.len() || match_end + LAST_LITERALS > out.len() {
        return Err(ErrorKind::Lz4EndOfBlock {
            last_match_start: last_match_start as u32,
            last_match_end: match_end as u32,
            declared,
        });
    }
    Ok(())
}

/// Where the last match of a block that decoded starts in its output, found by walking its
/// sequences again, lengths only. Every read lies in the block, as it decoded.
#[cold]
#[inline(never)]
fn last_match_start_of(block: &[u8]) -> usize {
    let (mut ip, mut op, mut start) = (0, 0, 0);
    while let Some(&token) = block.get(ip) {
        ip += 1;
        let literals = length(block, &mut ip, token >> 4, Lz4Fault::LiteralLengthPastEnd);
        let literals = literals.unwrap_or_default();
        op += literals;
        ip += literals + 2;
        if ip > block.len() {
            break; // the last sequence has literals only
        }
        start = op;
        let matched = length(block, &mut ip, token & 0x0F, Lz4Fault::MatchLengthPastEnd);
        op += matched.unwrap_or_default() + 4;
    }
    start
}

/// A literal or match length: the token's 4 bits; a nibble of 15 goes on in the bytes that
/// follow, each added, for as long as they are 255.
#[inline(always)]
fn length(
    block: &[u8],
    ip: &mut usize,
    nibble: u8,
    past_end: Lz4Fault,
) -> Result<usize, ErrorKind> {
    let mut length = usize::from(nibble);
    if nibble == 0x0F {
        loop {
            let Some(&b) = block.get(*ip) else {
                return Err(ErrorKind::Lz4Malformed { reason: past_end });
            };
            *ip += 1;
            length += usize::from(b);
            if b != 0xFF {
                break;
            }
        }
    }
    Ok(length)
}

/// Copies `len` bytes from `offset` bytes back (`1 <= offset <= op`, checked by the caller; 0
/// would never advance) to `out[op..]`, which has room for them. A match that does not overlap
/// its own output is copied as one fixed-size move of 18 or 32 bytes where the output has room
/// (a move reads all its source before it writes, so the bytes it copies past the match are only
/// overwritten later); a longer one, or one that overlaps with an offset of 16 or more, in 16-byte
/// chunks; the rest exactly, an overlapping one by doubling copies.
#[inline(always)]
fn copy_match(out: &mut [u8], op: usize, offset: usize, len: usize) {
    debug_assert!(offset != 0 && offset <= op && len <= out.len() - op);
    let from = op - offset;
    let room = out.len() - op;
    if offset >= len && len <= SHORT_MATCH && room >= SHORT_MATCH {
        out.copy_within(from..from + SHORT_MATCH, op);
    } else if offset >= len && len <= 2 * CHUNK && room >= 2 * CHUNK {
        out.copy_within(from..from + 2 * CHUNK, op);
    } else if offset >= CHUNK && room >= len.next_multiple_of(CHUNK) {
        // Each chunk reads only bytes written before it, as the source is a chunk or more back.
        let mut k = 0;
        while k < len {
            out.copy_within(from + k..from + k + CHUNK, op + k);
            k += CHUNK;
        }
    } else if offset >= len {
        out.copy_within(from..from + len, op);
    } else {
        // The match overlaps its own output and repeats the `offset` bytes before it: each copy
        // doubles the repeated stretch the next can copy from.
        let (mut at, end) = (op, op + len);
        while at < end {
            let n = (at - from).min(end - at);
            out.copy_within(from..from + n, at);
            at += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decoded(block: &[u8], declared: u32) -> Result<Vec<u8>, ErrorKind> {
        let mut out = Vec::new();
        decompress(block, declared, &mut out).map(|()| out)
    }

    #[test]
    fn the_issue_block_breaks_both_rules() {
        // One literal, a 10-byte match at 1, one literal: lz4_flex makes "aaaaaaaaaaab" of it.
        let block = [0x16, b'a', 0x01, 0x00, 0x10, b'b'];
        assert_eq!(
            decoded(&block, 12),
            Err(ErrorKind::Lz4EndOfBlock {
                last_match_start: 1,
                last_match_end: 11,
                declared: 12
            })
        );
    }

    #[test]
    fn a_match_at_both_limits_is_valid() {
        // 8 literals, a 7-byte match over 8..15, 5 literals: 20 bytes.
        let block = [&[0x83][..], b"abcdefgh", &[1, 0, 0x50], b"vwxyz"].concat();
        assert_eq!(decoded(&block, 20).unwrap(), b"abcdefghhhhhhhhvwxyz");
    }

    #[test]
    fn each_rule_is_checked_on_its_own() {
        // A 4-byte match starting 11 bytes before the end, 7 literals after it.
        let late = [&[0x90][..], b"abcdefghi", &[1, 0, 0x70], b"jklmnop"].concat();
        assert!(matches!(
            decoded(&late, 20),
            Err(ErrorKind::Lz4EndOfBlock {
                last_match_start: 9,
                last_match_end: 13,
                ..
            })
        ));
        // A 19-byte match (length byte 0) at 1, only 4 literals after it.
        let long = [&[0x1F][..], b"a", &[1, 0, 0, 0x40], b"bcde"].concat();
        assert!(matches!(
            decoded(&long, 24),
            Err(ErrorKind::Lz4EndOfBlock {
                last_match_start: 1,
                last_match_end: 20,
                ..
            })
        ));
    }

    #[test]
    fn blocks_without_a_match_have_no_end_of_block_limit() {
        assert_eq!(decoded(&[0x30, b'a', b'b', b'c'], 3).unwrap(), b"abc");
    }

    #[test]
    fn every_block_lz4_flex_writes_keeps_the_rules() {
        for len in [1usize, 12, 13, 64, 2037, 16373, 131071] {
            let data: Vec<u8> = (0..len).map(|i| (i % 7 + i / 97 % 3) as u8).collect();
            let block = lz4_flex::block::compress(&data);
            assert_eq!(decoded(&block, len as u32).unwrap(), data, "{len}");
        }
    }

    #[test]
    fn a_last_match_from_the_fast_loop_is_held_to_the_rules() {
        // 40 literals and a 4-byte match (44 bytes), then a sequence far enough from both ends
        // for the fast loop: 14 literals and a 30-byte match from 50 bytes back, over 58..88;
        // then the last literals.
        let head = [&[0xF0, 25][..], &[b'x'; 40], &[40, 0]].concat();
        let fast = [&[0xEF][..], b"abcdefghijklmn", &[50, 0, 11]].concat();
        let block = |tail: &[u8]| [&head[..], &fast, tail].concat();
        let valid = decoded(&block(&[0x50, b'v', b'w', b'x', b'y', b'z']), 93).unwrap();
        assert_eq!(&valid[44..58], b"abcdefghijklmn");
        assert_eq!(valid[58..88], valid[8..38]);
        // Four last literals: the match ends 4 bytes before the end (LAST_LITERALS), and the
        // error names where it starts, which the fast loop did not keep.
        assert_eq!(
            decoded(&block(&[0x40, b'w', b'x', b'y', b'z']), 92),
            Err(ErrorKind::Lz4EndOfBlock {
                last_match_start: 58,
                last_match_end: 88,
                declared: 92
            })
        );
    }

    #[test]
    fn matches_of_every_length_far_back_and_near() {
        // Stretches of 4..=40 bytes copied from 4 to 4000 bytes back between runs of noise:
        // matches that the fast path moves as 18 or 32 bytes and ones it leaves to copy_match.
        let mut x = 0x9E37_79B9u32;
        let mut noise = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        };
        let mut data: Vec<u8> = (0..4096).map(|_| noise()).collect();
        for len in 4..=40 {
            for back in [len, 20, 40, 47, 100, 4000] {
                let from = data.len() - back;
                for i in 0..len {
                    data.push(data[from + i]);
                }
                data.extend((0..9).map(|_| noise()));
            }
        }
        let block = lz4_flex::block::compress(&data);
        let copied = 6 * (4..=40).sum::<usize>();
        assert!(
            block.len() < data.len() - copied / 2,
            "most copies became matches"
        );
        assert_eq!(decoded(&block, data.len() as u32).unwrap(), data);
    }

    #[test]
    fn each_fault_is_named() {
        let fault = |block: &[u8], declared| match decoded(block, declared) {
            Err(ErrorKind::Lz4Malformed { reason }) => Some(reason),
            _ => None,
        };
        assert_eq!(fault(&[], 4), Some(Lz4Fault::EmptyBlock));
        // 4 literals and a match: the last sequence must carry literals only.
        let ends_after_match = [&[0x40][..], b"abcd", &[4, 0]].concat();
        assert_eq!(fault(&ends_after_match, 8), Some(Lz4Fault::EndsAfterMatch));
        assert_eq!(
            fault(&[0xF0, 0xFF], 300),
            Some(Lz4Fault::LiteralLengthPastEnd)
        );
        assert_eq!(fault(&[0x50, b'a'], 5), Some(Lz4Fault::LiteralsPastEnd));
        assert_eq!(fault(&[0x10, b'a', 1], 9), Some(Lz4Fault::OffsetPastEnd));
        assert_eq!(
            fault(&[0x10, b'a', 0, 0, 0x00], 5),
            Some(Lz4Fault::OffsetOutsideOutput)
        );
        assert_eq!(
            fault(&[0x10, b'a', 2, 0, 0x00], 5),
            Some(Lz4Fault::OffsetOutsideOutput)
        );
        assert_eq!(
            fault(&[0x1F, b'a', 1, 0], 40),
            Some(Lz4Fault::MatchLengthPastEnd)
        );
    }

    #[test]
    fn output_past_the_declared_length_is_a_length_mismatch() {
        let too_long = Err(ErrorKind::Lz4LengthMismatch {
            declared: 4,
            actual: None,
        });
        assert_eq!(decoded(&[0x50, b'a', b'b', b'c', b'd', b'e'], 4), too_long);
        assert_eq!(decoded(&[0x11, b'a', 1, 0, 0x00], 4), too_long);
        assert_eq!(
            decoded(&[0x30, b'a', b'b', b'c'], 4),
            Err(ErrorKind::Lz4LengthMismatch {
                declared: 4,
                actual: Some(3)
            })
        );
    }

    /// Data that LZ4 compresses into every kind of sequence: runs (matches that overlap their
    /// own output, offset 1), short periods, long repeats, random stretches (long literals).
    fn compressible() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            (any::<u8>(), 1..300usize).prop_map(|(b, n)| vec![b; n]),
            (proptest::collection::vec(any::<u8>(), 1..20), 1..40usize)
                .prop_map(|(p, n)| p.repeat(n)),
            proptest::collection::vec(any::<u8>(), 0..100),
        ];
        proptest::collection::vec(piece, 1..40).prop_map(|pieces| {
            let mut data: Vec<u8> = pieces.concat();
            // Repeat an earlier stretch far back, for long offsets.
            let copy = data[..data.len() / 2].to_vec();
            data.extend_from_slice(&copy);
            data
        })
    }

    proptest! {
        #[test]
        fn decodes_what_lz4_flex_compresses(data in compressible()) {
            let block = lz4_flex::block::compress(&data);
            prop_assert_eq!(decoded(&block, data.len() as u32).unwrap(), data);
        }

        /// On a damaged block, ours fails LZ4-4 exactly when lz4_flex does not yield the declared
        /// length, and otherwise yields lz4_flex's bytes or fails LZ4-6 alone.
        #[test]
        fn agrees_with_lz4_flex_on_damaged_blocks(
            data in compressible(),
            damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            cut in any::<prop::sample::Index>(),
            cut_it in any::<bool>(),
            declared_delta in -2i64..=2,
        ) {
            let mut block = lz4_flex::block::compress(&data);
            for (at, byte) in damage {
                let at = at.index(block.len());
                block[at] = byte;
            }
            if cut_it {
                block.truncate(cut.index(block.len() + 1));
            }
            let declared = (data.len() as i64 + declared_delta).max(1) as usize;
            let mut theirs = vec![0; declared];
            let theirs = match lz4_flex::block::decompress_into(&block, &mut theirs) {
                Ok(n) if n == declared => Some(theirs),
                _ => None,
            };
            match (decoded(&block, declared as u32), theirs) {
                (Ok(ours), Some(theirs)) => prop_assert_eq!(ours, theirs),
                (Err(ErrorKind::Lz4EndOfBlock { .. }), Some(_)) => {}
                (Err(ErrorKind::Lz4Malformed { .. } | ErrorKind::Lz4LengthMismatch { .. }), None) => {}
                (ours, theirs) => prop_assert!(false, "ours {:?}, lz4_flex {:?}", ours.map(|o| o.len()), theirs.map(|t| t.len())),
            }
        }
    }
}
