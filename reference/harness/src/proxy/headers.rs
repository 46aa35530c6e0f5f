//! Where the frame headers lie in the bytes the proxy forwards, direction by direction, so that
//! its writes can keep from cutting one ([`crate::conformance::segments`]).

use super::negotiation::{Negotiation, Phase};
use crate::conformance::segments::FrameHeaders;
use crate::pcap::write::Peer;
use std::collections::VecDeque;
use std::ops::Range;

/// The frame headers of both directions of one connection, followed from the handshake on.
#[derive(Default)]
pub struct Headers {
    negotiation: Negotiation,
    ways: [Way; 2],
    /// What a direction not framed (yet) has.
    none: VecDeque<Range<u64>>,
}

/// One direction's forwarded bytes.
#[derive(Default)]
struct Way {
    /// Bytes fed so far.
    fed: u64,
    frames: Option<FrameHeaders>,
}

impl Headers {
    /// The next `bytes` that `from`'s side forwards.
    pub fn feed(&mut self, from: Peer, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let way = &mut self.ways[from.index()];
            let take = match self.negotiation.phase(from) {
                Phase::Unframed => self.negotiation.unframed(from, rest),
                Phase::Framed(format) => {
                    let at = way.fed;
                    way.frames
                        .get_or_insert_with(|| FrameHeaders::new(format, at))
                        .feed(rest);
                    rest.len()
                }
                Phase::Waiting => rest.len(),
            };
            way.fed += take as u64;
            rest = &rest[take..];
        }
    }

    /// The headers of `from`'s forwarded bytes that end after stream offset `written` (the
    /// ones before are forgotten).
    pub fn after(&mut self, from: Peer, written: u64) -> &VecDeque<Range<u64>> {
        match &mut self.ways[from.index()].frames {
            Some(frames) => frames.after(written),
            None => &self.none,
        }
    }
}
