"""Black-box tests of segment_peer.py through its JSON contract.

Run with the peer's venv python:
    .cache/venv/python-peer/bin/python -m unittest peers/python/test_segment_peer.py -v

Expected CRCs and hand-built frames come from the small independent helpers
below, not from the driver. Tests in DriverBehaviour pin what the driver does
with questionable input (documented in README.md as peer deviations).
"""
import json
import os
import struct
import subprocess
import sys
import unittest
import zlib

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "segment_peer.py")


def crc24(value, nbytes):
    crc = 0x875060
    for _ in range(nbytes):
        crc ^= (value & 0xFF) << 16
        value >>= 8
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1974F0B
    return crc


def crc32(data):
    return zlib.crc32(b"\xfa\x2d\x55\xca" + data)


def frame(payload, self_contained=True, padding=0):
    """Hand-built uncompressed frame (lets tests set what the driver cannot)."""
    word = len(payload) | (int(self_contained) << 17) | (padding << 18)
    return (word.to_bytes(3, "little") + crc24(word, 3).to_bytes(3, "little")
            + payload + crc32(payload).to_bytes(4, "little"))


def lz4_frame(wire, uncompressed_length, self_contained=True, padding=0):
    word = len(wire) | (uncompressed_length << 17) | (int(self_contained) << 34) | (padding << 35)
    return (word.to_bytes(5, "little") + crc24(word, 5).to_bytes(3, "little")
            + wire + crc32(wire).to_bytes(4, "little"))


def envelope(body, stream=1, opcode=8, version=0x85, flags=0):
    return struct.pack(">BBhBi", version, flags, stream, opcode, len(body)) + body


def run_peer(ops):
    out = subprocess.run([sys.executable, PEER], input=json.dumps(ops).encode(),
                         stdout=subprocess.PIPE, check=True).stdout
    results = json.loads(out)
    assert [r["id"] for r in results] == [o.get("id") for o in ops]
    return results


def decode(data, fmt="uncompressed", **extra):
    return run_peer([dict(id="d", op="decode", format=fmt, input_hex=data.hex(), **extra)])[0]


def encode(payload, fmt="uncompressed", self_contained=True):
    res = run_peer([dict(id="e", op="encode", format=fmt, self_contained=self_contained,
                         payload_hex=payload.hex())])[0]
    assert res["ok"], res
    return bytes.fromhex(res["output_hex"])


def bodies(result):
    return [bytes.fromhex(e["body_hex"]) for e in result["envelopes"]]


HELLO = bytes.fromhex("05000219999a68656c6c6f74800eb6")
HELLO_LZ4 = bytes.fromhex("0500000004e4ab8e68656c6c6f74800eb6")
BIG_BODY = b"SELECT * FROM ks.tbl WHERE pk = ? AND ck > ?; " * 1100  # ~50 KB


class Helpers(unittest.TestCase):
    def test_independent_helpers_match_worked_example(self):
        self.assertEqual(frame(b"hello"), HELLO)
        self.assertEqual(lz4_frame(b"hello", 0), HELLO_LZ4)


class WorkedExamples(unittest.TestCase):
    def test_hello_uncompressed_frames_layer(self):
        res = decode(HELLO, layer="frames")
        self.assertTrue(res["ok"], res)
        self.assertEqual(res["frames"], [{"self_contained": True, "payload_length": 5,
                                          "compressed_length": None, "uncompressed_length": None,
                                          "payload_hex": "68656c6c6f"}])

    def test_hello_lz4_stored_raw(self):
        res = decode(HELLO_LZ4, "lz4", layer="frames")
        self.assertTrue(res["ok"], res)
        self.assertEqual(res["frames"], [{"self_contained": True, "payload_length": 5,
                                          "compressed_length": 5, "uncompressed_length": 0,
                                          "payload_hex": "68656c6c6f"}])

    def test_hello_is_not_an_envelope(self):
        # 'h' (0x68) is read as an envelope version byte: the driver rejects it.
        res = decode(HELLO)
        self.assertFalse(res["ok"])
        self.assertIn("ProtocolError", res["error"])
        self.assertEqual(len(res["frames"]), 1)

    def test_hello_not_self_contained(self):
        data = frame(b"hello", self_contained=False)
        self.assertEqual(data[:3].hex(), "050000")
        res = decode(data, layer="frames")
        self.assertTrue(res["ok"], res)
        self.assertFalse(res["frames"][0]["self_contained"])

    def test_encode_hello_both_formats(self):
        self.assertEqual(encode(b"hello"), HELLO)
        self.assertEqual(encode(b"hello", "lz4"), HELLO_LZ4)
        self.assertEqual(encode(b"hello", self_contained=False), frame(b"hello", False))


