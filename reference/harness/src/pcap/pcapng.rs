//! pcapng writing, for the reader's tests and the fuzz seeds: a section with one interface and
//! the packets as enhanced packet blocks, in either byte order (tshark reads both alike).

use super::read::Reader;

/// One block of `kind` holding `body`, padded to 32 bits, its length before and after.
pub fn block(kind: u32, body: &[u8], big_endian: bool) -> Vec<u8> {
    let word = |v: u32| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let pad = (4 - body.len() % 4) % 4;
    let len = (12 + body.len() + pad) as u32;
    let mut b = word(kind).to_vec();
    b.extend_from_slice(&word(len));
    b.extend_from_slice(body);
    b.extend_from_slice(&vec![0; pad]);
    b.extend_from_slice(&word(len));
    b
}

/// A section header, one interface of `linktype`, and an enhanced packet block per packet.
pub fn section(linktype: u16, packets: &[Vec<u8>], big_endian: bool) -> Vec<u8> {
    let word = |v: u32| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut shb = word(0x1a2b_3c4d).to_vec();
    let version = if big_endian {
        [0, 1, 0, 0]
    } else {
        [1, 0, 0, 0]
    };
    shb.extend_from_slice(&version);
    shb.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
    let mut out = block(0x0a0d_0d0a, &shb, big_endian);
    let mut idb = if big_endian {
        linktype.to_be_bytes()
    } else {
        linktype.to_le_bytes()
    }
    .to_vec();
    idb.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // reserved, snap length 0 (none)
    out.extend(block(1, &idb, big_endian));
    for p in packets {
        let mut epb = word(0).to_vec(); // interface 0
        epb.extend_from_slice(&[0; 8]); // time stamp
        epb.extend_from_slice(&word(p.len() as u32));
        epb.extend_from_slice(&word(p.len() as u32));
        epb.extend_from_slice(p);
        out.extend(block(6, &epb, big_endian));
    }
    out
}

/// The packets of a capture (pcap or pcapng) and the link type of the first.
pub fn packets(capture: &[u8]) -> Result<(u16, Vec<Vec<u8>>), String> {
    let mut reader = Reader::new(capture)?;
    let mut linktype = 0;
    let mut packets = Vec::new();
    while let Some(p) = reader.next_packet()? {
        linktype = p.linktype as u16;
        packets.push(p.data.to_vec());
    }
    Ok((linktype, packets))
}
