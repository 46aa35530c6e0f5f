//! Frame formats: reserved header bits.

use super::steps::{ready, supported_ok, Ctx, Evidence, CQL};
use crate::wire_log::Dir;
use cqlframe::checksum::{crc24, PayloadChecksum};
use cqlframe::encoder::write_raw;
use cqlframe::envelope::Opcode;
use cqlframe::format::Format;
use cqlframe::header::FrameHeader;

cases!(reserved_bits);

fn reserved_bits(ctx: &mut Ctx, v: &mut Evidence) {
    let Some(mut p) = ready(ctx, v, 5, &[CQL], "FMT-12") else {
        return;
    };
    let (s, e) = p.envelope(Opcode::Options, &[]);
    let mut h = FrameHeader::new(Format::Uncompressed, e.len() as u32, 0, true, false);
    h.reserved = 0x10;
    h.crc24 = crc24(&h.word().to_le_bytes()[..3]);
    let mut bytes = Vec::new();
    write_raw(&h, &e, PayloadChecksum::Crc32.compute(&e), &mut bytes);
    p.note(
        Dir::C2s,
        "OPTIONS in a frame with reserved header bit 23 set (CRC24 correct)",
    );
    let _ = p.write(&bytes, 0);
    supported_ok(&mut p, v, s, "FMT-12", "a frame with a reserved bit set");
    v.keep(p);
}
