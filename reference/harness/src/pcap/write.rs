//! Packet captures of one CQL connection: the two byte streams of a session written as a
//! classic libpcap file (LINKTYPE_ETHERNET, Ethernet / IPv4 / TCP), ready for Wireshark.
//!
//! The capture is one TCP connection from `127.0.0.1:<client port>` to `127.0.0.1:9042`: the
//! three-way handshake (SYN and SYN-ACK carry an MSS option), the data in conversation order as a
//! list of [`Turn`]s, each cut into segments of at most [`Options::mss`] bytes (PSH on a turn's
//! last segment), a pure ACK from the receiver after every second segment (after every segment
//! when two would not fit the 65535-byte window) and at the end of each turn, then a FIN/ACK from each side and the last ACK. Every IPv4 header checksum and TCP
//! checksum is computed. Nothing depends on the clock: packet `n` is stamped
//! [`EPOCH_SECONDS`] + `n` ms, so the same input always gives the same bytes.
//!
//! The headers and the pcap records are written here by hand (about a hundred lines) rather than
//! with `etherparse` / `pcap-file`: the layout is fixed and tiny, and byte-for-byte determinism of
//! the golden captures then depends on no third-party crate's version.

use cqlframe::envelope::split_envelopes;

/// The CQL native protocol port.
pub const SERVER_PORT: u16 = 9042;
/// The client's (ephemeral) port unless [`Options::client_port`] says otherwise.
pub const DEFAULT_CLIENT_PORT: u16 = 50042;
/// Largest TCP payload per segment unless [`Options::mss`] says otherwise (Ethernet MTU 1500).
pub const DEFAULT_MSS: usize = 1460;
/// Largest MSS that still fits an IPv4 packet (65535 - 20 - 20).
pub const MAX_MSS: usize = 65495;
/// Time stamp of the first packet: 2024-01-01T00:00:00Z, in seconds since the Unix epoch.
pub const EPOCH_SECONDS: u32 = 1_704_067_200;
/// The receive window both ends advertise (no window scaling).
pub const WINDOW: u16 = 65535;
/// Both ends' address: a loopback connection.
pub const ADDRESS: [u8; 4] = [127, 0, 0, 1];

/// pcap snapshot length: larger than any packet written.
const SNAPLEN: u32 = 262_144;
pub const LINKTYPE_ETHERNET: u32 = 1;
const ETHERTYPE_IPV4: u16 = 0x0800;
const IPPROTO_TCP: u8 = 6;
const TTL: u8 = 64;

/// TCP flags.
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// Which end of the connection sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    Client,
    Server,
}

impl Peer {
    pub fn index(self) -> usize {
        match self {
            Peer::Client => 0,
            Peer::Server => 1,
        }
    }

    pub fn other(self) -> Peer {
        match self {
            Peer::Client => Peer::Server,
            Peer::Server => Peer::Client,
        }
    }
}

/// One application write: `bytes` sent by `from` before the other end answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn<'a> {
    pub from: Peer,
    pub bytes: &'a [u8],
}

impl<'a> Turn<'a> {
    pub const fn client(bytes: &'a [u8]) -> Self {
        Turn {
            from: Peer::Client,
            bytes,
        }
    }

    pub const fn server(bytes: &'a [u8]) -> Self {
        Turn {
            from: Peer::Server,
            bytes,
        }
    }
}

/// How the connection is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Largest TCP payload per segment, 1 to [`MAX_MSS`]; also announced in the SYN options.
    pub mss: usize,
    pub client_port: u16,
    pub server_port: u16,
    /// Initial sequence numbers (the SYNs carry them).
    pub client_isn: u32,
    pub server_isn: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mss: DEFAULT_MSS,
            client_port: DEFAULT_CLIENT_PORT,
            server_port: SERVER_PORT,
            client_isn: 0x1c5a_0000,
            server_isn: 0x5e4b_0000,
        }
    }
}

impl Options {
    /// The same connection cut into segments of at most `mss` bytes (1 and 7 make a
    /// dissector reassemble across many segments).
    pub fn resegment(self, mss: usize) -> Self {
        Options { mss, ..self }
    }
}

