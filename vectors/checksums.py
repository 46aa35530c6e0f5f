"""The framing checksums in Python, written from the spec's catalogue (spec/framing_v6.adoc,
"Checksums"), not from the Rust reference: CRC24 (CRC-1), CRC32 seeded with FA 2D 55 CA (CRC-2),
unseeded CRC32C (CRC-3). The test scripts that write or read frames share them (the Kaitai
runner's kaitai/tests/checks.py, the dissector tests' wireshark/tests/wire.py); the catalogue's
check values hold them to the spec (CATALOGUE). Standard library only.
"""

from __future__ import annotations

import zlib

CRC32_SEED = bytes([0xFA, 0x2D, 0x55, 0xCA])
_SEEDED = zlib.crc32(CRC32_SEED)


def crc24(data: bytes) -> int:
    """CRC24 of CRC-1: width 24, poly 0x974F0B, init 0x875060, not reflected, xorout 0."""
    crc = 0x875060
    for b in data:
        crc ^= b << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1974F0B
    return crc & 0xFFFFFF


def _reflected_table(poly_reflected: int) -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly_reflected if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C_TABLE = _reflected_table(0x82F63B78)  # 0x1EDC6F41 reflected


def crc32_seeded(payload: bytes) -> int:
    """CRC-2: CRC-32/ISO-HDLC (zlib's) over FA 2D 55 CA followed by the payload."""
    return zlib.crc32(payload, _SEEDED)


def crc32c(payload: bytes) -> int:
    """CRC-3: CRC-32/ISCSI over the payload, no seed."""
    crc = 0xFFFFFFFF
    for b in payload:
        crc = _CRC32C_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def payload_checksum(algorithm: str, payload: bytes) -> int:
    """The payload checksum of a frame: CRC-2 for `crc32`, CRC-3 for `crc32c`."""
    return {"crc32": crc32_seeded, "crc32c": crc32c}[algorithm](payload)


# Catalogue check values (spec, "Checksums"): (name, function, input, expected).
CATALOGUE = [
    ("crc24 check value", crc24, b"123456789", 0x4B3F02),
    ("crc32 seeded check value", crc32_seeded, b"123456789", 0xE2A261A7),
    ("crc32 seeded, empty payload", crc32_seeded, b"", 0x44777ED3),
    ("crc32c check value", crc32c, b"123456789", 0xE3069283),
    ("crc32 unseeded (ISO-HDLC) check value", zlib.crc32, b"123456789", 0xCBF43926),
]
