//! TCP reassembly of one direction: segments in capture order in, the byte stream out, in
//! order, each byte once. Retransmitted and overlapping segments are trimmed to what is new;
//! segments that arrive early wait (bounded) until the hole before them is filled. A hole that
//! never fills (the capture lost packets, or the snap length cut them) is reported as a gap.

use super::read::{Segment, TCP_FIN, TCP_RST, TCP_SYN};
use std::collections::BTreeMap;

/// Most bytes held for segments that arrived ahead of a hole; past it, the hole is a gap.
const OUT_OF_ORDER_LIMIT: usize = 16 << 20;

/// What reassembly hands on.
pub enum Delivery<'a> {
    /// The next bytes of the stream, at stream offset `offset`, carried by packet `packet`.
    Data {
        offset: u64,
        bytes: &'a [u8],
        packet: u64,
    },
    /// `missing` bytes at `offset` are not in the capture.
    Gap { offset: u64, missing: u64 },
    /// The sender closed its direction (FIN, once every byte before it arrived) or reset the
    /// connection.
    End { offset: u64, reset: bool },
}

#[derive(Default)]
pub struct Direction {
    started: bool,
    /// The first byte of the stream was seen (SYN), not joined midway.
    pub from_start: bool,
    next_seq: u32,
    /// Stream offset of `next_seq`.
    offset: u64,
    early: BTreeMap<u64, (Vec<u8>, u64)>,
    early_bytes: usize,
    fin_at: Option<u64>,
    pub ended: bool,
    pub retransmitted_bytes: u64,
    pub lost_bytes: u64,
}

impl Direction {
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Takes one segment of this direction.
    pub fn segment(&mut self, seg: &Segment, packet: u64, out: &mut dyn FnMut(Delivery<'_>)) {
        if self.ended {
            return;
        }
        let syn = seg.flags & TCP_SYN != 0;
        if syn && !self.from_start {
            self.started = true;
            self.from_start = true;
            self.next_seq = seg.seq.wrapping_add(1);
            self.offset = 0;
        }
        let data_seq = seg.seq.wrapping_add(u32::from(syn));
        if !self.started {
            if seg.payload.is_empty() && seg.missing == 0 {
                // A bare ACK tells nothing about where this direction's stream is.
                if seg.flags & (TCP_FIN | TCP_RST) == 0 {
                    return;
                }
            }
            self.started = true;
            self.next_seq = data_seq;
            self.offset = 0;
        }
        let rel = i64::from(data_seq.wrapping_sub(self.next_seq) as i32);
        let at = self.offset as i64 + rel;
        let len = seg.payload.len() as i64 + seg.missing as i64;
        if seg.flags & TCP_RST != 0 {
            self.early.clear();
            self.early_bytes = 0;
            self.ended = true;
            out(Delivery::End {
                offset: self.offset,
                reset: true,
            });
            return;
        }
        if len > 0 {
            if at + len <= self.offset as i64 {
                self.retransmitted_bytes += len as u64;
            } else if at <= self.offset as i64 {
                let skip = (self.offset as i64 - at) as usize;
                self.retransmitted_bytes += skip as u64;
                if skip < seg.payload.len() {
                    self.deliver(&seg.payload[skip..], packet, out);
                }
                let missing_from = (skip.max(seg.payload.len()) - seg.payload.len()) as u64;
                if seg.missing as u64 > missing_from {
                    self.gap(seg.missing as u64 - missing_from, out);
                }
                self.drain(out);
            } else {
                let at = at as u64;
                if !seg.payload.is_empty() {
                    let keep = match self.early.get(&at) {
                        Some((b, _)) => b.len() < seg.payload.len(),
                        None => true,
                    };
                    if keep {
                        self.early_bytes += seg.payload.len();
                        if let Some((old, _)) =
                            self.early.insert(at, (seg.payload.to_vec(), packet))
                        {
                            self.early_bytes -= old.len();
                        }
                    }
                }
                if self.early_bytes > OUT_OF_ORDER_LIMIT {
                    self.skip_hole(out);
                }
            }
        }
        if seg.flags & TCP_FIN != 0 {
            let fin = (at + len).max(0) as u64;
            self.fin_at = Some(fin);
        }
        self.check_fin(out);
    }

    fn deliver(&mut self, bytes: &[u8], packet: u64, out: &mut dyn FnMut(Delivery<'_>)) {
        out(Delivery::Data {
            offset: self.offset,
            bytes,
            packet,
        });
        self.advance(bytes.len() as u64);
    }

    fn advance(&mut self, n: u64) {
        self.offset += n;
        self.next_seq = self.next_seq.wrapping_add(n as u32);
    }

    fn gap(&mut self, missing: u64, out: &mut dyn FnMut(Delivery<'_>)) {
        out(Delivery::Gap {
            offset: self.offset,
            missing,
        });
        self.lost_bytes += missing;
        self.advance(missing);
    }

    /// Delivers the early segments that the stream has reached.
    fn drain(&mut self, out: &mut dyn FnMut(Delivery<'_>)) {
        while let Some(entry) = self.early.first_entry() {
            let at = *entry.key();
            if at > self.offset {
                break;
            }
            let (bytes, packet) = entry.remove();
            self.early_bytes -= bytes.len();
            let end = at + bytes.len() as u64;
            if end > self.offset {
                let from = (self.offset - at) as usize;
                self.retransmitted_bytes += from as u64;
                self.deliver(&bytes[from..], packet, out);
            } else {
                self.retransmitted_bytes += bytes.len() as u64;
            }
        }
    }

    /// Gives up on the hole before the first early segment.
    fn skip_hole(&mut self, out: &mut dyn FnMut(Delivery<'_>)) {
        if let Some((&at, _)) = self.early.first_key_value() {
            if at > self.offset {
                self.gap(at - self.offset, out);
            }
            self.drain(out);
        }
    }

    fn check_fin(&mut self, out: &mut dyn FnMut(Delivery<'_>)) {
        if let Some(fin) = self.fin_at {
            if self.offset >= fin && !self.ended {
                self.ended = true;
                out(Delivery::End {
                    offset: self.offset,
                    reset: false,
                });
            }
        }
    }

    /// The end of the capture: what waits behind a hole is delivered after a gap.
    pub fn flush(&mut self, out: &mut dyn FnMut(Delivery<'_>)) {
        while !self.early.is_empty() {
            self.skip_hole(out);
        }
        self.check_fin(out);
    }
}
