#!/usr/bin/env python3
"""Random connections, judged by the dissector and by the kit's rules engine: the same rules.

    python3 wireshark/tests/differential.py [--count N] [--seed S] [--jobs N] [--out DIR]

check_judge.py compares the two tools on the golden vectors' sessions, which each break one
rule on purpose. This draws connections that no one wrote by hand: OPTIONS on colliding streams,
version probes, requests with the response bit, STARTUPs of every version with any COMPRESSION
and FRAME_CHECKSUM, servers that list CRC32C or not, answer twice, on the wrong stream, in
another version, with EVENTs, with the ERROR that reports a framing error, requests pipelined
after STARTUP, bytes that are no envelope, frames in the negotiated format or not, a flipped
byte, each cut into TCP segments of 1 to 1460 bytes. Each connection is written by
`cqlframe pcap` (its streams and the story that made it sit beside the capture in --out), then
compared as check_judge.py compares a capture: per direction, the same (rule, sender rule,
level) set, or the test fails.

Prints each connection that differs, with its story, and "differential: N passed, M failed"
(two checks per connection, as check_judge.py counts them).
The same --seed draws the same connections. Python 3.11 standard library; needs tshark and the
cqlframe binary ($CQLFRAME_BIN, default target/release/cqlframe).
"""

from __future__ import annotations

import argparse
import os
import random
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from check_judge import CQLFRAME, ROOT, compare

# Opcodes (native_protocol_v5.spec section 2.4) and the flags the handshake uses.
ERROR, STARTUP, READY, AUTHENTICATE, OPTIONS, SUPPORTED, QUERY, RESULT, EVENT = (
    0x00, 0x01, 0x02, 0x03, 0x05, 0x06, 0x07, 0x08, 0x0C)
RESPONSE, USE_BETA = 0x80, 0x10
PROTOCOL_ERROR, SERVER_ERROR = 0x000A, 0x0000
MSS = (1, 7, 13, 64, 1460)
# Connections longer than this are cut into segments of 64 bytes or more (tshark's memory).
SMALL = 20000


def envelope(version: int, flags: int, stream: int, opcode: int, body: bytes = b"") -> bytes:
    return struct.pack(">BBhBi", version, flags, stream, opcode, len(body)) + body


def string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def string_map(entries: list[tuple[str, str]]) -> bytes:
    return struct.pack(">H", len(entries)) + b"".join(string(k) + string(v) for k, v in entries)


def string_multimap(entries: dict[str, list[str]]) -> bytes:
    return struct.pack(">H", len(entries)) + b"".join(
        string(k) + struct.pack(">H", len(v)) + b"".join(string(x) for x in v) for k, v in entries.items())


def error(code: int, message: str) -> bytes:
    return struct.pack(">i", code) + string(message)


def framed(envelopes: bytes, fmt: str, checksum: str, server_split: bool) -> bytes:
    """The envelopes framed by the reference (`cqlframe encode`)."""
    if not envelopes:
        return b""
    split = ["--server-split"] if server_split else []
    r = subprocess.run([str(CQLFRAME), "encode", "--format", fmt, "--checksum", checksum, *split, "-"],
                       input=envelopes, capture_output=True, check=True)
    return r.stdout


@dataclass
class Connection:
    """Both byte streams of one drawn connection, where the server answers STARTUP, and the
    story of the draw."""
    client: bytearray = field(default_factory=bytearray)
    server: bytearray = field(default_factory=bytearray)
    responds_after: int | None = None
    server_switch: int | None = None
    story: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        self.story.append(line)


def version_of_request(rng: random.Random) -> tuple[int, int]:
    """(version byte, flags) of a request: mostly v5, sometimes a probe, v4, v6 with or without
    USE_BETA, or the response bit by mistake."""
    return rng.choices([(5, 0), (0x42, 0), (4, 0), (6, USE_BETA), (6, 0), (0x85, 0)],
                       weights=[10, 2, 1, 2, 1, 1])[0]