/// How the two ends wrote their handshake envelopes (the manifest's `handshake_writes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HandshakeWrites {
    /// Request 1, response 1, request 2, ...: each end waits for the other's envelope.
    #[default]
    LockStep,
    /// The client's handshake requests in one write, then the server's answers in one write: a
    /// client may write OPTIONS and STARTUP without waiting (LIFE-3), a server its answers.
    Together,
}

impl HandshakeWrites {
    pub const ALL: [HandshakeWrites; 2] = [HandshakeWrites::LockStep, HandshakeWrites::Together];

    pub fn name(self) -> &'static str {
        match self {
            HandshakeWrites::LockStep => "lock-step",
            HandshakeWrites::Together => "together",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        HandshakeWrites::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// The turns of a session, from its two streams and where the server answers STARTUP
/// (the manifest's `server_switch_offset` and `server_responds_after`):
///
/// 1. the handshake: `client[..server_responds_after]` and `server[..server_switch]` (the whole
///    server stream when `server_switch` is `None`). Written [`HandshakeWrites::Together`], it
///    is one client turn and one server turn. Written [`HandshakeWrites::LockStep`], both are
///    split at envelope boundaries and taken in lock step (request 1, response 1, request 2,
///    ...), except that the server's last handshake envelope (the STARTUP response) follows
///    every client byte of the handshake part; a part that is not a sequence of whole envelopes
///    stays one turn;
/// 2. the rest of the client stream;
/// 3. the rest of the server stream.
///
/// Empty turns are left out and consecutive turns of one side are kept as separate writes.
pub fn session_turns<'a>(
    client: &'a [u8],
    server: &'a [u8],
    server_switch: Option<usize>,
    server_responds_after: usize,
    writes: HandshakeWrites,
) -> Result<Vec<Turn<'a>>, WriteError> {
    let switch = server_switch.unwrap_or(server.len());
    if server_responds_after > client.len() {
        return Err(WriteError::ResponsePastClientStream {
            at: server_responds_after,
            len: client.len(),
        });
    }
    if switch > server.len() {
        return Err(WriteError::SwitchPastServerStream {
            at: switch,
            len: server.len(),
        });
    }
    let (client_hs, client_rest) = client.split_at(server_responds_after);
    let (server_hs, server_rest) = server.split_at(switch);
    let pieces = |bytes: &'a [u8]| match writes {
        HandshakeWrites::LockStep => split_envelopes(bytes).unwrap_or_else(|_| vec![bytes]),
        HandshakeWrites::Together => vec![bytes],
    };
    let requests = pieces(client_hs);
    let responses = pieces(server_hs);
    let mut turns = Vec::new();
    let mut push = |from, bytes: &'a [u8]| {
        if !bytes.is_empty() {
            turns.push(Turn { from, bytes });
        }
    };
    let lock_step = responses.len().saturating_sub(1);
    for (i, response) in responses[..lock_step].iter().enumerate() {
        if let Some(request) = requests.get(i) {
            push(Peer::Client, request);
        }
        push(Peer::Server, response);
    }
    for request in requests.iter().skip(lock_step) {
        push(Peer::Client, request);
    }
    if let Some(last) = responses.last() {
        push(Peer::Server, last);
    }
    push(Peer::Client, client_rest);
    push(Peer::Server, server_rest);
    Ok(turns)
}

/// Why a capture cannot be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("MSS {0} is not in 1..={MAX_MSS}")]
    Mss(usize),
    #[error("server_responds_after {at} is past the client stream ({len} bytes)")]
    ResponsePastClientStream { at: usize, len: usize },
    #[error("server switch offset {at} is past the server stream ({len} bytes)")]
    SwitchPastServerStream { at: usize, len: usize },
}

