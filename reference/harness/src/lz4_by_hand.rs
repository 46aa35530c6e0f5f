//! LZ4 blocks made by hand, to say exactly where a match lies: the vectors and the conformance
//! faults need blocks no compressor writes (a match at or past LZ4's end-of-block limits, a block
//! that ends with a match).

/// `content[..start]` as literals, then one match of `length` bytes (4 or more) from `offset`
/// bytes back, then the rest of `content` as the last sequence's literals. When nothing is left
/// after the match, the block ends with it, which LZ4's block format forbids. The caller makes
/// sure `content[start..start + length]` repeats what lies `offset` bytes before it.
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
