//! `cqlframe check`'s input path on fuzzer bytes as the capture file: the pcap/pcapng reader,
//! packet decoding, TCP reassembly and the checker's connection table (small envelope limit).
//! Input: the file. Errors are fine; panics are not. Checked: a capture is read to its clean
//! end only if every byte of it was consumed (a file cut or corrupt is an error), every error
//! past the file header names a byte offset, and no packet exceeds the reader's limit.
#![no_main]

use cqlframe_harness::check::{Checker, Event};
use cqlframe_harness::pcap::read::{Reader, MAX_PACKET};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = Reader::new(data) else {
        return;
    };
    let mut checker = Checker::new(vec![9042], 4096);
    let mut connections = 0usize;
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                assert!(
                    p.data.len() <= MAX_PACKET,
                    "packet of {} bytes",
                    p.data.len()
                );
                checker.packet(p.number, p.linktype, p.data, &mut |e| {
                    if let Event::Closed(_) = e {
                        connections += 1;
                    }
                });
            }
            Ok(None) => {
                assert_eq!(
                    reader.consumed(),
                    data.len() as u64,
                    "a clean end before the end"
                );
                break;
            }
            Err(e) => {
                assert!(e.contains("at byte "), "error without an offset: {e}");
                break;
            }
        }
    }
    checker.finish(&mut |e| {
        if let Event::Closed(_) = e {
            connections += 1;
        }
    });
    assert_eq!(connections, checker.totals.connections);
});