/// The capture of one connection carrying `turns`, as the bytes of a pcap file.
pub fn pcap(turns: &[Turn], options: &Options) -> Result<Vec<u8>, WriteError> {
    if !(1..=MAX_MSS).contains(&options.mss) {
        return Err(WriteError::Mss(options.mss));
    }
    let mut w = Writer::new(options);
    let mss_option = {
        let m = u16::try_from(options.mss)
            .expect("checked above")
            .to_be_bytes();
        [2, 4, m[0], m[1]]
    };
    // Three-way handshake.
    w.segment(Peer::Client, SYN, &mss_option, &[]);
    w.segment(Peer::Server, SYN | ACK, &mss_option, &[]);
    w.segment(Peer::Client, ACK, &[], &[]);
    // Data.
    for turn in turns {
        let count = turn.bytes.len().div_ceil(options.mss);
        let mut unacked = (0usize, 0usize); // segments, bytes
        for (i, chunk) in turn.bytes.chunks(options.mss).enumerate() {
            let last = i + 1 == count;
            let flags = if last { PSH | ACK } else { ACK };
            w.segment(turn.from, flags, &[], chunk);
            unacked = (unacked.0 + 1, unacked.1 + chunk.len());
            if last || unacked.0 == 2 || unacked.1 + options.mss > usize::from(WINDOW) {
                w.segment(turn.from.other(), ACK, &[], &[]);
                unacked = (0, 0);
            }
        }
    }
    // Close: the client's FIN, the server's FIN (acknowledging it), the last ACK.
    w.segment(Peer::Client, FIN | ACK, &[], &[]);
    w.segment(Peer::Server, FIN | ACK, &[], &[]);
    w.segment(Peer::Client, ACK, &[], &[]);
    Ok(w.out)
}

/// The pcap file under construction.
struct Writer {
    out: Vec<u8>,
    packets: u32,
    tcp: Segments,
}

impl Writer {
    fn new(options: &Options) -> Self {
        Writer {
            out: file_header(),
            packets: 0,
            tcp: Segments::new(options),
        }
    }

    /// Writes one TCP segment from `from`, stamped [`EPOCH_SECONDS`] + its number in ms.
    fn segment(&mut self, from: Peer, flags: u8, tcp_options: &[u8], payload: &[u8]) {
        let frame = self.tcp.frame(from, flags, tcp_options, payload);
        let n = self.packets;
        self.packets += 1;
        record(
            &mut self.out,
            EPOCH_SECONDS + n / 1000,
            (n % 1000) * 1000,
            &frame,
        );
    }
}

/// The global header of a classic pcap file of Ethernet frames, microsecond time stamps.
pub fn file_header() -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes()); // microsecond time stamps
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes()); // thiszone
    out.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
    out.extend_from_slice(&SNAPLEN.to_le_bytes());
    out.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    out
}

/// Appends the record of one captured `frame` (whole, as it was on the wire) to `out`.
pub fn record(out: &mut Vec<u8>, seconds: u32, micros: u32, frame: &[u8]) {
    let len = frame.len() as u32;
    out.extend_from_slice(&seconds.to_le_bytes());
    out.extend_from_slice(&micros.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes()); // captured
    out.extend_from_slice(&len.to_le_bytes()); // on the wire
    out.extend_from_slice(frame);
}

/// Both ends' TCP state of one connection, each segment made as an Ethernet frame: for a
/// capture written at once ([`pcap`]) or as a connection runs (the proxy's).
pub struct Segments {
    ports: [u16; 2],
    /// Next sequence number each end sends.
    next_seq: [u32; 2],
    /// Whether each end has seen the other's SYN (until then it acknowledges nothing).
    synced: [bool; 2],
    ip_id: [u16; 2],
}

impl Segments {
    pub fn new(options: &Options) -> Self {
        Segments {
            ports: [options.client_port, options.server_port],
            next_seq: [options.client_isn, options.server_isn],
            synced: [false, false],
            ip_id: [0x2a00, 0x7b00],
        }
    }