def draw(rng: random.Random) -> Connection:
    c = Connection()
    streams = list(range(4))
    # None: a server that predates FRAME_CHECKSUMS; ["crc32c"] and [] break NEG-3
    listed = rng.choice([None, ["crc32"], ["crc32", "crc32c"], ["CRC32", "CRC32C"], ["crc32", "adler32"],
                         ["crc32c"], []])
    supported = string_multimap({"COMPRESSION": ["lz4"], "PROTOCOL_VERSIONS": ["3/v3", "4/v4", "5/v5", "6/v6-beta"],
                                 **({"FRAME_CHECKSUMS": listed} if listed is not None else {})})
    # before STARTUP: OPTIONS, each answered, refused, answered twice or not at all
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        v, f = version_of_request(rng)
        s = rng.choice(streams)
        c.client += envelope(v, f, s, OPTIONS)
        c.say(f"client OPTIONS version 0x{v:02x} flags 0x{f:02x} stream {s}")
        answer = rng.choices(["supported", "refuse", "twice", "wrong-stream", "none", "event"],
                             weights=[8, 2, 1, 1, 1, 1])[0]
        reply_version = 0x85 if v in (0x42, 0x85) or answer == "refuse" else v | RESPONSE
        reply_flags = USE_BETA if reply_version == 0x86 else 0
        if answer in ("supported", "twice", "wrong-stream"):
            out_stream = (s + 1) % 4 if answer == "wrong-stream" else s
            opcode, body = (ERROR, error(PROTOCOL_ERROR, "Invalid or unsupported protocol version")) \
                if v == 0x42 else (SUPPORTED, supported)
            c.server += envelope(reply_version, reply_flags, out_stream, opcode, body) * (2 if answer == "twice" else 1)
        elif answer == "refuse":
            c.server += envelope(0x84, 0, rng.choice(streams), ERROR, error(PROTOCOL_ERROR, "version refused"))
        elif answer == "event":
            c.server += envelope(0x85, 0, -1, EVENT, string("TOPOLOGY_CHANGE"))
        c.say(f"  server answers: {answer}")
    # STARTUP
    version = rng.choices([5, 6, 4], weights=[8, 2, 1])[0]
    options = [("CQL_VERSION", "3.0.0")]
    compression = rng.choice([None, "lz4", "LZ4", "snappy", ""])
    checksum = rng.choice([None, "crc32", "crc32c", "CRC32C", "adler32", ""])
    if compression:
        options.append((rng.choice(["COMPRESSION", "compression"]), compression))
    if checksum:
        options.append((rng.choice(["FRAME_CHECKSUM", "Frame_Checksum"]), checksum))
    if rng.random() < 0.05:
        options.append(rng.choice([("compression", "lz4"), ("FRAME_CHECKSUM", "crc32c")]))
    startup_stream = rng.choice(streams)
    flags = USE_BETA if version == 6 and rng.random() < 0.85 else 0
    c.client += envelope(version, flags, startup_stream, STARTUP, string_map(options))
    c.say(f"client STARTUP v{version} flags 0x{flags:02x} stream {startup_stream} {options}")
    if rng.random() < 0.12:
        c.client += envelope(version, flags, 3, QUERY, string("SELECT 1"))
        c.say("client pipelines a QUERY after STARTUP")
    if rng.random() < 0.05:
        junk = rng.choice([b"\x07" + bytes(8), envelope(5, 0, 2, OPTIONS)[:5] + struct.pack(">i", -2)])
        c.client += junk
        c.say(f"client writes bytes that are no envelope: {junk.hex()}")
    c.responds_after = len(c.client)
    if rng.random() < 0.08:
        c.server += envelope(0x85, 0, 0, ERROR, error(rng.choice([PROTOCOL_ERROR, SERVER_ERROR]), "fault"))
        c.say("server sends an ERROR on stream 0")
    # the STARTUP response
    response = rng.choices(["READY", "AUTHENTICATE", "ERROR", "refuse", "RESULT", "wrong-stream", "none"],
                           weights=[10, 2, 2, 2, 1, 1, 1])[0]
    rv = version | RESPONSE
    rf = USE_BETA if version == 6 else 0
    if response in ("READY", "wrong-stream"):
        c.server += envelope(rv, rf, startup_stream if response == "READY" else (startup_stream + 1) % 4, READY)
    elif response == "AUTHENTICATE":
        c.server += envelope(rv, rf, startup_stream, AUTHENTICATE, string("PasswordAuthenticator"))
    elif response == "ERROR":
        # another error code than PROTOCOL_ERROR breaks NEG-2, NEG-6 or NEG-9 where they apply
        code = rng.choices([PROTOCOL_ERROR, SERVER_ERROR], weights=[3, 1])[0]
        c.server += envelope(rv, rf, startup_stream, ERROR, error(code, "bad STARTUP"))
    elif response == "refuse":
        c.server += envelope(0x84, 0, rng.choice(streams), ERROR, error(PROTOCOL_ERROR, "version refused"))
    elif response == "RESULT":
        c.server += envelope(rv, rf, startup_stream, RESULT, struct.pack(">i", 1))
    c.say(f"server STARTUP response: {response}")
    c.server_switch = len(c.server)
    # after the switch: what each side frames, as it understood the STARTUP (or not)
    switched = version >= 5 and response in ("READY", "AUTHENTICATE", "ERROR")
    fmt = "lz4" if (compression or "").lower() == "lz4" and response != "ERROR" else "uncompressed"
    crc = "crc32c" if (checksum or "").lower() == "crc32c" and response != "ERROR" else "crc32"
    server_crc = crc if listed and "crc32c" in listed or crc == "crc32" else "crc32"
    if switched or rng.random() < 0.2:
        for side, default_crc in (("client", crc), ("server", server_crc)):
            f, k = fmt, default_crc
            if rng.random() < 0.1:
                f = rng.choice(["uncompressed", "lz4"])
                k = rng.choice(["crc32", "crc32c"])
            opcode, v = (QUERY, version) if side == "client" else (RESULT, version | RESPONSE)
            n = rng.choice([1, 2, 5])
            sizes = [rng.choices([0, 10, 300, 5000, 140000], weights=[2, 4, 4, 2, 1])[0] for _ in range(n)]
            envs = b""
            for i, size in enumerate(sizes):
                # now and then an envelope a receiver refuses on its own (ENV-2, ENV-5) or one
                # with the deprecated COMPRESSION flag (ENV-4)
                ev, flag = rng.choices([(v, USE_BETA if version == 6 else 0), (v ^ 1, 0), (v ^ RESPONSE, 0),
                                        (v, 0x01), (v, 0)], weights=[20, 1, 1, 1, 1])[0]
                envs += envelope(ev, flag, 1 + i, opcode, bytes(rng.randrange(4) for _ in range(size)))
            out = bytearray(framed(envs, f, k, rng.random() < 0.3) if rng.random() < 0.9 else envs)
            if out and rng.random() < 0.1:
                at = rng.randrange(len(out))
                out[at] ^= 1 << rng.randrange(8)
                c.say(f"{side}: bit flipped at byte {at} of its post-switch bytes")
            (c.client if side == "client" else c.server).extend(out)
            c.say(f"{side} after the switch: {n} envelopes {sizes}, {len(out)} bytes as {f}/{k}")
    # now and then a flipped bit anywhere, or a stream cut short
    for side, stream in (("client", c.client), ("server", c.server)):
        if stream and rng.random() < 0.04:
            at = rng.randrange(len(stream))
            stream[at] ^= 1 << rng.randrange(8)
            c.say(f"{side}: bit flipped at stream offset {at}")
        if stream and rng.random() < 0.04:
            keep = rng.randrange(len(stream))
            del stream[keep:]
            c.say(f"{side}: stream cut at offset {keep}")
    c.responds_after = min(c.responds_after, len(c.client))
    c.server_switch = min(c.server_switch, len(c.server))
    return c


