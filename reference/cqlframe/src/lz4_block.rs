//! Raw LZ4 blocks as a receiver checks them: decoded into exactly the declared length (LZ4-4),
//! then held to LZ4's end-of-block rules (LZ4-6), which Apache Cassandra's decoder enforces and
//! lz4_flex does not.

use crate::error::ErrorKind;

/// LZ4's end-of-block rules (`lz4_Block_format.md`, "End of block conditions"): the last match
/// starts at least `MFLIMIT` bytes before the end of the output and ends at least
/// `LAST_LITERALS` bytes before it.
const MFLIMIT: u32 = 12;
const LAST_LITERALS: u32 = 5;

/// Decompresses one raw LZ4 block into exactly `declared` bytes, never writing past them
/// (LZ4-4), then checks the end-of-block rules (LZ4-6).
/// Kept out of line: inlined into the frame loop, lz4_flex's copy loop measured much slower.
#[inline(never)]
pub(crate) fn decompress(block: &[u8], declared: u32, out: &mut Vec<u8>) -> Result<(), ErrorKind> {
    out.resize(declared as usize, 0);
    match lz4_flex::block::decompress_into(block, out) {
        Ok(n) if n == out.len() => check_end_of_block(block, declared),
        Ok(n) => Err(ErrorKind::Lz4LengthMismatch {
            declared,
            actual: Some(n as u32),
        }),
        Err(lz4_flex::block::DecompressError::OutputTooSmall { .. }) => {
            Err(ErrorKind::Lz4LengthMismatch {
                declared,
                actual: None,
            })
        }
        Err(e) => Err(ErrorKind::Lz4Malformed {
            reason: e.to_string(),
        }),
    }
}

/// Walks the sequences of a block that decoded to exactly `declared` bytes and checks where its
/// last match lies (LZ4-6). Reads only tokens and length bytes, never literals or output: one
/// step per sequence, a few nanoseconds each (a chain of dependent loads, the token's position
/// depending on the previous token).
fn check_end_of_block(block: &[u8], declared: u32) -> Result<(), ErrorKind> {
    let (mut at, mut produced) = (0usize, 0u64);
    let mut last_match = None;
    while let Some(&token) = block.get(at) {
        let (literals, matched) = (token >> 4, token & 0x0F);
        // The common sequence: both lengths in the token, and more sequences after it.
        if literals < 15 && matched < 15 && at + 3 + usize::from(literals) < block.len() {
            at += 3 + usize::from(literals);
            produced += u64::from(literals);
            last_match = Some((produced, produced + u64::from(matched) + 4));
            produced += u64::from(matched) + 4;
            continue;
        }
        at += 1;
        let literals = sequence_length(block, &mut at, literals);
        at += literals as usize;
        produced += literals;
        if at >= block.len() {
            break;
        }
        at += 2; // the match offset
        let length = sequence_length(block, &mut at, matched) + 4;
        last_match = Some((produced, produced + length));
        produced += length;
    }
    match last_match {
        Some((start, end))
            if start + u64::from(MFLIMIT) > u64::from(declared)
                || end + u64::from(LAST_LITERALS) > u64::from(declared) =>
        {
            Err(ErrorKind::Lz4EndOfBlock {
                last_match_start: start as u32,
                last_match_end: end as u32,
                declared,
            })
        }
        _ => Ok(()),
    }
}

/// A literal or match length: the token's 4 bits, plus the bytes that follow while the sum
/// keeps hitting 15, then 255.
#[inline(always)]
fn sequence_length(block: &[u8], at: &mut usize, nibble: u8) -> u64 {
    let mut length = u64::from(nibble);
    if nibble == 0x0F {
        while let Some(&b) = block.get(*at) {
            *at += 1;
            length += u64::from(b);
            if b != 0xFF {
                break;
            }
        }
    }
    length
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
