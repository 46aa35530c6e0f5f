//! The kit's judge (`rules::Judge`, what `cqlframe check`, the probe and the conformance server
//! ask) on both directions of a connection: fuzzer bytes as what the client and the server
//! wrote, in fuzzer-chosen turns, then the end of both streams.
//!
//! Input layout:
//! ```text
//! byte 0  bits 0-1: what the judge is told of the node (cqlframe_fuzz::judge_node): nothing,
//!         so it learns from SUPPORTED; LZ4 with CRC32 and CRC32C; a node that predates
//!         FRAME_CHECKSUM; no LZ4 and CRC32 only.  bits 2-4: max envelope body (MAX_BODY)
//! then    turns: a big-endian u16 (bit 15: the server wrote it; bits 0-14: the length), then
//!         that many bytes (fewer at the end of the input)
//! ```
//! Findings are the senders' faults; panics are not. Checked: every finding points at a byte
//! its direction has delivered, nothing is found in a direction after a fatal finding there
//! (RECV-11), and a direction with a fatal finding is no longer judged.
#![no_main]

use cqlframe_fuzz::{judge_node, MAX_BODY};
use cqlframe_harness::rules::{Direction, Finding, Judge};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&b0, mut rest)) = data.split_first() else {
        return;
    };
    let max_body = MAX_BODY[usize::from(b0 >> 2 & 7)];
    let mut judge = match judge_node(b0) {
        Some(node) => Judge::for_node(node, max_body),
        None => Judge::new(max_body),
    };
    let mut received = [0u64; 2];
    let mut fatal = [false; 2];
    while let [hi, lo, tail @ ..] = rest {
        let turn = u16::from_be_bytes([*hi, *lo]);
        let d = if turn & 0x8000 == 0 {
            Direction::ClientToServer
        } else {
            Direction::ServerToClient
        };
        let (bytes, after) = tail.split_at(usize::from(turn & 0x7fff).min(tail.len()));
        rest = after;
        received[d.index()] += bytes.len() as u64;
        let mut found = Vec::new();
        judge.receive(d, bytes, &mut found);
        check(&found, &judge, &received, &mut fatal);
    }
    let mut found = Vec::new();
    for d in Direction::BOTH {
        judge.finish(d, &mut found);
    }
    check(&found, &judge, &received, &mut fatal);
});

/// The invariants on what one call found; `fatal` notes the directions that had a fatal finding.
fn check(found: &[Finding], judge: &Judge, received: &[u64; 2], fatal: &mut [bool; 2]) {
    for f in found {
        let d = f.direction.index();
        assert!(!fatal[d], "{f:?} after a fatal finding in its direction");
        assert!(
            f.offset < received[d],
            "{f:?} points past the {} bytes delivered",
            received[d]
        );
        fatal[d] |= f.fatal;
    }
    for d in Direction::BOTH {
        if fatal[d.index()] {
            assert!(judge.stopped(d), "{d:?} judged on after a fatal finding");
        }
    }
}
