//! The catalogue's frame faults on real traffic: the handshake followed in both directions to
//! learn where the faulted direction switches to framing and with which format, then every
//! envelope of that direction decoded from the node's (or the driver's) frames and framed again
//! with the negotiated format and checksum by the conformance server's layout, the targeted one
//! broken by the one fault builder the server and the probe use ([`crate::conformance::faults`]).

use super::negotiation::{Negotiation, Phase};
use crate::conformance::cases::{Fault, FaultKind};
use crate::conformance::faults;
use crate::conformance::layout::Layout;
use crate::fault_builder::serialise;
use crate::pcap::write::Peer;
use cqlframe::checksum::PayloadChecksum;
use cqlframe::decoder::{Decoder, Event};
use cqlframe::format::{Format, FrameSettings, MAX_PAYLOAD};
use cqlframe::header::FrameHeader;

/// Which traffic a fault breaks, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    pub kind: FaultKind,
    /// Whose bytes: the node's (to the client) unless `to=server`.
    pub from: Peer,
    /// Only on this connection (numbered from 1 in the order they open); every one otherwise.
    pub connection: Option<usize>,
    /// Envelopes of the faulted direction left alone after its switch before the fault.
    pub after: u64,
}

impl FaultSpec {
    /// `KIND[,connection=N][,after=N][,to=server|client]`, KIND a fault of the catalogue
    /// (`header-bitflip`, `truncate-frame`, ...).
    pub fn parse(text: &str) -> Result<FaultSpec, String> {
        let mut parts = text.split(',');
        let name = parts.next().unwrap_or_default();
        let kind: FaultKind = serde_json::from_value(serde_json::Value::String(name.into()))
            .map_err(|_| format!("{name}: not a fault of the catalogue"))?;
        let mut spec = FaultSpec {
            kind,
            from: Peer::Server,
            connection: None,
            after: 0,
        };
        for p in parts {
            let number = |v: &str| v.parse::<u64>().map_err(|_| format!("{p}: not a number"));
            match p.split_once('=') {
                Some(("connection", v)) => spec.connection = Some(number(v)? as usize),
                Some(("after", v)) => spec.after = number(v)?,
                Some(("to", "client")) => spec.from = Peer::Server,
                Some(("to", "server")) => spec.from = Peer::Client,
                _ => {
                    return Err(format!(
                        "{p}: expected connection=N, after=N or to=client|server"
                    ))
                }
            }
        }
        Ok(spec)
    }
}

/// What to forward for bytes read, and whether to close the connection after (a truncation).
pub struct Forward {
    pub bytes: Vec<u8>,
    pub close: bool,
    /// What the fault did, once, when applied.
    pub note: Option<String>,
}

/// The faulted direction, once framed.
enum Side {
    /// Framing to be detected from its first header.
    Detect(Vec<u8>),
    Framed(Box<Decoder>, Layout),
    /// Passed on as read: what could not be decoded.
    Through,
}

/// One connection's faulting.
pub struct Tamper {
    spec: FaultSpec,
    /// Largest envelope re-framed (the proxy's `--max-body`): one is held whole.
    max_body: u32,
    negotiation: Negotiation,
    side: Side,
    envelopes: u64,
    applied: bool,
}

impl Tamper {
    pub fn new(spec: FaultSpec, max_body: u32) -> Tamper {
        Tamper {
            spec,
            max_body,
            negotiation: Negotiation::default(),
            side: Side::Detect(Vec::new()),
            envelopes: 0,
            applied: false,
        }
    }

    /// Takes the bytes `from` wrote; what goes on to the other end.
    pub fn pass(&mut self, from: Peer, bytes: &[u8]) -> Forward {
        let mut out = Forward {
            bytes: Vec::new(),
            close: false,
            note: None,
        };
        let mut rest = bytes;
        while !rest.is_empty() {
            match self.negotiation.phase(from) {
                Phase::Unframed => {
                    let take = self.negotiation.unframed(from, rest);
                    out.bytes.extend_from_slice(&rest[..take]);
                    rest = &rest[take..];
                }
                Phase::Framed(format) if from == self.spec.from => {
                    self.faulted(format, rest, &mut out);
                    rest = &[];
                }
                _ => {
                    out.bytes.extend_from_slice(rest);
                    rest = &[];
                }
            }
        }
        out
    }

    /// Bytes of the faulted direction after its switch.
    fn faulted(&mut self, format: Format, bytes: &[u8], out: &mut Forward) {
        match &mut self.side {
            Side::Through => out.bytes.extend_from_slice(bytes),
            Side::Detect(buf) => {
                buf.extend_from_slice(bytes);
                if buf.len() < format.header_len() {
                    return;
                }
                let checksum = match FrameHeader::read(format, buf) {
                    Ok(h) if h.checksum_bit => PayloadChecksum::Crc32c,
                    _ => PayloadChecksum::Crc32,
                };
                let settings = FrameSettings::new(format, checksum);
                let held = std::mem::take(buf);
                let layout = Layout {
                    settings,
                    capacity: MAX_PAYLOAD,
                    split_at: MAX_PAYLOAD,
                    first_piece: None,
                    last_piece: None,
                    pack: true,
                    lz4_store: false,
                    reserved_bits: 0,
                };
                let decoder = Decoder::new(settings, self.max_body);
                self.side = Side::Framed(Box::new(decoder), layout);
                self.framed(&held, out);
            }
            Side::Framed(..) => self.framed(bytes, out),
        }
    }

    /// The faulted direction after its switch: every envelope framed again, the targeted one
    /// broken.
    fn framed(&mut self, bytes: &[u8], out: &mut Forward) {
        let Side::Framed(decoder, layout) = &mut self.side else {
            return;
        };
        let mut envelopes = Vec::new();
        let result = decoder.decode(bytes, |e| {
            if let Event::Envelope(e) = e {
                envelopes.push(e.to_unframed_bytes());
            }
            Ok(())
        });
        let layout = layout.clone();
        for envelope in envelopes {
            self.envelopes += 1;
            if !self.applied && self.envelopes > self.spec.after {
                let fault = Fault {
                    kind: self.spec.kind,
                    bit: None,
                    frames: None,
                };
                if let Ok(f) = faults::apply(&fault, &layout, &envelope) {
                    self.applied = true;
                    out.bytes.extend_from_slice(&f.bytes);
                    out.note = Some(format!("fault {}: {}", self.spec.kind, f.note));
                    if f.close {
                        out.close = true;
                        return;
                    }
                    continue;
                }
            }
            out.bytes.extend(serialise(&layout.frames(&[envelope])));
        }
        if result.is_err() {
            // Not decodable as framed: what follows goes on as read (the judge says why).
            self.side = Side::Through;
        }
    }
}
