//! A streaming reader of packet captures, classic pcap and pcapng, in either byte order, and
//! the decoding of each packet down to its TCP segment.
//!
//! Written by hand (a few hundred lines) rather than with a crate: the reader owns one buffer
//! that packets are borrowed from, so a capture of any size is read with constant memory and no
//! copy per packet. Link types: Ethernet (with VLAN tags), Linux cooked v1 and v2, raw IP,
//! BSD loopback. Network: IPv4 (fragments are counted and skipped) and IPv6 (extension headers
//! walked).

use std::io::Read;

/// Link-layer header types (tcpdump.org/linktypes.html).
const LINKTYPE_NULL: u32 = 0;
const LINKTYPE_ETHERNET: u32 = 1;
const LINKTYPE_RAW: u32 = 101;
const LINKTYPE_LOOP: u32 = 108;
const LINKTYPE_LINUX_SLL: u32 = 113;
const LINKTYPE_IPV4: u32 = 228;
const LINKTYPE_IPV6: u32 = 229;
const LINKTYPE_LINUX_SLL2: u32 = 276;

/// One captured packet, borrowed from the reader's buffer.
pub struct Packet<'a> {
    /// 1-based, as Wireshark numbers packets.
    pub number: u64,
    pub linktype: u32,
    pub data: &'a [u8],
}

enum Format {
    Pcap { big_endian: bool, linktype: u32 },
    PcapNg,
}

/// Largest packet record read: Wireshark's limit for the link types read here
/// (`WTAP_MAX_PACKET_SIZE_STANDARD`); tshark calls a capture with a larger record corrupt too.
pub const MAX_PACKET: usize = 256 << 10;
/// Largest pcapng packet block: the packet, the block's fixed fields and 64 KiB of options.
const MAX_PACKET_BLOCK: usize = MAX_PACKET + 32 + (64 << 10);

/// Reads packets one at a time from a pcap or pcapng stream.
///
/// Memory: one buffer of at most `BUFFER` (4 MiB) bytes, whatever a record claims (no packet block
/// is larger); pcapng blocks that carry no packet are skipped without being held. A capture that ends inside a record or block, or
/// whose blocks contradict themselves, is an error naming the byte offset, never a clean end.
pub struct Reader<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    format: Format,
    number: u64,
    /// Bytes of the file consumed so far.
    consumed: u64,
    /// pcapng: byte order of the current section and link type of each interface.
    ng_big_endian: bool,
    ng_linktypes: Vec<u32>,
}

/// The buffer starts at this and doubles with each read up to [`BUFFER`].
const FIRST_READ: usize = 64 << 10;
/// The largest buffer: large reads keep a large capture cheap to read.
const BUFFER: usize = 4 << 20;
const _: () = assert!(MAX_PACKET_BLOCK <= BUFFER, "a packet block fits the buffer");

fn u16_at(b: &[u8], at: usize, big: bool) -> u16 {
    let v = [b[at], b[at + 1]];
    if big {
        u16::from_be_bytes(v)
    } else {
        u16::from_le_bytes(v)
    }
}

fn u32_at(b: &[u8], at: usize, big: bool) -> u32 {
    let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if big {
        u32::from_be_bytes(v)
    } else {
        u32::from_le_bytes(v)
    }
}

/// The message of a capture cut short: a `what` starting at byte `at` claims `claimed` bytes
/// and the file ends `have` bytes into it.
fn cut(what: &str, at: u64, claimed: usize, have: u64) -> String {
    format!(
        "capture cut short at byte {}: the {what} at byte {at} claims {claimed} bytes, the file ends {have} bytes into it",
        at + have
    )
}