    /// The frame of one TCP segment from `from` (at most [`MAX_MSS`] bytes of `payload`); the
    /// sender's sequence number advances past it.
    pub fn frame(&mut self, from: Peer, flags: u8, tcp_options: &[u8], payload: &[u8]) -> Vec<u8> {
        let (me, peer) = (from.index(), from.other().index());
        let seq = self.next_seq[me];
        let ack = if flags & ACK != 0 {
            self.next_seq[peer]
        } else {
            0
        };
        let advance = payload.len() as u32 + u32::from(flags & (SYN | FIN) != 0);
        self.next_seq[me] = seq.wrapping_add(advance);
        if flags & SYN != 0 {
            self.synced[peer] = true;
        }
        debug_assert!(flags & ACK == 0 || self.synced[me]);

        debug_assert!(tcp_options.len().is_multiple_of(4));
        let tcp_len = 20 + tcp_options.len() + payload.len();
        let total = u16::try_from(20 + tcp_len).expect("MSS bounds the packet");
        // Loopback-style Ethernet header: both addresses zero, as Linux captures on `lo`.
        let mut frame = Vec::with_capacity(14 + 20 + tcp_len);
        frame.extend_from_slice(&[0; 12]);
        frame.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let mut ip = [0u8; 20];
        ip[0] = 0x45; // version 4, 5 words
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[4..6].copy_from_slice(&self.ip_id[me].to_be_bytes());
        self.ip_id[me] = self.ip_id[me].wrapping_add(1);
        ip[6] = 0x40; // don't fragment
        ip[8] = TTL;
        ip[9] = IPPROTO_TCP;
        ip[12..16].copy_from_slice(&ADDRESS);
        ip[16..20].copy_from_slice(&ADDRESS);
        let sum = internet_checksum(&[&ip]);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        frame.extend_from_slice(&ip);
        let tcp = frame.len();
        frame.extend_from_slice(&self.ports[me].to_be_bytes());
        frame.extend_from_slice(&self.ports[peer].to_be_bytes());
        frame.extend_from_slice(&seq.to_be_bytes());
        frame.extend_from_slice(&ack.to_be_bytes());
        frame.push((((20 + tcp_options.len()) / 4) as u8) << 4);
        frame.push(flags);
        frame.extend_from_slice(&WINDOW.to_be_bytes());
        frame.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        frame.extend_from_slice(tcp_options);
        frame.extend_from_slice(payload);
        let sum = tcp_checksum(ADDRESS, ADDRESS, &frame[tcp..]);
        frame[tcp + 16..tcp + 18].copy_from_slice(&sum.to_be_bytes());
        frame
    }
}

