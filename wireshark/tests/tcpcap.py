"""Captures with what TCP and capturing do to a connection: segments cut at any boundary, both
sides' bytes coalesced or interleaved, segments out of order or sent twice, segments lost or cut
by a snap length, and captures that start after the connection did.

`cqlframe pcap` writes one well-behaved connection; the differential test (differential.py)
needs many connections per capture (tshark starts slowly) and each of those artefacts, so the
segments are laid out here and written as Ethernet / IPv4 / TCP packets (checksums zero: neither
tool verifies them). Python 3.11 standard library.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

SERVER_PORT = 9042
ISN = {"client": 1000, "server": 5000}
SYN, FIN, ACK, PSH = 0x02, 0x01, 0x10, 0x08


@dataclass
class Segment:
    """A packet of one connection: who sent it, at which stream offset (0: the first byte after
    the SYN), the payload, the TCP flags, and how many payload bytes the capture lost (a snap
    length cut: the packet is on the wire whole, the capture keeps its head)."""
    side: str
    offset: int
    payload: bytes
    flags: int = ACK | PSH
    cut: int = 0


@dataclass
class Layout:
    """One connection's packets in capture order."""
    client_port: int
    segments: list[Segment] = field(default_factory=list)


def segments(side: str, data: bytes, start: int, sizes: random.Random | list[int], mss: int) -> list[Segment]:
    """`data` (stream bytes from `start`) as segments of at most `mss` bytes; with an rng, of
    random sizes up to mss (a cut at any boundary)."""
    out, at = [], 0
    while at < len(data):
        n = mss if isinstance(sizes, list) else sizes.randint(1, mss)
        out.append(Segment(side, start + at, data[at:at + n]))
        at += n
    return out


def handshake() -> list[Segment]:
    """The SYN handshake."""
    return [Segment("client", -1, b"", SYN), Segment("server", -1, b"", SYN | ACK),
            Segment("client", 0, b"", ACK)]


def closing(ends: dict[str, int]) -> list[Segment]:
    """Each side's FIN, after its last byte."""
    return [Segment("client", ends["client"], b"", FIN | ACK),
            Segment("server", ends["server"], b"", FIN | ACK)]


def write(path, layouts: list[Layout]) -> None:
    """Every layout's packets, connection after connection, in one pcap (Ethernet, IPv4)."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    t = 0
    for layout in layouts:
        for s in layout.segments:
            client = (b"\x7f\x00\x00\x01", layout.client_port)
            server = (b"\x7f\x00\x00\x02", SERVER_PORT)
            (src, sport), (dst, dport) = (client, server) if s.side == "client" else (server, client)
            other = "server" if s.side == "client" else "client"
            seq = (ISN[s.side] + 1 + s.offset) & 0xFFFFFFFF
            ack = (ISN[other] + 1) & 0xFFFFFFFF
            flags = s.flags
            tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, ack if flags & ACK else 0, 5 << 4,
                              flags, 65535, 0, 0)
            wire = len(s.payload)
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + 20 + wire, 0, 0x4000, 64, 6, 0, src, dst)
            eth = b"\x00" * 12 + b"\x08\x00"
            kept = s.payload[:wire - s.cut]
            frame = eth + ip + tcp + kept
            t += 1
            out += struct.pack("<IIII", t // 1000000, t % 1000000, len(frame), len(frame) + s.cut)
            out += frame
    with open(path, "wb") as f:
        f.write(out)