impl<R: Read> Reader<R> {
    /// Reads the file header and recognises the format.
    pub fn new(inner: R) -> Result<Self, String> {
        let mut r = Reader {
            inner,
            buf: vec![0; FIRST_READ],
            pos: 0,
            end: 0,
            eof: false,
            format: Format::Pcap {
                big_endian: false,
                linktype: 0,
            },
            number: 0,
            consumed: 0,
            ng_big_endian: false,
            ng_linktypes: Vec::new(),
        };
        if !r.fill(24)? {
            return Err(format!(
                "not a capture: {} bytes, shorter than a pcap file header",
                r.end
            ));
        }
        let head = &r.buf[r.pos..r.pos + 24];
        let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        r.format = match magic {
            0xa1b2_c3d4 | 0xa1b2_3c4d => Format::Pcap {
                big_endian: false,
                linktype: u32_at(head, 20, false) & 0xffff,
            },
            0xd4c3_b2a1 | 0x4d3c_b2a1 => Format::Pcap {
                big_endian: true,
                linktype: u32_at(head, 20, true) & 0xffff,
            },
            0x0a0d_0d0a => Format::PcapNg,
            _ => return Err(format!("not a pcap or pcapng file (magic {magic:#010x})")),
        };
        if let Format::Pcap { .. } = r.format {
            r.advance(24);
        }
        Ok(r)
    }

    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    fn advance(&mut self, n: usize) {
        self.pos += n;
        self.consumed += n as u64;
    }

    /// Makes at least `n` unread bytes available (`n` is at most a packet block); false if the
    /// input ends first.
    fn fill(&mut self, n: usize) -> Result<bool, String> {
        while self.end - self.pos < n {
            if self.eof {
                return Ok(false);
            }
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            }
            if self.buf.len() < BUFFER {
                let grown = (2 * self.buf.len()).max(n).min(BUFFER);
                self.buf.resize(grown, 0);
            }
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(got) => self.end += got,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        Ok(true)
    }

    /// The end of the input where a `what` of `claimed` bytes would start: a clean end if no
    /// byte of it is there, a cut otherwise.
    fn end_or_cut<T>(&self, what: &str, claimed: usize) -> Result<Option<T>, String> {
        match self.end - self.pos {
            0 => Ok(None),
            have => Err(cut(what, self.consumed, claimed, have as u64)),
        }
    }