/// The Internet checksum (RFC 1071) of the concatenation of `parts`, each of even length
/// except possibly the last.
fn internet_checksum(parts: &[&[u8]]) -> u16 {
    // Eight bytes at a time: 2^64, 2^48, 2^32 and 2^16 are all 1 modulo 0xffff, so the sum of
    // big-endian 64-bit words folds to the sum of their 16-bit words.
    let mut sum = 0u128;
    for part in parts {
        let mut words = part.chunks_exact(8);
        for w in &mut words {
            sum += u128::from(u64::from_be_bytes(w.try_into().expect("8 bytes")));
        }
        let mut rest = words.remainder().chunks_exact(2);
        for w in &mut rest {
            sum += u128::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [last] = rest.remainder() {
            sum += u128::from(*last) << 8;
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The TCP checksum of `segment` (header with a zero checksum field, and payload).
pub(super) fn tcp_checksum(src: [u8; 4], dst: [u8; 4], segment: &[u8]) -> u16 {
    let len = (segment.len() as u16).to_be_bytes();
    let pseudo = [
        src[0],
        src[1],
        src[2],
        src[3],
        dst[0],
        dst[1],
        dst[2],
        dst[3],
        0,
        IPPROTO_TCP,
        len[0],
        len[1],
    ];
    internet_checksum(&[&pseudo, segment])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One packet of a capture, parsed back.
    #[derive(Debug)]
    struct Packet {
        ts: (u32, u32),
        src_port: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        mss_option: Option<u16>,
        payload: Vec<u8>,
    }

    /// Parses a capture written by [`pcap`], checking every header field and checksum with
    /// code independent of the writer's (a plain byte-pair sum over the whole header or the
    /// pseudo-header and segment must fold to 0xffff).
    fn parse(file: &[u8]) -> Vec<Packet> {
        let le32 = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().unwrap());
        let be16 = |b: &[u8]| u16::from_be_bytes(b[..2].try_into().unwrap());
        let be32 = |b: &[u8]| u32::from_be_bytes(b[..4].try_into().unwrap());
        let fold = |bytes: &[u8]| {
            let mut padded = bytes.to_vec();
            if padded.len() % 2 == 1 {
                padded.push(0);
            }
            let mut sum: u32 = padded
                .chunks(2)
                .map(|w| u32::from(w[0]) * 256 + u32::from(w[1]))
                .sum();
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            sum
        };
        assert_eq!(
            &file[..24],
            &[0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1, 0, 0, 0]
        );
        let mut packets = Vec::new();
        let mut at = 24;
        while at < file.len() {
            let (sec, usec, incl, orig) = (
                le32(&file[at..]),
                le32(&file[at + 4..]),
                le32(&file[at + 8..]) as usize,
                le32(&file[at + 12..]) as usize,
            );
            assert_eq!(incl, orig);
            let frame = &file[at + 16..at + 16 + incl];
            at += 16 + incl;
            assert_eq!(&frame[..14], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0]);
            let ip = &frame[14..34];
            assert_eq!(ip[0], 0x45);
            assert_eq!(be16(&ip[2..]) as usize, frame.len() - 14);
            assert_eq!((ip[6], ip[7], ip[8], ip[9]), (0x40, 0, 64, 6));
            assert_eq!(&ip[12..20], &[127, 0, 0, 1, 127, 0, 0, 1]);
            assert_eq!(fold(ip), 0xffff, "IPv4 header checksum");
            let tcp = &frame[34..];
            let mut pseudo = vec![127, 0, 0, 1, 127, 0, 0, 1, 0, 6];
            pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
            pseudo.extend_from_slice(tcp);
            assert_eq!(fold(&pseudo), 0xffff, "TCP checksum");
            let header_len = usize::from(tcp[12] >> 4) * 4;
            assert_eq!(tcp[12] & 0x0f, 0);
            assert_eq!(be16(&tcp[14..]), WINDOW);
            assert_eq!(be16(&tcp[18..]), 0);
            let mss_option = match header_len {
                20 => None,
                24 => {
                    assert_eq!(&tcp[20..22], &[2, 4]);
                    Some(be16(&tcp[22..]))
                }
                other => panic!("TCP header of {other} bytes"),
            };
            let (src_port, dst_port) = (be16(tcp), be16(&tcp[2..]));
            assert!(
                (src_port, dst_port) == (DEFAULT_CLIENT_PORT, SERVER_PORT)
                    || (src_port, dst_port) == (SERVER_PORT, DEFAULT_CLIENT_PORT)
            );
            packets.push(Packet {
                ts: (sec, usec),
                src_port,
                seq: be32(&tcp[4..]),
                ack: be32(&tcp[8..]),
                flags: tcp[13],
                mss_option,
                payload: tcp[header_len..].to_vec(),
            });
        }
        assert_eq!(at, file.len());
        packets
    }

    /// Checks the TCP conversation of `packets` and returns the bytes each side sent, with
    /// the payload sizes of the client's and the server's segments.
    fn conversation(packets: &[Packet], mss: usize) -> [(Vec<u8>, Vec<usize>); 2] {
        let side = |p: &Packet| usize::from(p.src_port == SERVER_PORT);
        let o = Options::default();
        assert_eq!(packets[0].flags, SYN);
        assert_eq!(packets[0].seq, o.client_isn);
        assert_eq!(packets[1].flags, SYN | ACK);
        assert_eq!(packets[1].seq, o.server_isn);
        assert_eq!(packets[1].ack, o.client_isn + 1);
        assert_eq!(packets[0].mss_option, Some(mss as u16));
        assert_eq!(packets[1].mss_option, Some(mss as u16));
        let n = packets.len();
        assert_eq!(
            packets[n - 3..]
                .iter()
                .map(|p| (side(p), p.flags))
                .collect::<Vec<_>>(),
            [(0, FIN | ACK), (1, FIN | ACK), (0, ACK)]
        );
        // Expected next sequence number of each side, and the highest acknowledged.
        let mut next = [o.client_isn, o.server_isn];
        let mut acked = [o.client_isn, o.server_isn];
        let mut out: [(Vec<u8>, Vec<usize>); 2] = Default::default();
        for (i, p) in packets.iter().enumerate() {
            assert_eq!(
                p.ts,
                (EPOCH_SECONDS + i as u32 / 1000, (i as u32 % 1000) * 1000)
            );
            let (me, peer) = (side(p), 1 - side(p));
            assert_eq!(p.seq, next[me], "packet {i}: sequence continues");
            if i > 0 {
                assert!(p.flags & ACK != 0);
                assert_eq!(p.ack, next[peer], "packet {i}: acknowledges all received");
                assert!(p.ack.wrapping_sub(acked[peer]) <= u32::from(WINDOW));
                acked[peer] = p.ack;
            }
            // Nothing outstanding may exceed the window.
            assert!(next[me].wrapping_sub(acked[me]) <= u32::from(WINDOW));
            assert!(p.mss_option.is_none() || p.flags & SYN != 0);
            assert!(p.payload.len() <= mss);
            if !p.payload.is_empty() {
                out[me].0.extend_from_slice(&p.payload);
                out[me].1.push(p.payload.len());
            }
            let advance = p.payload.len() as u32 + u32::from(p.flags & (SYN | FIN) != 0);
            next[me] = next[me].wrapping_add(advance);
            // At most two data segments go unacknowledged.
            if i >= 2 && !p.payload.is_empty() {
                let unacked_segments = packets[..=i]
                    .iter()
                    .rev()
                    .take_while(|q| side(q) == me)
                    .filter(|q| !q.payload.is_empty())
                    .count();
                assert!(unacked_segments <= 2, "packet {i}");
            }
        }
        assert_eq!(acked, next, "everything acknowledged at the end");
        out
    }

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn checksums_sequence_and_segments() {
        let (a, b, c) = (bytes(3000, 1), bytes(4381, 2), bytes(5, 3));
        let turns = [Turn::client(&a), Turn::server(&b), Turn::client(&c)];
        for mss in [1, 7, 536, DEFAULT_MSS, 4000, MAX_MSS] {
            let file = pcap(&turns, &Options::default().resegment(mss)).unwrap();
            let [client, server] = conversation(&parse(&file), mss);
            assert_eq!(client.0, [a.clone(), c.clone()].concat());
            assert_eq!(server.0, b);
            let sizes = |len: usize| {
                let mut v = vec![mss; len / mss];
                if !len.is_multiple_of(mss) {
                    v.push(len % mss);
                }
                v
            };
            assert_eq!(client.1, [sizes(a.len()), sizes(c.len())].concat());
            assert_eq!(server.1, sizes(b.len()));
        }
    }

    #[test]
    fn psh_ends_each_turn_and_acks_follow() {
        let (a, b) = (bytes(3000, 4), bytes(10, 5));
        let turns = [Turn::client(&a), Turn::server(&b)];
        let packets = parse(&pcap(&turns, &Options::default()).unwrap());
        let summary: Vec<(u16, u8, usize)> = packets
            .iter()
            .map(|p| (p.src_port, p.flags, p.payload.len()))
            .collect();
        let (c, s) = (DEFAULT_CLIENT_PORT, SERVER_PORT);
        assert_eq!(
            summary,
            [
                (c, SYN, 0),
                (s, SYN | ACK, 0),
                (c, ACK, 0),
                (c, ACK, 1460),
                (c, ACK, 1460),
                (s, ACK, 0),
                (c, PSH | ACK, 80),
                (s, ACK, 0),
                (s, PSH | ACK, 10),
                (c, ACK, 0),
                (c, FIN | ACK, 0),
                (s, FIN | ACK, 0),
                (c, ACK, 0),
            ]
        );
    }

    #[test]
    fn sequence_numbers_wrap() {
        let a = bytes(5000, 6);
        let turns = [Turn::client(&a)];
        let options = Options {
            client_isn: u32::MAX - 1000,
            ..Options::default()
        };
        let packets = parse(&pcap(&turns, &options).unwrap());
        let data: Vec<u8> = packets.iter().flat_map(|p| p.payload.clone()).collect();
        assert_eq!(data, a);
        assert_eq!(
            packets.last().unwrap().seq,
            (u32::MAX - 1000).wrapping_add(5002)
        );
    }

    #[test]
    fn deterministic_and_empty() {
        let a = bytes(100, 7);
        let turns = [Turn::server(&a)];
        assert_eq!(
            pcap(&turns, &Options::default()),
            pcap(&turns, &Options::default())
        );
        let packets = parse(&pcap(&[], &Options::default()).unwrap());
        assert_eq!(packets.len(), 6);
        conversation(&packets, DEFAULT_MSS);
        assert!(pcap(&[], &Options::default().resegment(0)).is_err());
        assert!(pcap(&[], &Options::default().resegment(MAX_MSS + 1)).is_err());
    }

    #[test]
    fn known_checksums() {
        // RFC 1071 example bytes, and an IPv4 header from the wild (checksum 0xb861).
        assert_eq!(
            internet_checksum(&[&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]]),
            !0xddf2
        );
        let header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(internet_checksum(&[&header]), 0xb861);
        // An odd-length part only at the end is padded with a zero byte.
        assert_eq!(
            internet_checksum(&[&[0x12, 0x34], &[0x56]]),
            !(0x1234u16 + 0x5600)
        );
    }

    #[test]
    fn session_turns_follow_the_handshake() {
        use cqlframe::envelope::{envelope_bytes, Opcode};
        let options = envelope_bytes(5, 0, 0, Opcode::Options, &[]);
        let startup = envelope_bytes(5, 0, 1, Opcode::Startup, b"\0\0");
        let supported = envelope_bytes(0x85, 0, 0, Opcode::Supported, b"\0\0");
        let ready = envelope_bytes(0x85, 0, 1, Opcode::Ready, &[]);
        let client = [options.clone(), startup.clone(), b"framed query".to_vec()].concat();
        let server = [supported.clone(), ready.clone(), b"framed rows".to_vec()].concat();
        let responds = options.len() + startup.len();
        let switch = supported.len() + ready.len();
        let turns = session_turns(
            &client,
            &server,
            Some(switch),
            responds,
            HandshakeWrites::LockStep,
        )
        .unwrap();
        let want: [(Peer, &[u8]); 6] = [
            (Peer::Client, &options),
            (Peer::Server, &supported),
            (Peer::Client, &startup),
            (Peer::Server, &ready),
            (Peer::Client, b"framed query"),
            (Peer::Server, b"framed rows"),
        ];
        assert_eq!(
            turns,
            want.map(|(from, bytes)| Turn { from, bytes }).to_vec()
        );
        // Written together: one turn a side for the handshake.
        let together = HandshakeWrites::Together;
        let turns = session_turns(&client, &server, Some(switch), responds, together).unwrap();
        let both = |a: &[u8], b: &[u8]| [a, b].concat();
        let want: [(Peer, &[u8]); 4] = [
            (Peer::Client, &both(&options, &startup)),
            (Peer::Server, &both(&supported, &ready)),
            (Peer::Client, b"framed query"),
            (Peer::Server, b"framed rows"),
        ];
        assert_eq!(
            turns,
            want.map(|(from, bytes)| Turn { from, bytes }).to_vec()
        );
        // Bytes that are not envelopes stay one turn; an empty side gives no turn.
        let lock_step = HandshakeWrites::LockStep;
        let turns = session_turns(b"not an envelope", &[], None, 15, lock_step).unwrap();
        assert_eq!(turns, [Turn::client(b"not an envelope")]);
        assert!(session_turns(b"ab", &[], None, 3, lock_step).is_err());
        assert!(session_turns(b"ab", b"c", Some(2), 2, lock_step).is_err());
    }
}
