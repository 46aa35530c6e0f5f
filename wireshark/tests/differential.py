#!/usr/bin/env python3
"""Connections drawn to break each rule, judged by the dissector and by the kit's rules engine.

    python3 wireshark/tests/differential.py [--rounds N] [--count N] [--seed S] [--per-capture N]
                                            [--jobs N] [--out DIR]

check_judge.py compares the two tools on the golden vectors' sessions, which each break one
rule on purpose. This draws connections no one wrote by hand, and lays each out on TCP the way
networks and capturing do:

* for every rule `cqlframe check` can report (REPORTABLE), and every sender's rule that only the
  handshake puts behind a receiver's (BEHIND: LIFE-8), connections that break it and
  connections that come within a byte of breaking it (the same bytes with the faulty one right),
  with clean frames before and after the fault, written byte by byte by wire.py;
* random handshakes besides: OPTIONS on colliding streams, version probes, requests with the
  response bit, STARTUPs of every version with any COMPRESSION and FRAME_CHECKSUM, servers that
  list CRC32C or not, answer twice, on the wrong stream, in another version, with EVENTs, with the
  ERROR that reports a framing error, bytes that are no envelope, frames in the negotiated format
  or not, a flipped byte, a stream cut short;
* each under every TCP treatment (TREATMENTS): segments of 1 byte to 1460 bytes, each side's
  turn in one segment, a segment out of order or sent again (whole or in part), a segment lost,
  a segment cut by the snap length, the capture joined midway (inside a frame or at a boundary).

Many connections go in one capture (tcpcap.py; tshark starts slowly). Per connection the two
tools must name the same (rule, sender rule, level) set per direction and the same notes on what
the capture cannot show and the handshake left undecided (check_judge.verdict). Prints each
connection that differs with its story, a per-rule coverage table (connections drawn to break the
rule or come near it, and in how many each tool found it), the same for each kind of JUDGE-11
note (UNJUDGED), and "differential: N passed, M failed": one check per connection and per
capture, and a failure for each reportable rule no draw made check find, a rule check found that
REPORTABLE lacks, or a kind of JUDGE-11 note no draw made check give. The same --seed draws the same connections. Python 3.11 standard library;
needs tshark and the cqlframe binary ($CQLFRAME_BIN, default target/release/cqlframe).
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

import tcpcap
import wire
from check_judge import CQLFRAME, ROOT, pairs, verdict

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


# ---------------------------------------------------------------------------------------------
# Connections aimed at one rule: each breaks it (`breaks`) or comes within a byte of breaking it
# (the same connection with the faulty byte right), with clean frames before and after the
# fault so that a gap or a join lands on either side of it.
# ---------------------------------------------------------------------------------------------

# Every rule `cqlframe check` can report, as the receiver's rule (ErrorKind::rule in
# reference/cqlframe/src/error.rs; the sender checks of reference/harness/src/rules/sender.rs;
# NEG-2, NEG-4, NEG-6, NEG-9 of reference/harness/src/rules/judge.rs), but RECV-9 (a stream
# that ends inside a unit: the dissector never learns that a capture ended, JUDGE_NOT_COMPARED)
# and RECV-11 (AfterError: the judge stops a direction at its first framing error). A rule that
# check reports and this list lacks fails the run, so that the list cannot fall behind.
REPORTABLE = ("RECV-1", "RECV-2", "RECV-3", "RECV-5", "RECV-7", "RECV-8", "RECV-10", "RECV-12",
              "LZ4-3", "LZ4-4", "LZ4-6", "ENV-2", "ENV-3", "ENV-4", "ENV-5", "FMT-6", "FMT-10",
              "SEND-7", "SEND-8", "LIFE-3", "LIFE-4", "LIFE-6", "LIFE-13", "NEG-2", "NEG-4",
              "NEG-6", "NEG-9")
NOT_REPORTABLE = ("RECV-9", "RECV-11")
# Sender's rules behind a receiver's that only the handshake decides (JUDGE-8), drawn as well and
# counted by the sender's rule: LIFE-8, a frame of what a STARTUP refused with ERROR asked for
# (an LZ4 header, the checksum bit set), which its receiver fails under RECV-1 or RECV-3.
BEHIND = ("LIFE-8",)


def handshake(c: Connection, version: int = 5, options: list[tuple[str, str]] | None = None,
              listed: list[str] | None = None, response: int = READY, response_body: bytes = b"") -> None:
    """OPTIONS, SUPPORTED, STARTUP (with `options`), and its response."""
    flags = USE_BETA if version == 6 else 0
    c.client += envelope(version, flags, 0, OPTIONS)
    sup = {"COMPRESSION": ["lz4"], "PROTOCOL_VERSIONS": ["4/v4", "5/v5", "6/v6-beta"],
           "FRAME_CHECKSUMS": listed if listed is not None else ["crc32", "crc32c"]}
    c.server += envelope(version | RESPONSE, flags, 0, SUPPORTED, string_multimap(sup))
    opts = options if options is not None else [("CQL_VERSION", "3.0.0")]
    c.client += envelope(version, flags, 1, STARTUP, string_map(opts))
    c.responds_after = len(c.client)
    c.server += envelope(version | RESPONSE, flags, 1, response, response_body)
    c.server_switch = len(c.server)
    c.say(f"handshake v{version} {opts}, SUPPORTED FRAME_CHECKSUMS={sup['FRAME_CHECKSUMS']}, response 0x{response:02x}")


def clean(rng: random.Random, side: str, version: int, fmt: str, crc: str, n: int) -> bytes:
    """n self-contained frames of one small envelope each."""
    opcode, v = (QUERY, version) if side == "client" else (RESULT, version | RESPONSE)
    flags = USE_BETA if version == 6 else 0
    out = b""
    for i in range(n):
        env = wire.envelope(v, flags, 10 + i, opcode, bytes(rng.randrange(256) for _ in range(rng.choice([0, 20, 200]))))
        out += wire.frame(env, fmt, crc, uncompressed=0) if fmt == "lz4" else wire.frame(env, fmt, crc)
    return out


def lz4_envelope(head: bytes, body: int, last: int = 5) -> tuple[bytes, int]:
    """An LZ4 block of an envelope header and `body` bytes of 0x61: literals, one match of offset
    1, `last` literals at the end (LZ4-5 asks for 5 or more). Returns the block and content size."""
    match = body - 1 - last
    out = bytearray([1 << 4 | min(match - 4, 15)])
    lit = head + b"a"
    out[0] = min(len(lit), 15) << 4 | min(match - 4, 15)
    if len(lit) >= 15:
        out.append(len(lit) - 15)
    out += lit + b"\x01\x00"
    if match - 4 >= 15:
        rest = match - 4 - 15
        while rest >= 255:
            out.append(255)
            rest -= 255
        out.append(rest)
    out += bytes([last << 4]) + b"a" * last
    return bytes(out), len(head) + body


def aimed(rng: random.Random, rule: str, breaks: bool) -> Connection:
    """A connection that breaks `rule` (or comes within a byte of it)."""
    c = Connection()
    c.say(f"aimed at {rule}: {'breaks it' if breaks else 'within a byte of it'}")
    side = rng.choice(["client", "server"])
    version, fmt, crc = 5, "uncompressed", rng.choice(["crc32", "crc32c"])
    options = [("CQL_VERSION", "3.0.0")]
    listed = None
    b = int(breaks)
    if rule in ("FMT-10", "LZ4-3", "LZ4-4", "LZ4-6"):
        fmt = "lz4"
    if rule == "ENV-5":
        version = 6
    if fmt == "lz4":
        options.append(("COMPRESSION", "lz4"))
    if crc == "crc32c":
        options.append(("FRAME_CHECKSUM", "crc32c"))
    pre = post = b""
    fault = b""
    v = version if side == "client" else version | RESPONSE
    vflags = USE_BETA if version == 6 else 0
    body = bytes(rng.randrange(256) for _ in range(40))
    env = wire.envelope(v, vflags, 5, QUERY if side == "client" else RESULT, body)

    def framed(content: bytes, **kw) -> bytes:
        if fmt == "lz4" and "uncompressed" not in kw:
            kw["uncompressed"] = 0
        return wire.frame(content, fmt, crc, **kw)

    if rule == "LIFE-8":
        # a STARTUP without CQL_VERSION asks for LZ4, CRC32C or both and is refused with ERROR;
        # `side` then frames as it asked (or, within a byte, uncompressed with CRC32 as it must)
        asked = rng.choice([("lz4", "crc32"), ("uncompressed", "crc32c"), ("lz4", "crc32c")])
        opts = [("COMPRESSION", "lz4")] * (asked[0] == "lz4") + [("FRAME_CHECKSUM", "crc32c")] * (asked[1] == "crc32c")
        handshake(c, 5, opts, response=ERROR, response_body=error(PROTOCOL_ERROR, "STARTUP has no CQL_VERSION"))
        f, k = asked if breaks else ("uncompressed", "crc32")
        fault = wire.frame(env, f, k, uncompressed=0) if f == "lz4" else wire.frame(env, f, k)
        other = "server" if side == "client" else "client"
        c.say(f"{side} frames after the ERROR as {f}/{k}")
        (c.client if side == "client" else c.server).extend(clean(rng, side, 5, "uncompressed", "crc32", rng.randrange(2)) + fault)
        (c.server if side == "client" else c.client).extend(clean(rng, other, 5, "uncompressed", "crc32", rng.randrange(1, 3)))
        return c
    if rule in ("LIFE-3", "LIFE-4", "LIFE-6", "LIFE-13", "NEG-2", "NEG-4", "NEG-6", "NEG-9"):
        if rule == "LIFE-3":
            startup = envelope(5, 0, 1, STARTUP, string_map(options))
            c.client += wire.frame(startup, "uncompressed", "crc32") if breaks else startup
            c.responds_after = len(c.client)
            c.server += envelope(0x85, 0, 1, READY)
            c.server_switch = len(c.server)
        elif rule == "LIFE-4":
            c.client += envelope(5, 0, 0, OPTIONS)
            c.responds_after = len(c.client)
            sup = envelope(0x85, 0, 0, SUPPORTED, string_multimap({"COMPRESSION": ["lz4"]}))
            c.server += wire.frame(sup, "uncompressed", "crc32") if breaks else sup
            c.server_switch = len(c.server)
        elif rule == "LIFE-6":
            c.client += envelope(5, 0, 1, STARTUP, string_map(options))
            query = envelope(5, 0, 2, QUERY, string("SELECT 1"))
            if breaks:
                c.client += query
            c.responds_after = len(c.client)
            c.server += envelope(0x85, 0, 1, READY)
            c.server_switch = len(c.server)
            if not breaks:
                c.client += wire.frame(query, "uncompressed", crc) if crc == "crc32" else wire.frame(query, "uncompressed", "crc32c")
        elif rule == "LIFE-13":
            c.client += envelope(5, 0, 3, OPTIONS)
            c.server += envelope(0x85, 0, 3 if not breaks else 2, SUPPORTED, string_multimap({"COMPRESSION": ["lz4"]}))
            handshake(c, 5, options)
        else:
            extra = {"NEG-2": ("COMPRESSION", "snappy" if breaks else "lz4"),
                     "NEG-6": ("FRAME_CHECKSUM", "adler32" if breaks else "crc32c"),
                     "NEG-9": ("CQL_VERSION" if breaks else "DRIVER_NAME", "3.0.0"),
                     "NEG-4": ("FRAME_CHECKSUM", "crc32c")}[rule]
            if rule == "NEG-4":
                listed = ["crc32"] if breaks else ["crc32", "crc32c"]
            handshake(c, 5, [("CQL_VERSION", "3.0.0"), extra], listed)
        return c
    handshake(c, version, options)
    if rule == "FMT-6" or rule == "FMT-10":
        fault = framed(env, reserved=b)
    elif rule == "RECV-1":
        if rng.random() < 0.5:
            good = framed(env)
            fault = good[:3] + bytes([good[3] ^ b]) + good[4:] if fmt == "uncompressed" else good[:5] + bytes([good[5] ^ b]) + good[6:]
        else:
            c.say("an unframed envelope after the switch (LIFE-4)" if breaks else "the envelope framed")
            fault = env if breaks else framed(env)
    elif rule == "RECV-2":
        good = framed(env)
        fault = framed(env, trailer=wire.payload_checksum(crc, env) ^ b)
    elif rule == "RECV-3":
        fault = framed(env, checksum_bit=(crc == "crc32c") ^ breaks)
    elif rule == "LZ4-3":
        fault = framed(env, uncompressed=len(env)) if breaks else framed(env, uncompressed=0)
        if breaks:
            fault = wire.frame(wire.lz4_literals(env), "lz4", crc, uncompressed=len(env))
    elif rule == "LZ4-4":
        block, n = lz4_envelope(wire.envelope(v, vflags, 5, QUERY if side == "client" else RESULT, length=100), 100)
        fault = wire.frame(block, "lz4", crc, uncompressed=n + b)
    elif rule == "LZ4-6":
        block, n = lz4_envelope(wire.envelope(v, vflags, 5, QUERY if side == "client" else RESULT, length=100), 100, 5 - b)
        fault = wire.frame(block, "lz4", crc, uncompressed=n)
    elif rule == "RECV-5":
        fault = framed(wire.envelope(v, vflags, 5, QUERY, body, length=len(body) + b))
    elif rule in ("RECV-7", "RECV-8", "RECV-10", "SEND-7", "SEND-8"):
        size = 131054 + 50 if rule == "SEND-7" else 300
        e = wire.envelope(v, vflags, 6, QUERY if side == "client" else RESULT, bytes(rng.randrange(256) for _ in range(size)))
        first = {"SEND-7": 131054 - b, "SEND-8": 9 - b}.get(rule, rng.choice([9, 100, 200]))
        pieces = [first, len(e) - first]
        if rule == "RECV-7":
            e += b"\x00" * b
            pieces[-1] += b
        if rule == "RECV-8":
            fault = wire.split(e, fmt, crc, pieces[:1] if breaks else pieces) + framed(env)
        elif rule == "RECV-10":
            fault = wire.split(e, fmt, crc, [first]) + (framed(b"", self_contained=False) if breaks else b"") \
                + wire.split(e[first:], fmt, crc, [len(e) - first])
        else:
            fault = wire.split(e, fmt, crc, pieces)
    elif rule == "RECV-12":
        fault = framed(wire.envelope(v, vflags, 5, QUERY, body, length=268435456 + b))
    elif rule == "ENV-3":
        fault = framed(wire.envelope(v, vflags, 5, QUERY, b"", length=-b))
    elif rule == "ENV-2":
        fault = framed(wire.envelope(v ^ b, vflags, 5, QUERY if side == "client" else RESULT, body))
    elif rule == "ENV-5":
        fault = framed(wire.envelope(v, USE_BETA * (1 - b), 5, QUERY if side == "client" else RESULT, body))
    elif rule == "ENV-4":
        fault = framed(wire.envelope(v, vflags | (0x01 if breaks else 0x02), 5, QUERY if side == "client" else RESULT, body))
    pre = clean(rng, side, version, fmt, crc, rng.randrange(3))
    post = clean(rng, side, version, fmt, crc, rng.randrange(3))
    other = "server" if side == "client" else "client"
    c.say(f"{side}: {len(pre)} bytes of clean frames, the {len(fault)}-byte fault, {len(post)} bytes of clean frames; {other}: clean frames")
    (c.client if side == "client" else c.server).extend(pre + fault + post)
    (c.server if side == "client" else c.client).extend(clean(rng, other, version, fmt, crc, rng.randrange(1, 3)))
    return c


# ---------------------------------------------------------------------------------------------
# What TCP and capturing do to the connection: segments of any size (1 byte, at each unit's
# boundary, or each side's turn in one segment), a segment out of order or sent twice, a
# segment lost or cut by the snap length, and the capture joined midway.
# ---------------------------------------------------------------------------------------------
TREATMENTS = ("plain", "plain", "coalesced", "reorder", "retransmit", "lose", "snaplen", "midway")


def envelopes_of(data: bytes) -> list[bytes]:
    """`data` split at envelope boundaries, or one piece if it is not whole envelopes."""
    out, at = [], 0
    while at < len(data):
        if len(data) - at < 9:
            return [data]
        n = struct.unpack(">i", data[at + 5:at + 9])[0]
        if n < 0 or at + 9 + n > len(data):
            return [data]
        out.append(data[at:at + 9 + n])
        at += 9 + n
    return out


def turns_of(c: Connection) -> list[tuple[str, bytes]]:
    """Who writes what when, as `cqlframe pcap` lays a session out (session_turns in
    reference/harness/src/pcap/write.rs): the handshake's envelopes in lock step, request and
    response, the STARTUP response after every handshake byte of the client; then the rest of the
    client's stream, then the rest of the server's."""
    ra = c.responds_after if c.responds_after is not None else len(c.client)
    ss = c.server_switch if c.server_switch is not None else len(c.server)
    requests, responses = envelopes_of(bytes(c.client[:ra])), envelopes_of(bytes(c.server[:ss]))
    turns = []
    lock = max(len(responses) - 1, 0)
    for i in range(lock):
        if i < len(requests):
            turns.append(("client", requests[i]))
        turns.append(("server", responses[i]))
    turns += [("client", r) for r in requests[lock:]]
    if responses:
        turns.append(("server", responses[-1]))
    turns += [("client", bytes(c.client[ra:])), ("server", bytes(c.server[ss:]))]
    return [t for t in turns if t[1]]


def treat(c: Connection, rng: random.Random, treatment: str, port: int) -> tcpcap.Layout:
    turns = turns_of(c)
    size = len(c.client) + len(c.server)
    mss = 60000 if treatment == "coalesced" else rng.choice(MSS if size <= SMALL else MSS[3:])
    layout = tcpcap.Layout(port)
    offsets = {"client": 0, "server": 0}
    data: list[tcpcap.Segment] = []
    for side, bytes_ in turns:
        if not bytes_:
            continue
        segs = tcpcap.segments(side, bytes_, offsets[side], [mss] if treatment == "coalesced" else rng, mss) \
            if treatment != "coalesced" else tcpcap.segments(side, bytes_, offsets[side], [mss], mss)
        offsets[side] += len(bytes_)
        data += segs
    c.say(f"TCP: {treatment}, segments up to {mss} bytes, {len(data)} data segments")
    if data and treatment == "reorder" and len(data) > 2:
        i = rng.randrange(1, len(data) - 1)
        j = next((k for k in range(i + 1, len(data)) if data[k].side == data[i].side), None)
        if j is not None:
            data[i], data[j] = data[j], data[i]
            c.say(f"  segments {i} and {j} swapped")
    elif data and treatment == "retransmit":
        i = rng.randrange(len(data))
        s = data[i]
        copy = tcpcap.Segment(s.side, s.offset, s.payload)
        if rng.random() < 0.5 and len(s.payload) > 1:
            k = rng.randrange(1, len(s.payload))
            copy = tcpcap.Segment(s.side, s.offset + k, s.payload[k:])
        data.insert(min(len(data), i + rng.randrange(1, 4)), copy)
        c.say(f"  segment {i} sent again ({len(copy.payload)} bytes)")
    elif data and treatment == "lose" and len(data) > 1:
        i = rng.randrange(1, len(data))
        c.say(f"  segment {i} lost ({len(data[i].payload)} bytes at {data[i].side} byte {data[i].offset})")
        del data[i]
    elif data and treatment == "snaplen":
        i = rng.randrange(len(data))
        cut = rng.randrange(1, len(data[i].payload) + 1)
        data[i].cut = cut
        c.say(f"  segment {i} cut by the snap length: {cut} bytes missing at {data[i].side} byte {data[i].offset + len(data[i].payload) - cut}")
    head = tcpcap.handshake()
    if treatment == "midway" and data:
        i = rng.randrange(len(data))
        s = data[i]
        k = rng.randrange(len(s.payload))
        data = [tcpcap.Segment(s.side, s.offset + k, s.payload[k:])] + data[i + 1:]
        head = []
        c.say(f"  the capture starts at {s.side} byte {s.offset + k}")
    layout.segments = head + data + tcpcap.closing(offsets)
    return layout


# The judge's notes on what the handshake left undecided (JUDGE-11; Unjudged in
# reference/harness/src/rules/unjudged.rs), by how each kind begins: the draws must bring each
# about, so that the dissector is held to each word for word.
UNJUDGED = {
    "STARTUP never answered": "the STARTUP at byte ",
    "NEG-4 not judged": "NEG-4 not judged: ",
    "NEG-6 not judged": "NEG-6 not judged: ",
}


def coverage(rows: dict[str, list[int]]) -> tuple[str, list[str]]:
    """The per-rule table and the rules that were never drawn."""
    lines = [f"  {'rule':<9} {'breaks':>7} {'near':>5} {'check':>6} {'dissector':>9}"]
    missing = []
    for rule in sorted(rows, key=lambda r: (r.split("-")[0], int(r.split("-")[1]))):
        b, n, cj, dj = rows[rule]
        lines.append(f"  {rule:<9} {b:>7} {n:>5} {cj:>6} {dj:>9}")
        if rule in REPORTABLE + BEHIND and cj == 0:
            missing.append(rule)
    return "\n".join(lines), missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--rounds", type=int, default=1, help="aimed draws per rule and outcome, each over every treatment")
    ap.add_argument("--count", type=int, default=100, help="random handshakes besides")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-capture", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "wireshark" / "differential")
    a = ap.parse_args()
    problems = wire.selftest(str(CQLFRAME))
    if problems:
        for p in problems:
            print(f"FAIL wire.py: {p}")
        print("differential: 0 passed, 1 failed")
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    for old in a.out.glob("*"):
        old.unlink()
    rng = random.Random(a.seed)
    draws: list[tuple[str | None, bool, Connection, tcpcap.Layout]] = []
    port = 20000
    for _ in range(a.rounds):
        for rule in REPORTABLE + BEHIND:
            for breaks in (True, False):
                for treatment in TREATMENTS:
                    c = aimed(rng, rule, breaks)
                    port += 1
                    draws.append((rule, breaks, c, treat(c, rng, treatment, port)))
    for _ in range(a.count):
        c = draw(rng)
        port += 1
        draws.append((None, False, c, treat(c, rng, rng.choice(TREATMENTS), port)))
    captures = []
    for k in range(0, len(draws), a.per_capture):
        batch = draws[k:k + a.per_capture]
        pcap = a.out / f"batch{k // a.per_capture:03d}.pcap"
        tcpcap.write(pcap, [d[3] for d in batch])
        captures.append((pcap, batch))
    rows: dict[str, list[int]] = {r: [0, 0, 0, 0] for r in REPORTABLE + BEHIND}
    # per kind of JUDGE-11 note: connections in which check gave it, and the dissector
    unjudged = {kind: [0, 0] for kind in UNJUDGED}
    for rule, breaks, _, _ in draws:
        if rule:
            rows[rule][0 if breaks else 1] += 1
    by_port = {d[3].client_port: d for d in draws}
    passed = failed = 0

    def run(job):
        pcap, _ = job
        try:
            return pairs(pcap, tcpcap.SERVER_PORT)
        except (RuntimeError, ValueError, KeyError) as e:
            return [f"{pcap}: {e}"], []

    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for (pcap, batch), (probs, paired) in zip(captures, pool.map(run, captures)):
            if probs:
                failed += 1
                print(f"FAIL {pcap}: " + "\n    ".join(probs))
            else:
                passed += 1
            for label, j, d in paired:
                for tool, conn in ((2, j), (3, d)):
                    for rule in {r[1] for r in conn.rules} | {r[2] for r in conn.rules if r[2] in BEHIND}:
                        if rule not in rows:
                            rows[rule] = [0, 0, 0, 0]
                        rows[rule][tool] += 1
                for kind, start in UNJUDGED.items():
                    for tool, conn in ((0, j), (1, d)):
                        unjudged[kind][tool] += any(n.startswith(start) for n in conn.notes)
                ok, what = verdict(pcap, label, j, d)
                if ok:
                    passed += 1
                    continue
                failed += 1
                client_port = int(j.client.rsplit(":", 1)[1] if j.client else d.client.rsplit(":", 1)[1])
                story = "\n    | ".join(by_port[client_port][2].story) if client_port in by_port else "?"
                print(f"FAIL {what}\n    | {story}")
    table, missing = coverage(rows)
    print("per rule: connections drawn to break it, to come within a byte of it, and in which each tool found it")
    print(table)
    print("per JUDGE-11 note: connections in which each tool gave it")
    for kind, (cj, dj) in unjudged.items():
        print(f"  {kind:<23} check {cj:>4}  dissector {dj:>4}")
        if cj == 0:
            failed += 1
            print(f"FAIL {kind}: no draw made check give this JUDGE-11 note")
    unknown = [r for r in rows if r not in REPORTABLE + NOT_REPORTABLE + BEHIND]
    for r in missing:
        failed += 1
        print(f"FAIL {r}: reportable, but no draw made check find it")
    for r in unknown:
        failed += 1
        print(f"FAIL {r}: reported, but not in REPORTABLE (add draws that break it)")
    print(f"seed {a.seed}, {len(draws)} connections in {len(captures)} captures under {a.out}")
    print(f"differential: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
