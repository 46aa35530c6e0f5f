//! One connection's handshake, followed in both directions as far as framing goes: each
//! direction's unframed envelopes until the node's answer to a STARTUP of version 5 or later
//! (READY or AUTHENTICATE) switches both to frames, in the format the STARTUP asked for.

use crate::pcap::write::Peer;
use cqlframe::body;
use cqlframe::envelope::{header_len, EnvelopeHeader, Opcode, RESPONSE_BIT};
use cqlframe::format::Format;

/// Where one direction is in the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Envelopes, each followed to its end.
    Unframed,
    /// The client after its STARTUP, until the node answers it: its bytes are not followed
    /// (what it writes before the answer is the judge's business, LIFE-6).
    Waiting,
    /// Frames of this format from the next byte on.
    Framed(Format),
}

/// The longest STARTUP body followed: its options are a few short strings.
const STARTUP_BODY: usize = 64 << 10;

/// The handshake of one connection.
pub struct Negotiation {
    unframed: [Envelope; 2],
    phase: [Phase; 2],
    /// The client's STARTUP asked for LZ4 (and the version it spoke).
    startup: Option<(bool, u8)>,
}

/// The envelope one direction is in, while unframed: its header as far as it came, and its
/// body only when it is a STARTUP (others are counted through), so that memory stays bounded.
#[derive(Default)]
struct Envelope {
    head: Vec<u8>,
    body: Vec<u8>,
    /// Bytes of the body still to come, once the header is whole.
    rest: usize,
    keep: bool,
}

impl Default for Negotiation {
    fn default() -> Self {
        Negotiation {
            unframed: Default::default(),
            phase: [Phase::Unframed; 2],
            startup: None,
        }
    }
}

impl Negotiation {
    /// Where `from`'s next byte is.
    pub fn phase(&self, from: Peer) -> Phase {
        self.phase[from.index()]
    }

    /// Takes `bytes` of `from` while it is unframed: how many of them it took (at least one, up
    /// to the end of an envelope, so that a switch falls between two calls).
    pub fn unframed(&mut self, from: Peer, bytes: &[u8]) -> usize {
        let e = &mut self.unframed[from.index()];
        let whole = |h: &[u8]| h.first().is_some_and(|&v| h.len() == header_len(v));
        let take = if whole(&e.head) {
            let take = bytes.len().min(e.rest);
            if e.keep {
                e.body.extend_from_slice(&bytes[..take]);
            }
            e.rest -= take;
            take
        } else {
            let need = e.head.first().map_or(1, |&v| header_len(v) - e.head.len());
            let take = bytes.len().min(need);
            e.head.extend_from_slice(&bytes[..take]);
            if whole(&e.head) {
                match EnvelopeHeader::read(&e.head) {
                    Some((h, _)) if h.length >= 0 => {
                        e.rest = h.length as usize;
                        e.keep = from == Peer::Client
                            && h.opcode == Opcode::Startup as u8
                            && e.rest <= STARTUP_BODY;
                    }
                    // Not an envelope: this direction is not followed further.
                    _ => {
                        self.phase[from.index()] = Phase::Waiting;
                        return take;
                    }
                }
            }
            take
        };
        let e = &mut self.unframed[from.index()];
        if whole(&e.head) && e.rest == 0 {
            let e = std::mem::take(e);
            if let Some((h, _)) = EnvelopeHeader::read(&e.head) {
                self.envelope(from, h, &e.body);
            }
        }
        take
    }

    /// An unframed envelope of `from` seen whole (`body` kept only for a STARTUP): the client's
    /// STARTUP, and the node's answer to it that switches both directions.
    fn envelope(&mut self, from: Peer, h: EnvelopeHeader, body: &[u8]) {
        let version = h.version & !RESPONSE_BIT;
        match from {
            Peer::Client if h.opcode == Opcode::Startup as u8 => {
                let options = body::read_string_map(body).unwrap_or_default();
                let lz4 = options
                    .iter()
                    .any(|(k, v)| k.eq_ignore_ascii_case("COMPRESSION") && v == "lz4");
                self.startup = Some((lz4, version));
                self.phase[Peer::Client.index()] = Phase::Waiting;
            }
            Peer::Server
                if self.startup.is_some_and(|(_, v)| v >= 5 && v == version)
                    && matches!(
                        Opcode::from_u8(h.opcode),
                        Some(Opcode::Ready | Opcode::Authenticate)
                    ) =>
            {
                let format = match self.startup {
                    Some((true, _)) => Format::Lz4,
                    _ => Format::Uncompressed,
                };
                self.phase = [Phase::Framed(format); 2];
            }
            _ => {}
        }
    }
}
