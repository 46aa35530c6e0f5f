"""Independent checksum and LZ4 block code for the Kaitai test runner (Python).

Written from the spec's catalogue (spec/framing_v6.adoc, "Checksums" and "LZ4
payloads"), not from the Rust reference: the checksums of vectors/checksums.py (CRC24,
CRC-1; CRC32 seeded with FA 2D 55 CA, CRC-2; unseeded CRC32C, CRC-3), which the dissector's
tests share, and a strict raw LZ4 block decoder (LZ4-1, LZ4-4, LZ4-6). Standard library only.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "vectors"))
from checksums import CATALOGUE, crc24, crc32_seeded, crc32c, payload_checksum  # noqa: E402,F401


class Lz4Malformed(Exception):
    """The block is not a valid LZ4 block (the sender broke LZ4-1; the receiver fails LZ4-4)."""


class Lz4LengthMismatch(Exception):
    """The block does not decompress to exactly the declared length (LZ4-4)."""


class Lz4EndOfBlock(Exception):
    """The block decodes, but its last match starts less than 12 or ends less than 5 bytes
    before the end (the sender broke LZ4-5; the receiver fails LZ4-6)."""


def _extended_length(block: bytes, i: int, length: int, what: str) -> tuple[int, int]:
    """A 4-bit length of a sequence's token, extended when it is 15: add the bytes from
    block[i] on, up to and including the first that is not 255. Returns (length, next i)."""
    if length == 15:
        while True:
            if i >= len(block):
                raise Lz4Malformed(f"{what} length runs past the block")
            b = block[i]
            i += 1
            length += b
            if b != 255:
                break
    return length, i


def lz4_block_decompress(block: bytes, declared: int) -> bytes:
    """Decode one raw LZ4 block into exactly `declared` bytes, bounds-checked.

    Raises Lz4LengthMismatch when the output would exceed `declared` or ends short
    of it, Lz4Malformed when the block itself is broken (runs past its input, a
    match offset of 0 or before the start of the output), and then Lz4EndOfBlock when
    the last match lies too close to the end (LZ4's end-of-block rules).
    """
    out = bytearray()
    last_match = None
    i, n = 0, len(block)
    if n == 0:
        raise Lz4Malformed("empty block")
    while True:
        if i >= n:  # the block ended after a match: its last sequence must be literals only
            raise Lz4Malformed("block ends where a token is expected")
        token = block[i]
        i += 1
        lit, i = _extended_length(block, i, token >> 4, "literal")
        if i + lit > n:
            raise Lz4Malformed("literals run past the block")
        if len(out) + lit > declared:
            raise Lz4LengthMismatch("output would exceed the declared length")
        out += block[i:i + lit]
        i += lit
        if i == n:  # the last sequence carries literals only
            break
        if i + 2 > n:
            raise Lz4Malformed("match offset runs past the block")
        offset = block[i] | block[i + 1] << 8
        i += 2
        if offset == 0 or offset > len(out):
            raise Lz4Malformed("match offset outside the decompressed output")
        mlen, i = _extended_length(block, i, token & 15, "match")
        mlen += 4
        if len(out) + mlen > declared:
            raise Lz4LengthMismatch("output would exceed the declared length")
        last_match = (len(out), len(out) + mlen)
        start = len(out) - offset
        for k in range(mlen):  # byte by byte: matches may overlap their output
            out.append(out[start + k])
    if len(out) != declared:
        raise Lz4LengthMismatch(f"block yields {len(out)} bytes, header declares {declared}")
    if last_match and (last_match[0] + 12 > declared or last_match[1] + 5 > declared):
        raise Lz4EndOfBlock(f"last match over {last_match[0]}..{last_match[1]} of {declared} bytes")
    return bytes(out)