    /// The next packet, or `None` at the end of the capture.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, String> {
        match self.format {
            Format::Pcap {
                big_endian,
                linktype,
            } => {
                if !self.fill(16)? {
                    return self.end_or_cut("pcap record header", 16);
                }
                let incl = u32_at(&self.buf, self.pos + 8, big_endian) as usize;
                if incl > MAX_PACKET {
                    return Err(format!(
                        "corrupt pcap record at byte {}: it claims {incl} captured bytes, more than {MAX_PACKET}",
                        self.consumed
                    ));
                }
                if !self.fill(16 + incl)? {
                    return Err(cut(
                        "pcap record",
                        self.consumed,
                        16 + incl,
                        (self.end - self.pos) as u64,
                    ));
                }
                let start = self.pos + 16;
                self.advance(16 + incl);
                self.number += 1;
                Ok(Some(Packet {
                    number: self.number,
                    linktype,
                    data: &self.buf[start..start + incl],
                }))
            }
            Format::PcapNg => self.next_pcapng(),
        }
    }

    /// Discards the `len` bytes of the block at byte `at` (the next unread byte) without
    /// holding them, and checks its trailing length.
    fn skip_block(&mut self, at: u64, len: usize, big_endian: bool) -> Result<(), String> {
        let mut left = len - 4;
        while left > 0 {
            if !self.fill(1)? {
                return Err(cut("pcapng block", at, len, self.consumed - at));
            }
            let n = left.min(self.end - self.pos);
            self.advance(n);
            left -= n;
        }
        if !self.fill(4)? {
            let have = self.consumed - at + (self.end - self.pos) as u64;
            return Err(cut("pcapng block", at, len, have));
        }
        self.trailer(at, len, self.pos, big_endian)?;
        self.advance(4);
        Ok(())
    }

    /// A block ends with its length again: a mismatch is corruption or a byte-order mix-up.
    fn trailer(
        &self,
        at: u64,
        len: usize,
        trailer_pos: usize,
        big_endian: bool,
    ) -> Result<(), String> {
        let trailing = u32_at(&self.buf, trailer_pos, big_endian) as usize;
        if trailing != len {
            return Err(format!(
                "corrupt pcapng block at byte {at}: it starts with length {len} and ends with {trailing}"
            ));
        }
        Ok(())
    }

    fn next_pcapng(&mut self) -> Result<Option<Packet<'_>>, String> {
        loop {
            if !self.fill(12)? {
                return self.end_or_cut("pcapng block header", 12);
            }
            let at = self.consumed;
            let b = &self.buf[self.pos..self.end];
            let mut big_endian = self.ng_big_endian;
            if u32::from_le_bytes([b[0], b[1], b[2], b[3]]) == 0x0a0d_0d0a {
                // A section header sets the byte order of everything up to the next one.
                big_endian = match u32::from_le_bytes([b[8], b[9], b[10], b[11]]) {
                    0x1a2b_3c4d => false,
                    0x4d3c_2b1a => true,
                    m => {
                        return Err(format!(
                            "corrupt pcapng section header at byte {at}: byte-order magic {m:#010x}"
                        ))
                    }
                };
                self.ng_big_endian = big_endian;
                self.ng_linktypes.clear();
            }
            let block_type = u32_at(b, 0, big_endian);
            let len = u32_at(b, 4, big_endian) as usize;
            let packet_block = matches!(block_type, 2 | 3 | 6);
            if len < 12 || !len.is_multiple_of(4) || (packet_block && len > MAX_PACKET_BLOCK) {
                return Err(format!(
                    "corrupt pcapng block at byte {at}: type {block_type:#x} of {len} bytes"
                ));
            }
            if !packet_block {
                // Only an interface's link type matters here; the rest is skipped unheld.
                if block_type == 1 {
                    if len < 20 {
                        return Err(format!(
                            "corrupt pcapng interface block at byte {at}: {len} bytes"
                        ));
                    }
                    if !self.fill(16)? {
                        let have = (self.end - self.pos) as u64;
                        return Err(cut("pcapng interface block", at, len, have));
                    }
                    let linktype = u32::from(u16_at(&self.buf, self.pos + 8, big_endian));
                    self.ng_linktypes.push(linktype);
                }
                self.skip_block(at, len, big_endian)?;
                continue;
            }
            if !self.fill(len)? {
                return Err(cut("pcapng block", at, len, (self.end - self.pos) as u64));
            }
            self.trailer(at, len, self.pos + len - 4, big_endian)?;
            let start = self.pos;
            self.advance(len);
            let b = &self.buf[start..start + len];
            let body_end = len - 4;
            let (interface, caplen, data_at) = match block_type {
                // Enhanced packet.
                6 if len >= 32 => (
                    u32_at(b, 8, big_endian) as usize,
                    u32_at(b, 20, big_endian) as usize,
                    28,
                ),
                // Simple packet: interface 0, captured length the original one cut to the block.
                3 if len >= 16 => (
                    0,
                    (u32_at(b, 8, big_endian) as usize).min(body_end - 12),
                    12,
                ),
                // Obsolete packet block.
                2 if len >= 32 => (
                    usize::from(u16_at(b, 8, big_endian)),
                    u32_at(b, 20, big_endian) as usize,
                    28,
                ),
                _ => {
                    return Err(format!(
                        "corrupt pcapng packet block at byte {at}: type {block_type} of {len} bytes"
                    ))
                }
            };
            if caplen > body_end - data_at {
                return Err(format!(
                    "corrupt pcapng packet block at byte {at}: it claims {caplen} captured bytes and holds {}",
                    body_end - data_at
                ));
            }
            let linktype = *self.ng_linktypes.get(interface).ok_or_else(|| {
                format!("pcapng: packet block at byte {at} on undeclared interface {interface}")
            })?;
            self.number += 1;
            return Ok(Some(Packet {
                number: self.number,
                linktype,
                data: &self.buf[start + data_at..start + data_at + caplen],
            }));
        }
    }
}

/// An IPv4 or IPv6 address, IPv4 in the first 4 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Addr {
    pub v6: bool,
    pub bytes: [u8; 16],
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.v6 {
            write!(f, "[{}]", std::net::Ipv6Addr::from(self.bytes))
        } else {
            let b = self.bytes;
            write!(f, "{}", std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]))
        }
    }
}

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;

/// A TCP segment as captured.
pub struct Segment<'a> {
    pub src: Addr,
    pub dst: Addr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub flags: u8,
    /// The payload bytes captured.
    pub payload: &'a [u8],
    /// Payload bytes the packet carried but the capture cut off (snap length).
    pub missing: usize,
}

/// Why a packet yields no segment worth counting.
pub enum Skip {
    /// Not TCP, or not IP: not our business.
    Other,
    /// A link type this reader does not decode: whatever it carries goes unchecked.
    LinkType,
    /// An IP fragment: its TCP header may be elsewhere.
    Fragment,
    /// Too short for the headers it announces.
    Malformed,
}

