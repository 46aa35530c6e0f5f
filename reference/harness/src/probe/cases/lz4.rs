//! LZ4 payloads: blocks a receiver must refuse.

use super::injection::fault;
use super::steps::{Ctx, Evidence};
use crate::lz4_by_hand::{lz4_block_frame, one_match_block};
use cqlframe::envelope::Opcode;

cases!(
    fault_lz4_malformed,
    fault_lz4_length,
    fault_lz4_ends_after_match,
    fault_lz4_last_match_too_late
);

fn fault_lz4_malformed(ctx: &mut Ctx, v: &mut Evidence) {
    fault(
        ctx,
        v,
        "LZ4-4",
        true,
        "LZ4 block whose match refers before the start of the output (checksums correct)",
        &|p| {
            // 1 literal, then a match at offset 255 (there is 1 byte of history), then 5 literals.
            let block = [0x10, b'A', 0xff, 0x00, 0x50, b'x', b'x', b'x', b'x', b'x'];
            lz4_block_frame(p.settings(), &block, 10)
        },
    )
}

fn fault_lz4_length(ctx: &mut Ctx, v: &mut Evidence) {
    fault(
        ctx,
        v,
        "LZ4-4",
        true,
        "LZ4 block of an OPTIONS envelope (9 bytes) declared as 16 bytes uncompressed",
        &|p| {
            let (_, e) = p.envelope(Opcode::Options, &[]);
            let block = lz4_flex::block::compress(&e);
            lz4_block_frame(p.settings(), &block, e.len() as u32 + 7)
        },
    )
}

/// A fault of one LZ4 block holding `count` OPTIONS envelopes (9 bytes each, alike but for
/// their stream ids in bytes 2 and 3) with one match of `length` bytes at `start`, taken from
/// one envelope (9 bytes) back. A server that does not check the block answers SUPPORTED.
fn options_in_one_match_block(
    ctx: &mut Ctx,
    v: &mut Evidence,
    rule: &str,
    what: &str,
    (count, start, length): (usize, usize, usize),
) {
    fault(ctx, v, rule, true, what, &|p| {
        let content: Vec<u8> = (0..count)
            .flat_map(|_| p.envelope(Opcode::Options, &[]).1)
            .collect();
        let block = one_match_block(&content, start, 9, length);
        lz4_block_frame(p.settings(), &block, content.len() as u32)
    })
}

fn fault_lz4_ends_after_match(ctx: &mut Ctx, v: &mut Evidence) {
    options_in_one_match_block(ctx, v, "LZ4-4", "two OPTIONS envelopes in one LZ4 block that ends right after a match (the second's last 5 bytes from 9 back; checksums correct)", (2, 13, 5));
}

fn fault_lz4_last_match_too_late(ctx: &mut Ctx, v: &mut Evidence) {
    options_in_one_match_block(ctx, v, "LZ4-6", "three OPTIONS envelopes in one LZ4 block whose one match starts 11 bytes before the end (LZ4 asks for 12; 7 closing literals, checksums correct)", (3, 16, 4));
}
