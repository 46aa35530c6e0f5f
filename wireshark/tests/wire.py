"""Envelopes and frames written byte by byte, so that a test can write the frame that breaks a
rule by one byte, and the one that comes within a byte of it (spec/framing_v6.adoc: FMT-1..FMT-13,
CRC-1..CRC-3, LZ4-1..LZ4-5). `selftest` holds these writers to the reference: frames written here
equal what `cqlframe encode` writes for the same envelopes. Python 3.11 standard library.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "vectors"))
from checksums import crc24, payload_checksum  # noqa: E402,F401  (CRC-1..CRC-3, shared)

MAX_PAYLOAD = 131071


def envelope(version: int, flags: int, stream: int, opcode: int, body: bytes = b"", length: int | None = None) -> bytes:
    """An envelope (ENV-1); `length` overrides the body length field."""
    return struct.pack(">BBhBi", version, flags, stream, opcode, len(body) if length is None else length) + body


def frame(payload: bytes, fmt: str = "uncompressed", checksum: str = "crc32", self_contained: bool = True,
          reserved: int = 0, checksum_bit: bool | None = None, uncompressed: int | None = None,
          trailer: int | None = None, header_crc: int | None = None) -> bytes:
    """A frame of `payload` (for lz4: the block as written, `uncompressed` its content length, 0
    for stored). Each keyword breaks one field: reserved bits, the checksum bit, the trailer, the
    header CRC24 (None: the right value)."""
    bit = (checksum == "crc32c") if checksum_bit is None else checksum_bit
    if fmt == "uncompressed":
        word = len(payload) | self_contained << 17 | bit << 18 | reserved << 19
        head = word.to_bytes(3, "little")
    else:
        word = len(payload) | (uncompressed or 0) << 17 | self_contained << 34 | bit << 35 | reserved << 36
        head = word.to_bytes(5, "little")
    crc = crc24(head) if header_crc is None else header_crc
    t = payload_checksum(checksum, payload) if trailer is None else trailer
    return head + crc.to_bytes(3, "little") + payload + struct.pack("<I", t)


def lz4_literals(content: bytes) -> bytes:
    """An LZ4 block of literals only: valid (LZ4-1, LZ4-5), never shorter than its content."""
    n = len(content)
    if n < 15:
        return bytes([n << 4]) + content
    rest, ext = n - 15, bytearray()
    while rest >= 255:
        ext.append(255)
        rest -= 255
    ext.append(rest)
    return bytes([0xF0]) + bytes(ext) + content


def lz4_repeat(byte: int, n: int) -> bytes:
    """An LZ4 block of `n` (>= 13) copies of `byte`: one literal, one match of offset 1, five
    literals at the end (LZ4-5)."""
    match = n - 1 - 5
    token_m = min(match - 4, 15)
    out = bytearray([1 << 4 | token_m, byte, 1, 0])
    rest = match - 4 - 15
    if token_m == 15:
        while rest >= 255:
            out.append(255)
            rest -= 255
        out.append(rest)
    out += bytes([5 << 4]) + bytes([byte]) * 5
    return bytes(out)


def split(envelopes: bytes, fmt: str, checksum: str, pieces: list[int] | None = None) -> bytes:
    """Envelopes framed: self-contained frames of whole envelopes up to MAX_PAYLOAD, or, with
    `pieces`, one sequence of non-self-contained frames of those content lengths (stored LZ4)."""
    def one(content: bytes, sc: bool) -> bytes:
        if fmt == "lz4":
            return frame(content, "lz4", checksum, sc, uncompressed=0)
        return frame(content, fmt, checksum, sc)
    if pieces is None:
        return one(envelopes, True)
    out, at = b"", 0
    for n in pieces:
        out += one(envelopes[at:at + n], False)
        at += n
    return out


def selftest(cqlframe: str) -> list[str]:
    """Frames written here against `cqlframe encode` for the same envelopes: the differences."""
    envs = envelope(5, 0, 1, 7, b"SELECT 1") + envelope(5, 0, 2, 7, b"x" * 300)
    problems = []
    for checksum in ("crc32", "crc32c"):
        r = subprocess.run([cqlframe, "encode", "--format", "uncompressed", "--checksum", checksum, "-"],
                           input=envs, capture_output=True, check=True)
        if r.stdout != frame(envs, "uncompressed", checksum):
            problems.append(f"uncompressed {checksum} frame differs from cqlframe encode")
    return problems
