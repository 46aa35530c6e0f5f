//! The pcap of a case's session: every connection the driver opened, both directions, as the
//! server read and wrote them, written with [`crate::pcap::write`] (one TCP connection per
//! driver connection, client port = the driver's real port, server port 9042 so that CQL
//! dissectors pick it up). Connections follow one another in the file (packet `n` of the file is
//! stamped `n` ms after the capture epoch): concurrent connections are not interleaved, so the
//! file shows each connection's conversation in order, not the wall-clock overlap.

use super::write::{
    self as capture, Options, Turn, WriteError, DEFAULT_CLIENT_PORT, EPOCH_SECONDS,
};

/// Size of the pcap global header, and of a record header.
const GLOBAL_HEADER: usize = 24;
const RECORD_HEADER: usize = 16;

/// One connection as a server recorded it.
pub struct Recorded<'a> {
    /// The client's TCP port; 0 when unknown (the capture then numbers the connections).
    pub client_port: u16,
    /// Both byte streams in the order they were read and written: (from the client, bytes).
    pub turns: &'a [(bool, Vec<u8>)],
}

/// The capture of all `connections` (in order), one pcap file.
pub fn session_pcap(connections: &[Recorded]) -> Result<Vec<u8>, WriteError> {
    let mut out = Vec::new();
    let mut packet: u32 = 0;
    for (i, conn) in connections.iter().enumerate() {
        let turns: Vec<Turn> = conn
            .turns
            .iter()
            .map(|(from_client, bytes)| {
                if *from_client {
                    Turn::client(bytes)
                } else {
                    Turn::server(bytes)
                }
            })
            .collect();
        let client_port = match conn.client_port {
            0 => DEFAULT_CLIENT_PORT.wrapping_add(i as u16),
            p => p,
        };
        let options = Options {
            client_port,
            // Distinct sequence spaces per connection help a reader tell them apart.
            client_isn: 0x1c5a_0000u32.wrapping_add((i as u32) << 20),
            server_isn: 0x5e4b_0000u32.wrapping_add((i as u32) << 20),
            ..Options::default()
        };
        let file = capture::pcap(&turns, &options)?;
        if out.is_empty() {
            out.extend_from_slice(&file[..GLOBAL_HEADER]);
        }
        // Re-stamp the records so that the file's time stamps keep increasing.
        let mut at = GLOBAL_HEADER;
        while at + RECORD_HEADER <= file.len() {
            let len = u32::from_le_bytes(file[at + 8..at + 12].try_into().expect("4 bytes"));
            let end = at + RECORD_HEADER + len as usize;
            out.extend_from_slice(&(EPOCH_SECONDS + packet / 1000).to_le_bytes());
            out.extend_from_slice(&((packet % 1000) * 1000).to_le_bytes());
            out.extend_from_slice(&file[at + 8..end]);
            packet += 1;
            at = end;
        }
    }
    if out.is_empty() {
        // No connection at all: an empty capture (global header only).
        let file = capture::pcap(&[], &Options::default())?;
        out.extend_from_slice(&file[..GLOBAL_HEADER]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of a pcap file: (seconds, microseconds, frame).
    fn records(file: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
        let le = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().unwrap());
        let mut at = GLOBAL_HEADER;
        let mut v = Vec::new();
        while at < file.len() {
            let len = le(&file[at + 8..]) as usize;
            v.push((
                le(&file[at..]),
                le(&file[at + 4..]),
                file[at + 16..at + 16 + len].to_vec(),
            ));
            at += 16 + len;
        }
        assert_eq!(at, file.len());
        v
    }

    #[test]
    fn connections_follow_one_another() {
        let a_turns = [(true, b"abc".to_vec()), (false, b"de".to_vec())];
        let b_turns = [(true, b"f".to_vec())];
        let a = Recorded {
            client_port: 40000,
            turns: &a_turns,
        };
        let b = Recorded {
            client_port: 40001,
            turns: &b_turns,
        };
        let one = capture::pcap(
            &[Turn::client(b"abc"), Turn::server(b"de")],
            &Options {
                client_port: 40000,
                ..Options::default()
            },
        )
        .unwrap();
        let file = session_pcap(&[a, b]).unwrap();
        assert_eq!(&file[..GLOBAL_HEADER], &one[..GLOBAL_HEADER]);
        let recs = records(&file);
        let first = records(&one);
        // The first connection's packets are unchanged; the second follows.
        assert_eq!(recs[..first.len()], first[..]);
        assert_eq!(recs.len(), first.len() + 3 + 2 + 3);
        for (n, (sec, usec, _)) in recs.iter().enumerate() {
            assert_eq!(
                (*sec, *usec),
                (EPOCH_SECONDS + n as u32 / 1000, (n as u32 % 1000) * 1000)
            );
        }
        // Second connection: source port 40001 in its SYN.
        let syn = &recs[first.len()].2;
        assert_eq!(u16::from_be_bytes([syn[34], syn[35]]), 40001);
        assert_eq!(session_pcap(&[]).unwrap().len(), GLOBAL_HEADER);
    }
}
