//! LZ4 blocks made by hand, to say exactly where a match lies: the vectors, the conformance
//! faults and the probe need blocks no compressor writes (a match at or past LZ4's end-of-block
//! limits, a block that ends with a match), and frames around them.

use cqlframe::encoder::write_raw;
use cqlframe::format::{Format, FrameSettings};
use cqlframe::header::FrameHeader;

/// `content[..start]` as literals, then one match of `length` bytes (4 or more) from `offset`
/// bytes back, then the rest of `content` as the last sequence's literals. When nothing is left
/// after the match, the block ends with it, which LZ4's block format forbids.
///
/// Panics unless `content[start..start + length]` repeats what lies `offset` bytes before it
/// (overlapping or not): a block that decodes to something else would test nothing.
pub fn one_match_block(content: &[u8], start: usize, offset: u16, length: usize) -> Vec<u8> {
    // A length as its token nibble and the bytes that extend it (15, then 255s, then the rest).
    fn split(n: usize) -> (u8, Vec<u8>) {
        if n < 15 {
            return (n as u8, Vec::new());
        }
        let mut more = vec![0xFF; (n - 15) / 255];
        more.push(((n - 15) % 255) as u8);
        (15, more)
    }
    let offset_back = usize::from(offset);
    assert!(
        length >= 4
            && (1..=start).contains(&offset_back)
            && (start..start + length).all(|i| content[i] == content[i - offset_back]),
        "bytes {start}..{} do not repeat those {offset} bytes back",
        start + length
    );
    let tail = &content[start + length..];
    let (literals, literals_more) = split(start);
    let (matched, matched_more) = split(length - 4);
    let mut block = vec![literals << 4 | matched];
    block.extend(literals_more);
    block.extend_from_slice(&content[..start]);
    block.extend_from_slice(&offset.to_le_bytes());
    block.extend(matched_more);
    if !tail.is_empty() {
        let (last, last_more) = split(tail.len());
        block.push(last << 4);
        block.extend(last_more);
        block.extend_from_slice(tail);
    }
    block
}

/// A self-contained LZ4 frame of a connection with `settings` around `block`, declared as
/// `declared` content bytes, its CRC24 and trailer right: only the block can be at fault.
pub fn lz4_block_frame(settings: FrameSettings, block: &[u8], declared: u32) -> Vec<u8> {
    let header = FrameHeader::new(
        Format::Lz4,
        block.len() as u32,
        declared,
        true,
        settings.checksum_bit(),
    );
    let mut out = Vec::new();
    write_raw(&header, block, settings.checksum.compute(block), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "do not repeat")]
    fn a_match_that_does_not_repeat_is_refused() {
        one_match_block(b"abcdefghijklmnop", 8, 4, 4);
    }

    #[test]
    fn an_overlapping_match_is_taken() {
        let block = one_match_block(b"aaaaaaaaaaaaaaaaaaaa", 1, 1, 8);
        let out = lz4_flex::block::decompress(&block, 20).expect("a valid block");
        assert_eq!(out, b"aaaaaaaaaaaaaaaaaaaa");
    }
}