class RoundTrip(unittest.TestCase):
    def test_uncompressed_50k_envelope(self):
        env = envelope(BIG_BODY, stream=7)
        wire = encode(env)
        self.assertEqual(wire, frame(env))
        res = decode(wire)
        self.assertTrue(res["ok"], res["error"] if not res["ok"] else "")
        self.assertEqual(bodies(res), [BIG_BODY])
        self.assertEqual(res["envelopes"][0]["stream"], 7)
        self.assertEqual(res["envelopes"][0]["length"], len(BIG_BODY))

    def test_lz4_50k_envelope_is_compressed_and_checksummed(self):
        env = envelope(BIG_BODY, stream=-1, opcode=0x0C)
        wire = encode(env, "lz4")
        word = int.from_bytes(wire[:5], "little")
        clen, ulen = word & 0x1FFFF, (word >> 17) & 0x1FFFF
        self.assertEqual(ulen, len(env))
        self.assertLess(clen, len(env) // 10)
        self.assertTrue(word >> 34 & 1)
        self.assertEqual(int.from_bytes(wire[5:8], "little"), crc24(word, 5))
        self.assertEqual(len(wire), 8 + clen + 4)
        self.assertEqual(int.from_bytes(wire[-4:], "little"), crc32(wire[8:8 + clen]))
        res = decode(wire, "lz4")
        self.assertTrue(res["ok"], res.get("error"))
        self.assertEqual(res["frames"][0]["compressed_length"], clen)
        self.assertEqual(res["frames"][0]["payload_length"], len(env))
        self.assertEqual(bodies(res), [BIG_BODY])
        self.assertEqual(res["envelopes"][0]["stream"], -1)

    def test_multiple_envelopes_in_one_frame(self):
        envs = [envelope(b"a" * n, stream=n) for n in (0, 1, 300)]
        for fmt in ("uncompressed", "lz4"):
            res = decode(encode(b"".join(envs), fmt), fmt)
            self.assertTrue(res["ok"], res.get("error"))
            self.assertEqual([e["stream"] for e in res["envelopes"]], [0, 1, 300])
            self.assertEqual(bodies(res), [b"", b"a", b"a" * 300])

    def test_envelope_split_across_three_frames(self):
        env = envelope(BIG_BODY[:5000], stream=3)
        parts = [env[:4], env[4:3000], env[3000:]]  # header itself split
        for fmt in ("uncompressed", "lz4"):
            wire = b"".join(encode(p, fmt, self_contained=False) for p in parts)
            res = decode(wire, fmt)
            self.assertTrue(res["ok"], res.get("error"))
            self.assertEqual([f["self_contained"] for f in res["frames"]], [False] * 3)
            self.assertEqual(bodies(res), [BIG_BODY[:5000]])

    def test_chunked_feeding_gives_same_result(self):
        envs = [envelope(b"x" * n, stream=n) for n in (10, 2000, 5)]
        first = encode(b"".join(envs[:2]))
        wire = first + encode(envs[2])
        whole = decode(wire)
        self.assertTrue(whole["ok"], whole)
        # read boundaries that never leave < 6 bytes of a header buffered
        for chunk in (7, 100, len(first), len(first) + 6):
            self.assertEqual(decode(wire, chunk_size=chunk), whole, chunk)


class Errors(unittest.TestCase):
    def test_corrupted_payload_byte(self):
        bad = bytearray(HELLO)
        bad[7] ^= 0x01
        res = decode(bytes(bad))
        self.assertFalse(res["ok"])
        self.assertIn("CrcMismatch", res["error"])
        self.assertIn("payload", res["error"])

    def test_corrupted_header_byte(self):
        good = encode(envelope(b"ok"))
        res = decode(good + bytes([good[0] ^ 0x80]) + good[1:])
        self.assertFalse(res["ok"])
        self.assertIn("CRC mismatch on header", res["error"])
        self.assertEqual(bodies(res), [b"ok"])  # what came before is kept
        self.assertEqual(len(res["frames"]), 1)

    def test_corrupted_lz4_trailer(self):
        wire = bytearray(encode(envelope(BIG_BODY), "lz4"))
        wire[-1] ^= 0xFF
        res = decode(bytes(wire), "lz4")
        self.assertFalse(res["ok"])
        self.assertIn("CrcMismatch", res["error"])

    def test_truncated_inside_header_and_payload(self):
        wire = encode(envelope(b"body"))
        res = decode(wire[:4])
        self.assertFalse(res["ok"])
        self.assertIn("truncated: input ends inside a frame header (4 of 6", res["error"])
        res = decode(wire + wire[:2])
        self.assertIn("truncated: input ends inside a frame header (2 of 6", res["error"])
        self.assertEqual(bodies(res), [b"body"])
        res = decode(wire + wire[:-1])
        self.assertFalse(res["ok"])
        self.assertIn("truncated", res["error"])
        self.assertIn("payload", res["error"])
        self.assertEqual(len(res["frames"]), 1)

    def test_partial_envelope_at_end(self):
        env = envelope(b"0123456789")
        res = decode(encode(env[:12]))
        self.assertFalse(res["ok"])
        self.assertIn("partial envelope at end of input (12 of 19 bytes)", res["error"])

    def test_unknown_op_and_bad_input_do_not_crash_batch(self):
        res = run_peer([{"id": "1", "op": "frobnicate"},
                        {"id": "2", "op": "decode", "format": "lz4", "input_hex": "zz"},
                        {"id": "3", "op": "decode", "format": "snappy", "input_hex": ""},
                        {"id": "4", "op": "encode", "format": "uncompressed", "self_contained": True,
                         "payload_hex": "00" * 131072},
                        {"id": "5", "op": "decode", "format": "uncompressed", "input_hex": ""}])
        self.assertEqual(res[0], {"id": "1", "ok": False, "error": "unknown op"})
        self.assertEqual([r["ok"] for r in res], [False, False, False, False, True])
        self.assertIn("MAX_PAYLOAD_LENGTH", res[3]["error"])


class DriverBehaviour(unittest.TestCase):
    """Pins observed driver behaviours (README "peer deviations")."""

    def test_padding_bits_ignored(self):
        res = decode(frame(envelope(b"p"), padding=0x3F))
        self.assertTrue(res["ok"], res)
        res = decode(lz4_frame(envelope(b"p"), 0, padding=0x1F), "lz4")
        self.assertTrue(res["ok"], res)

    def test_self_contained_flag_ignored_for_reassembly(self):
        env = envelope(b"z" * 40)
        # self-contained frame in the middle of a sequence, and a
        # self-contained frame holding half an envelope: both accepted.
        wire = frame(env[:10], False) + frame(env[10:20], True) + frame(env[20:], False)
        res = decode(wire)
        self.assertTrue(res["ok"], res)
        self.assertEqual(bodies(res), [b"z" * 40])
        res = decode(frame(env[:20], True) + frame(env[20:], True))
        self.assertTrue(res["ok"], res)

    def test_overshooting_sequence_starts_next_envelope(self):
        a, b = envelope(b"first"), envelope(b"second", stream=2)
        wire = frame(a + b[:5], False) + frame(b[5:], False)
        res = decode(wire)
        self.assertTrue(res["ok"], res)
        self.assertEqual(bodies(res), [b"first", b"second"])

    def test_version_byte_masked_by_driver_but_reported_raw(self):
        res = decode(frame(envelope(b"", version=0x05) + envelope(b"", version=0x85)))
        self.assertEqual([e["version"] for e in res["envelopes"]], [0x05, 0x85])
        res = decode(frame(envelope(b"", version=0x07)))
        self.assertIn("ProtocolError", res["error"])

    def test_envelope_checks_version_set_and_body_length(self):
        # Deviation 8: any version of 1-6, 0x41 or 0x42 (after & 0x7F) passes, not only 5
        # (versions 1 and 2 then read an 8-byte header, so they are left out here).
        res = decode(frame(envelope(b"", version=0x83) + envelope(b"", version=0xC2)))
        self.assertTrue(res["ok"], res)
        self.assertEqual([e["version"] for e in res["envelopes"]], [0x83, 0xC2])
        res = decode(frame(envelope(b"", version=0x43)))
        self.assertIn("ProtocolError", res["error"])
        negative = struct.pack(">BBhBi", 0x85, 0, 1, 8, -1)
        res = decode(frame(negative))
        self.assertFalse(res["ok"])
        self.assertIn("ProtocolError", res["error"])

    def test_empty_frames_accepted_in_both_formats(self):
        # Deviation 9: a frame of payload length 0, self-contained or not, is no error.
        wire = frame(b"") + frame(b"", False) + frame(envelope(b"after"))
        res = decode(wire)
        self.assertTrue(res["ok"], res)
        self.assertEqual(bodies(res), [b"after"])
        wire = lz4_frame(b"", 0) + lz4_frame(b"", 0, False) + lz4_frame(envelope(b"after"), 0)
        res = decode(wire, "lz4")
        self.assertTrue(res["ok"], res)
        self.assertEqual(bodies(res), [b"after"])

    def test_lz4_declared_length_is_verified(self):
        good = encode(envelope(BIG_BODY[:2000]), "lz4")
        word = int.from_bytes(good[:5], "little")
        clen, ulen = word & 0x1FFFF, (word >> 17) & 0x1FFFF
        lying = lz4_frame(good[8:8 + clen], ulen + 1)
        res = decode(lying, "lz4")
        self.assertFalse(res["ok"])
        self.assertIn("LZ4BlockError", res["error"])

    def test_partial_header_at_read_boundary_is_discarded(self):
        # _process_segment_buffer only rewinds its buffer when it could read a
        # whole header; with fewer bytes buffered, reset_io_buffer drops them.
        wire = encode(envelope(b"one")) + encode(envelope(b"two"))
        res = decode(wire, chunk_size=23)  # 1st read ends 1 byte into frame 2
        self.assertFalse(res["ok"])
        self.assertIn("driver dropped 1 bytes", res["error"])
        res = decode(wire, chunk_size=1)
        self.assertEqual(res["frames"], [])
        self.assertIn("driver dropped 1 bytes", res["error"])

    def test_lz4_raw_frame_split_read_breaks_driver(self):
        # SegmentHeader.segment_length uses the 3-byte header length whenever
        # uncompressed length is 0, so a raw-stored LZ4 frame is judged
        # complete 2 bytes early: a read ending there fails instead of waiting.
        wire = encode(envelope(b"tiny"), "lz4")
        self.assertEqual(int.from_bytes(wire[:5], "little") >> 17 & 0x1FFFF, 0)
        res = decode(wire, "lz4", chunk_size=len(wire) - 1)
        self.assertFalse(res["ok"])
        self.assertIn("struct.error", res["error"])
        self.assertTrue(decode(wire, "lz4", chunk_size=len(wire) - 3)["ok"])


if __name__ == "__main__":
    unittest.main()
