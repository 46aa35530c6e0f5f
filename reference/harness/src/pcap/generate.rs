//! The benchmark input of `cqlframe check`: a large capture made by repeating session captures
//! (classic pcap, Ethernet / IPv4 / TCP, as `cqlframe pcap` writes them) as new connections,
//! each with its own client port, shifted sequence numbers and later time stamps. TCP
//! checksums are recomputed, so tshark sees a clean capture too.

use super::read::Reader;
use super::write;
use std::io::Write;
use std::path::{Path, PathBuf};

struct Source {
    /// (record header, packet bytes, IP header offset, TCP header offset)
    packets: Vec<([u8; 16], Vec<u8>, usize, usize)>,
    server_port: u16,
}

fn load(path: &Path) -> Result<Source, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() < 24 || bytes[..4] != [0xd4, 0xc3, 0xb2, 0xa1] || bytes[20] != 1 {
        return Err(format!(
            "{}: not a little-endian Ethernet pcap as `cqlframe pcap` writes",
            path.display()
        ));
    }
    let mut packets = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let head: [u8; 16] = bytes[at..at + 16].try_into().expect("16 bytes");
        let len = u32::from_le_bytes(head[8..12].try_into().expect("4")) as usize;
        let data = bytes[at + 16..at + 16 + len].to_vec();
        at += 16 + len;
        if data.len() < 14 + 20 + 20 || data[12..14] != [0x08, 0x00] || data[23] != 6 {
            return Err(format!("{}: a packet is not IPv4/TCP", path.display()));
        }
        let ihl = usize::from(data[14] & 0x0f) * 4;
        packets.push((head, data, 14, 14 + ihl));
    }
    // The server port is the destination of the first packet (the client's SYN).
    let (_, first, _, tcp) = packets.first().ok_or("empty capture")?;
    let server_port = u16::from_be_bytes([first[tcp + 2], first[tcp + 3]]);
    // Check the reader agrees about the file before it is repeated.
    let mut r = Reader::new(&bytes[..])?;
    let mut n = 0;
    while r.next_packet()?.is_some() {
        n += 1;
    }
    if n != packets.len() {
        return Err(format!("{}: packet count mismatch", path.display()));
    }
    Ok(Source {
        packets,
        server_port,
    })
}

fn tcp_checksum(packet: &[u8], ip: usize, tcp: usize) -> u16 {
    let total = usize::from(u16::from_be_bytes([packet[ip + 2], packet[ip + 3]]));
    let address = |at: usize| packet[at..at + 4].try_into().expect("4 bytes");
    write::tcp_checksum(address(ip + 12), address(ip + 16), &packet[tcp..ip + total])
}

pub fn run(from: &[PathBuf], out: &Path, megabytes: u64) -> Result<(), String> {
    let sources: Vec<Source> = from.iter().map(|p| load(p)).collect::<Result<_, _>>()?;
    if sources.is_empty() {
        return Err("--generate needs --from captures".into());
    }
    let file = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = std::io::BufWriter::with_capacity(4 << 20, file);
    let header: [u8; 24] = {
        let mut h = [0u8; 24];
        h[..4].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&262_144u32.to_le_bytes());
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        h
    };
    let io = |e: std::io::Error| format!("{}: {e}", out.display());
    w.write_all(&header).map_err(io)?;
    let target = megabytes << 20;
    let mut written = 24u64;
    let mut i: u32 = 0;
    let mut buf = Vec::new();
    while written < target {
        let src = &sources[i as usize % sources.len()];
        // Client ports 10000-59999: never the server port.
        let port = 10_000 + (i % 50_000) as u16;
        let dc = i.wrapping_mul(0x0100_0193);
        let ds = i.wrapping_mul(0x9e37_79b9);
        for (head, data, ip, tcp) in &src.packets {
            let (ip, tcp) = (*ip, *tcp);
            buf.clear();
            buf.extend_from_slice(data);
            let from_server = u16::from_be_bytes([buf[tcp], buf[tcp + 1]]) == src.server_port;
            let (port_at, own, peer) = if from_server {
                (tcp + 2, ds, dc)
            } else {
                (tcp, dc, ds)
            };
            buf[port_at..port_at + 2].copy_from_slice(&port.to_be_bytes());
            let seq = u32::from_be_bytes(buf[tcp + 4..tcp + 8].try_into().expect("4"));
            buf[tcp + 4..tcp + 8].copy_from_slice(&seq.wrapping_add(own).to_be_bytes());
            if buf[tcp + 13] & 0x10 != 0 {
                let ack = u32::from_be_bytes(buf[tcp + 8..tcp + 12].try_into().expect("4"));
                buf[tcp + 8..tcp + 12].copy_from_slice(&ack.wrapping_add(peer).to_be_bytes());
            }
            buf[tcp + 16..tcp + 18].copy_from_slice(&[0, 0]);
            let sum = tcp_checksum(&buf, ip, tcp);
            buf[tcp + 16..tcp + 18].copy_from_slice(&sum.to_be_bytes());
            let mut h = *head;
            let secs = u32::from_le_bytes(h[..4].try_into().expect("4")).wrapping_add(i * 2);
            h[..4].copy_from_slice(&secs.to_le_bytes());
            w.write_all(&h).map_err(io)?;
            w.write_all(&buf).map_err(io)?;
            written += 16 + buf.len() as u64;
        }
        i += 1;
    }
    w.flush().map_err(io)?;
    eprintln!(
        "{}: {} connections, {} MiB",
        out.display(),
        i,
        written >> 20
    );
    Ok(())
}
