"""The three checksums and the LZ4 block decoder of spec/framing_v6.adoc, by hand.

CRC24: <<CRC-1>> and "Computing CRC24". CRC32: <<CRC-2>>, CRC-32/ISO-HDLC over the
seed FA 2D 55 CA and the payload; that is exactly zlib's crc32 fed the seed first, as
"Computing CRC32 and CRC32C" says, so zlib is used. CRC32C: <<CRC-3>>, CRC-32/ISCSI,
by table. LZ4: "LZ4 payloads" (<<LZ4-4>>, <<LZ4-6>>).
"""
import zlib

SEED = bytes.fromhex("fa2d55ca")


def crc24(data):
    crc = 0x875060
    for b in data:
        crc ^= b << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1974F0B
    return crc & 0xFFFFFF


def crc32(payload):
    return zlib.crc32(payload, zlib.crc32(SEED))


def _table(poly_reflected):
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly_reflected if c & 1 else c >> 1
        table.append(c)
    return table


_C32C = _table(0x82F63B78)  # 0x1EDC6F41 reflected


def crc32c(payload):
    crc = 0xFFFFFFFF
    t = _C32C
    for b in payload:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# The catalogue's check values ("Checksum parameters"); a wrong algorithm fails at import.
assert crc24(b"123456789") == 0x4B3F02
assert crc32(b"123456789") == 0xE2A261A7 and crc32(b"") == 0x44777ED3
assert crc32c(b"123456789") == 0xE3069283


class Lz4Error(Exception):
    """The block fails <<LZ4-4>> ('malformed' or 'length') or <<LZ4-6>> ('end_of_block')."""

    def __init__(self, rule, why):
        super().__init__(f"{rule}: {why}")
        self.rule = rule


def lz4_decode(src, ulen):
    """Decodes one raw block into exactly `ulen` bytes, then holds it to the end-of-block rules."""
    out = bytearray()
    i, n, last = 0, len(src), None

    def fail(why):
        raise Lz4Error("LZ4-4", why)

    def length(base):
        nonlocal i
        if base != 15:
            return base
        while True:
            if i >= n:
                fail("length runs past the block")
            b = src[i]
            i += 1
            base += b
            if b != 255:
                return base

    while True:
        if i >= n:
            fail("block ends without closing literals")
        token = src[i]
        i += 1
        lit = length(token >> 4)
        if i + lit > n:
            fail("literals past the end of the block")
        if len(out) + lit > ulen:
            fail("literals past the declared length")
        out += src[i:i + lit]
        i += lit
        if i == n:
            break  # the last sequence: literals only
        if i + 2 > n:
            fail("offset past the end of the block")
        off = src[i] | src[i + 1] << 8
        i += 2
        if off == 0 or off > len(out):
            fail("offset outside the output")
        ml = length(token & 15) + 4
        if len(out) + ml > ulen:
            fail("match past the declared length")
        start = len(out) - off
        if off >= ml:
            out += out[start:start + ml]
        else:
            out += (out[start:] * (ml // off + 1))[:ml]
        last = (len(out) - ml, len(out))
    if len(out) != ulen:
        raise Lz4Error("LZ4-4", f"decodes to {len(out)} bytes, declared {ulen}")
    if last and (last[0] > ulen - 12 or last[1] > ulen - 5):
        raise Lz4Error("LZ4-6", f"last match {last[0]}..{last[1]} of {ulen}")
    return bytes(out)



def _lz4_example():
    """The example of "LZ4 payloads": decodes to aaaaaaaaaaab and fails <<LZ4-6>>."""
    try:
        lz4_decode(bytes.fromhex("166101001062"), 12)
    except Lz4Error as e:
        return e.rule
    return None


assert _lz4_example() == "LZ4-6"
