#!/usr/bin/env python3
"""Deterministic benchmark inputs, the same bytes for every implementation.

    gen_data.py CQLFRAME_BIN OUT_DIR

For each payload size (64, 2037, 16373, 131071 bytes) writes `envelope-SIZE.bin`: one v5
RESULT envelope (response, stream 1) of exactly SIZE bytes whose body looks like a Rows result
(int/text/bigint columns, values from a fixed LCG, so LZ4 compresses it like real rows). Then,
for each format (uncompressed, lz4) and payload checksum (crc32, crc32c), `cqlframe encode`
frames that envelope (`frame-FMT-CK-SIZE.bin`, exactly one self-contained frame) and the frame is
repeated to make `stream-FMT-CK-SIZE.bin` (about 256 KiB, at least 2 frames): the decode
benchmarks decode the whole stream and divide by the frame count. `manifest.json` lists it all.
"""
import hashlib
import json
import os
import struct
import subprocess
import sys

SIZES = [64, 2037, 16373, 131071]
FORMATS = ["uncompressed", "lz4"]
CHECKSUMS = ["crc32", "crc32c"]
STREAM_TARGET = 256 * 1024
ENVELOPE_HEADER = 9


def rows_body(length):
    """A RESULT Rows body of `length` bytes: kind, metadata flags (no metadata), 3 columns,
    then rows of [int] user id, [text] e-mail, [bigint] timestamp, cut at `length`."""
    out = bytearray(struct.pack(">iiii", 2, 0x0004, 3, 1_000_000))
    state = 12345
    i = 0
    while len(out) < length:
        state = (state * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        user = 100_000 + (state >> 40) % 5000
        email = b"user%06d@example.com" % user
        ts = 1_700_000_000_000 + i * 1000 + (state >> 20) % 997
        out += struct.pack(">ii", 4, user)
        out += struct.pack(">i", len(email)) + email
        out += struct.pack(">iq", 8, ts)
        i += 1
    return bytes(out[:length])


def envelope(size):
    body = rows_body(size - ENVELOPE_HEADER)
    # version 0x85 (v5 response), flags 0, stream 1, opcode 0x08 RESULT, body length
    return struct.pack(">BBhBi", 0x85, 0, 1, 0x08, len(body)) + body


def frame_fields(fmt, frame):
    """(header length, payload length on the wire, uncompressed length field)."""
    if fmt == "uncompressed":
        word = int.from_bytes(frame[:3], "little")
        return 6, word & 0x1FFFF, 0
    word = int.from_bytes(frame[:5], "little")
    return 8, word & 0x1FFFF, (word >> 17) & 0x1FFFF


def main(cqlframe, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    for size in SIZES:
        env = envelope(size)
        assert len(env) == size
        env_file = "envelope-%d.bin" % size
        with open(os.path.join(out_dir, env_file), "wb") as f:
            f.write(env)
        for fmt in FORMATS:
            for ck in CHECKSUMS:
                frame = subprocess.run(
                    [cqlframe, "encode", "--format", fmt, "--checksum", ck, os.path.join(out_dir, env_file)],
                    check=True, stdout=subprocess.PIPE).stdout
                hlen, plen, ulen = frame_fields(fmt, frame)
                assert len(frame) == hlen + plen + 4, "expected exactly one frame"
                count = max(2, STREAM_TARGET // len(frame))
                name = "%s-%s-%d" % (fmt, ck, size)
                with open(os.path.join(out_dir, "frame-%s.bin" % name), "wb") as f:
                    f.write(frame)
                with open(os.path.join(out_dir, "stream-%s.bin" % name), "wb") as f:
                    f.write(frame * count)
                cases.append({
                    "name": name, "format": fmt, "checksum": ck, "size": size,
                    "envelope_file": env_file,
                    "frame_file": "frame-%s.bin" % name,
                    "stream_file": "stream-%s.bin" % name,
                    "frame_len": len(frame), "frames": count,
                    "wire_payload_len": plen,
                    # lz4: 0 = stored raw (compression did not shrink it, LZ4-3)
                    "uncompressed_len_field": ulen if fmt == "lz4" else None,
                    "envelope_sha256": hashlib.sha256(env).hexdigest(),
                })
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump({"sizes": SIZES, "cases": cases}, f, indent=1)
    for c in cases:
        if c["format"] == "lz4" and c["checksum"] == "crc32":
            ratio = c["size"] / c["wire_payload_len"]
            print("  %6d B: lz4 %s (%.2fx)" % (c["size"], "stored raw" if not c["uncompressed_len_field"]
                                                else "%d B on the wire" % c["wire_payload_len"], ratio),
                  file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
