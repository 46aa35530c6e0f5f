//! Where the frame headers lie in the bytes the proxy forwards, direction by direction, so that
//! its writes can keep from cutting one ([`super::segments`]).

use super::negotiation::{Negotiation, Phase};
use crate::pcap::write::Peer;
use cqlframe::format::Format;
use cqlframe::header::FrameHeader;
use std::collections::VecDeque;
use std::ops::Range;

/// The frame headers of both directions of one connection, followed from the handshake on.
#[derive(Default)]
pub struct Headers {
    negotiation: Negotiation,
    ways: [Way; 2],
}

/// One direction's forwarded bytes.
#[derive(Default)]
struct Way {
    /// Bytes fed so far.
    fed: u64,
    /// Where the next frame header begins, once framed.
    next: Option<u64>,
    /// A header failed its CRC24 (RECV-1): where frames lie after it is not known, and not
    /// followed.
    lost: bool,
    /// The bytes of the header at `next` fed so far.
    head: Vec<u8>,
    /// The stream offsets of the headers not yet all written, in order.
    spans: VecDeque<Range<u64>>,
}

impl Headers {
    /// The next `bytes` that `from`'s side forwards.
    pub fn feed(&mut self, from: Peer, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let way = &mut self.ways[from.index()];
            match self.negotiation.phase(from) {
                Phase::Unframed => {
                    let take = self.negotiation.unframed(from, rest);
                    way.fed += take as u64;
                    rest = &rest[take..];
                }
                Phase::Framed(format) => {
                    way.frames(format, rest);
                    rest = &[];
                }
                Phase::Waiting => {
                    way.fed += rest.len() as u64;
                    rest = &[];
                }
            }
        }
    }

    /// The headers of `from`'s forwarded bytes that end after stream offset `written` (the
    /// ones before are forgotten).
    pub fn after(&mut self, from: Peer, written: u64) -> &VecDeque<Range<u64>> {
        let spans = &mut self.ways[from.index()].spans;
        while spans.front().is_some_and(|s| s.end <= written) {
            spans.pop_front();
        }
        spans
    }
}

impl Way {
    fn frames(&mut self, format: Format, bytes: &[u8]) {
        let start = self.fed;
        let end = start + bytes.len() as u64;
        self.fed = end;
        if self.lost {
            return;
        }
        let header = format.header_len();
        let mut next = *self.next.get_or_insert(start);
        while next + (self.head.len() as u64) < end {
            if self.head.is_empty() {
                self.spans.push_back(next..next + header as u64);
            }
            let at = (next + self.head.len() as u64 - start) as usize;
            let take = (header - self.head.len()).min(bytes.len() - at);
            self.head.extend_from_slice(&bytes[at..at + take]);
            if self.head.len() < header {
                break;
            }
            match FrameHeader::read(format, &self.head) {
                Ok(h) => next += h.frame_len() as u64,
                Err(_) => {
                    self.lost = true;
                    break;
                }
            }
            self.head.clear();
        }
        self.next = Some(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(format: Format, payload: usize) -> Vec<u8> {
        let mut out = Vec::new();
        FrameHeader::new(format, payload as u32, 0, true, false).write(&mut out);
        out.resize(out.len() + payload + 4, 0xab);
        out
    }

    // The headers are found wherever the reads that bring them end, and a header that fails its
    // CRC24 stops the following.
    #[test]
    fn headers_are_found_across_any_split_and_a_broken_one_ends_the_following() {
        let mut stream = Vec::new();
        let mut starts = Vec::new();
        for payload in [0, 1, 300, 70_000, 5] {
            starts.push(stream.len() as u64);
            stream.extend(frame(Format::Uncompressed, payload));
        }
        let expected: Vec<Range<u64>> = starts.iter().map(|&s| s..s + 6).collect();
        for piece in [1, 2, 5, 7, 4096, stream.len()] {
            let mut way = Way::default();
            for chunk in stream.chunks(piece) {
                way.frames(Format::Uncompressed, chunk);
            }
            assert_eq!(Vec::from(way.spans.clone()), expected, "pieces of {piece}");
            assert!(!way.lost);
        }
        let mut broken = stream.clone();
        broken[starts[2] as usize] ^= 1;
        let mut way = Way::default();
        way.frames(Format::Uncompressed, &broken);
        assert!(way.lost);
        assert_eq!(Vec::from(way.spans), expected[..3].to_vec());
    }
}
