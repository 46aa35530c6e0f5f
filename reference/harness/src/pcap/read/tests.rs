//! The reader on hostile captures: claimed lengths that the file does not hold, files cut
//! anywhere, sections of both byte orders, blocks that contradict themselves. Each is an error
//! naming a byte offset, never a clean end, and the buffer never grows to what a record claims.

use super::{segment, Reader, Skip, BUFFER};
use crate::pcap::pcapng::{self, block};
use std::path::PathBuf;

fn vector_pcap() -> Vec<u8> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../vectors/pcap/session.v5-lz4.pcap");
    std::fs::read(path).expect("vector capture")
}

/// Every packet's data, or the reader's error, and the largest the buffer grew.
fn read_all(capture: &[u8]) -> (Result<Vec<Vec<u8>>, String>, usize) {
    let mut r = match Reader::new(capture) {
        Ok(r) => r,
        Err(e) => return (Err(e), 0),
    };
    let mut packets = Vec::new();
    let mut largest = r.buf.len();
    loop {
        let next = r.next_packet().map(|p| p.map(|p| p.data.to_vec()));
        largest = largest.max(r.buf.len());
        match next {
            Ok(Some(p)) => packets.push(p),
            Ok(None) => return (Ok(packets), largest),
            Err(e) => return (Err(e), largest),
        }
    }
}

fn section(packets: &[Vec<u8>], big: bool) -> Vec<u8> {
    pcapng::section(1, packets, big)
}

fn packets() -> Vec<Vec<u8>> {
    read_all(&vector_pcap()).0.expect("vector capture reads")
}

fn assert_error_at(result: Result<Vec<Vec<u8>>, String>, offset: usize, what: &str) {
    let e = result.expect_err(what);
    assert!(e.contains(&format!("at byte {offset}")), "{what}: {e}");
}

#[test]
fn a_record_claiming_more_than_the_file_holds_is_reported_not_allocated() {
    // A 200 MB record claimed in a 140-byte file: the claim must not be allocated.
    let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&200_000_000u32.to_le_bytes());
    f.extend_from_slice(&200_000_000u32.to_le_bytes());
    f.extend_from_slice(&[0; 100]);
    let (result, largest) = read_all(&f);
    assert_error_at(result, 24, "200 MB record");
    assert!(largest <= BUFFER, "buffer grew to {largest}");
    // Just under the limit, the claim is still not allocated: the buffer grows with the bytes.
    f[32..36].copy_from_slice(&(super::MAX_PACKET as u32).to_le_bytes());
    let (result, largest) = read_all(&f);
    assert_error_at(result, 140, "cut record");
    assert!(largest <= BUFFER, "buffer grew to {largest}");
}

#[test]
fn a_pcapng_block_claiming_more_than_the_file_holds_is_reported_not_allocated() {
    for kind in [6, 0x0bad, 1] {
        let mut f = section(&packets()[..2], false);
        let at = f.len();
        let mut tail = block(kind, &[0; 64], false);
        tail[4..8].copy_from_slice(&(256u32 << 20).to_le_bytes());
        f.extend(tail);
        let (result, largest) = read_all(&f);
        assert_error_at(result, at, &format!("block type {kind:#x}"));
        assert!(largest <= BUFFER, "buffer grew to {largest}");
    }
}

#[test]
fn a_file_cut_anywhere_is_an_error_unless_cut_between_records() {
    let whole = vector_pcap();
    let ng = section(&packets(), false);
    for (name, file, first) in [("pcap", &whole, 24), ("pcapng", &ng, 28)] {
        let mut boundaries = vec![first];
        let mut at = first;
        while at < file.len() {
            at += if name == "pcap" {
                16 + u32::from_le_bytes(file[at + 8..at + 12].try_into().unwrap()) as usize
            } else {
                u32::from_le_bytes(file[at + 4..at + 8].try_into().unwrap()) as usize
            };
            boundaries.push(at);
        }
        for n in first..file.len() {
            let (result, _) = read_all(&file[..n]);
            if boundaries.contains(&n) {
                assert!(result.is_ok(), "{name} cut at {n}: {result:?}");
            } else {
                assert_error_at(result, n, &format!("{name} cut at {n}"));
            }
        }
    }
    // `head -c 200` of a vector capture: a file cut short, as a failed copy leaves it.
    assert_error_at(read_all(&whole[..200]).0, 200, "head -c 200");
}

#[test]
fn sections_of_both_byte_orders_are_read() {
    let p = packets();
    let mut f = section(&p[..3], false);
    f.extend(section(&p[3..], true));
    assert_eq!(read_all(&f).0.expect("two sections"), p);
    let mut f = section(&p[..3], true);
    f.extend(section(&p[3..], false));
    assert_eq!(read_all(&f).0.expect("two sections"), p);
}

#[test]
fn a_section_header_of_the_wrong_byte_order_is_corrupt() {
    // A second section whose byte-order magic says big-endian while its lengths are
    // little-endian: its length read big-endian is absurd, or its trailer disagrees.
    let p = packets();
    let mut f = section(&p[..3], false);
    let at = f.len();
    let mut second = section(&p[3..], false);
    second[8..12].copy_from_slice(&0x1a2b_3c4du32.to_be_bytes());
    f.extend(second);
    assert_error_at(read_all(&f).0, at, "byte-order mix-up");
}

#[test]
fn a_block_whose_trailer_disagrees_is_corrupt() {
    let p = packets();
    let mut f = section(&p[..2], false);
    let at = f.len();
    let mut bad = block(6, &[0; 40], false);
    let n = bad.len();
    bad[n - 4] ^= 4;
    f.extend(bad);
    assert_error_at(read_all(&f).0, at, "trailer");
}

#[test]
fn a_captured_length_beyond_its_block_is_corrupt() {
    let p = packets();
    let mut f = section(&p[..1], false);
    let at = f.len();
    let mut epb = section(&p[1..2], false)[48..].to_vec(); // the EPB after the SHB and IDB
    epb[20] = epb[20].wrapping_add(8);
    f.extend(epb);
    assert_error_at(read_all(&f).0, at, "caplen past the block");
}

#[test]
fn an_unknown_link_type_is_told_apart_from_other_traffic() {
    let p = packets();
    assert!(matches!(segment(147, &p[0]), Err(Skip::LinkType)));
    assert!(segment(1, &p[0]).is_ok());
}