def write(c: Connection, k: int, out: Path, mss: int) -> Path:
    base = out / f"conn{k:04d}"
    base.with_suffix(".client").write_bytes(c.client)
    base.with_suffix(".server").write_bytes(c.server)
    base.with_suffix(".story").write_text("\n".join(c.story + [f"mss {mss}"]) + "\n")
    pcap = base.with_suffix(".pcap")
    subprocess.run([str(CQLFRAME), "pcap", "--client", str(base.with_suffix(".client")),
                    "--server", str(base.with_suffix(".server")),
                    "--server-responds-after", str(c.responds_after),
                    "--server-switch", str(c.server_switch), "--mss", str(mss), "-o", str(pcap)],
                   check=True, capture_output=True)
    return pcap


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "wireshark" / "differential")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    for old in a.out.glob("conn*"):
        old.unlink()
    rng = random.Random(a.seed)
    pcaps = []
    for k in range(a.count):
        c = draw(rng)
        small = len(c.client) + len(c.server) <= SMALL
        pcaps.append(write(c, k, a.out, rng.choice(MSS if small else MSS[3:])))
    passed = failed = 0
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for pcap, results in zip(pcaps, pool.map(lambda p: compare(p, 9042), pcaps)):
            for ok, what in results:
                if ok:
                    passed += 1
                    continue
                failed += 1
                story = pcap.with_suffix(".story").read_text().rstrip().replace("\n", "\n    | ")
                print(f"FAIL {what}\n    | {story}")
    print(f"seed {a.seed}, {a.count} connections under {a.out}")
    print(f"differential: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