/// Decodes the link, IP and TCP headers of a packet.
pub fn segment(linktype: u32, data: &[u8]) -> Result<Segment<'_>, Skip> {
    let ip = match linktype {
        LINKTYPE_ETHERNET => {
            let mut at = 12;
            loop {
                let t = u16::from_be_bytes([
                    *data.get(at).ok_or(Skip::Malformed)?,
                    *data.get(at + 1).ok_or(Skip::Malformed)?,
                ]);
                match t {
                    0x8100 | 0x88a8 | 0x9100 => at += 4,
                    0x0800 | 0x86dd => break data.get(at + 2..).ok_or(Skip::Malformed)?,
                    _ => return Err(Skip::Other),
                }
            }
        }
        LINKTYPE_LINUX_SLL => data.get(16..).ok_or(Skip::Malformed)?,
        LINKTYPE_LINUX_SLL2 => data.get(20..).ok_or(Skip::Malformed)?,
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 | 12 | 14 => data,
        LINKTYPE_NULL | LINKTYPE_LOOP => data.get(4..).ok_or(Skip::Malformed)?,
        _ => return Err(Skip::LinkType),
    };
    let version = ip.first().ok_or(Skip::Malformed)? >> 4;
    let (src, dst, tcp, declared) = match version {
        4 => {
            if ip.len() < 20 {
                return Err(Skip::Malformed);
            }
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            if ip[9] != 6 {
                return Err(Skip::Other);
            }
            let frag = u16::from_be_bytes([ip[6], ip[7]]);
            if frag & 0x3fff != 0 {
                return Err(Skip::Fragment);
            }
            let mut s = [0u8; 16];
            let mut d = [0u8; 16];
            s[..4].copy_from_slice(&ip[12..16]);
            d[..4].copy_from_slice(&ip[16..20]);
            // Segmentation offload can leave the total length 0: trust the capture then.
            let total = if total == 0 { ip.len() } else { total };
            if ihl < 20 || total < ihl {
                return Err(Skip::Malformed);
            }
            let tcp = ip.get(ihl..).ok_or(Skip::Malformed)?;
            (
                Addr {
                    v6: false,
                    bytes: s,
                },
                Addr {
                    v6: false,
                    bytes: d,
                },
                tcp,
                total - ihl,
            )
        }
        6 => {
            if ip.len() < 40 {
                return Err(Skip::Malformed);
            }
            let payload_len = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            let mut next = ip[6];
            let mut at = 40;
            loop {
                match next {
                    6 => break,
                    0 | 43 | 60 => {
                        let h = ip.get(at..at + 2).ok_or(Skip::Malformed)?;
                        next = h[0];
                        at += (usize::from(h[1]) + 1) * 8;
                    }
                    44 => return Err(Skip::Fragment),
                    _ => return Err(Skip::Other),
                }
            }
            let s: [u8; 16] = ip[8..24].try_into().expect("16 bytes");
            let d: [u8; 16] = ip[24..40].try_into().expect("16 bytes");
            let payload_len = if payload_len == 0 {
                ip.len() - 40
            } else {
                payload_len
            };
            let tcp = ip.get(at..).ok_or(Skip::Malformed)?;
            let declared = (payload_len + 40).checked_sub(at).ok_or(Skip::Malformed)?;
            (
                Addr { v6: true, bytes: s },
                Addr { v6: true, bytes: d },
                tcp,
                declared,
            )
        }
        _ => return Err(Skip::Other),
    };
    if tcp.len() < 20 {
        return Err(Skip::Malformed);
    }
    let doff = usize::from(tcp[12] >> 4) * 4;
    if doff < 20 || declared < doff {
        return Err(Skip::Malformed);
    }
    let declared_payload = declared - doff;
    let captured = tcp.get(doff..).unwrap_or(&[]);
    let payload = &captured[..captured.len().min(declared_payload)];
    Ok(Segment {
        src,
        dst,
        sport: u16::from_be_bytes([tcp[0], tcp[1]]),
        dport: u16::from_be_bytes([tcp[2], tcp[3]]),
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        flags: tcp[13],
        missing: declared_payload - payload.len(),
        payload,
    })
}

#[cfg(test)]
mod tests;
