"""Crafted sessions for handshake points the spec states (JUDGE-1, JUDGE-3), built by hand here."""
import unittest

from checks import crc24, crc32
from judge import judge

OPTIONS, STARTUP, READY, ERROR, SUPPORTED, QUERY = 5, 1, 2, 0, 6, 7


def env(version, opcode, body=b"", stream=0, flags=0):
    if version & 0x7F <= 2:  # v1 and v2: one-byte stream, 8-byte header
        return bytes([version, flags, stream, opcode]) + len(body).to_bytes(4, "big") + body
    return bytes([version, flags]) + stream.to_bytes(2, "big") + bytes([opcode]) + len(body).to_bytes(4, "big") + body


def string_map(**kv):
    out = len(kv).to_bytes(2, "big")
    for k, v in kv.items():
        out += len(k).to_bytes(2, "big") + k.encode() + len(v).to_bytes(2, "big") + v.encode()
    return out


def frame(content, lz4=False):
    """A self-contained frame with a CRC32 trailer; LZ4 frames are stored (uncompressed length 0)."""
    if lz4:
        head = (len(content) | 1 << 34).to_bytes(5, "little")
    else:
        head = (len(content) | 1 << 17).to_bytes(3, "little")
    return head + crc24(head).to_bytes(3, "little") + content + crc32(content).to_bytes(4, "little")


def findings(client, server, responds_after):
    return [(f.rule, f.side, f.offset, f.sender_rule) for f in judge(client, server, responds_after=responds_after).findings]


class Handshake(unittest.TestCase):
    startup = env(5, STARTUP, string_map(CQL_VERSION="3.0.0"), stream=1)

    def test_pipelined_handshake_is_clean(self):
        # JUDGE-3: OPTIONS and STARTUP in one write, SUPPORTED and READY in one: no finding.
        client_handshake = env(5, OPTIONS) + self.startup
        client = client_handshake + frame(env(5, QUERY, b"q", stream=2))
        server = env(0x85, SUPPORTED, b"\x00\x00") + env(0x85, READY, stream=1) + frame(env(0x85, 8, stream=2))
        self.assertEqual(findings(client, server, len(client_handshake)), [])

    def test_retired_version_refused_in_its_own_version(self):
        # JUDGE-1: a v2 STARTUP (8-byte header) refused with an ERROR in v2 breaks nothing.
        client = env(2, STARTUP, string_map(CQL_VERSION="3.0.0"))
        server = env(0x82, ERROR, (0x000A).to_bytes(4, "big") + b"\x00\x00")
        result = judge(client, server, responds_after=len(client))
        self.assertEqual(result.findings, [])
        self.assertEqual(result.switch, {"client": None, "server": None})

    def test_client_unframed_after_the_switch_breaks_life_5(self):
        client = self.startup + env(5, QUERY, b"q", stream=2)
        server = env(0x85, READY, stream=1)
        self.assertEqual(findings(client, server, len(self.startup)),
                         [("RECV-1", "client", len(self.startup), "LIFE-5")])

    def test_client_bytes_before_the_response_break_life_6(self):
        client = self.startup + env(5, QUERY, b"q", stream=2)
        server = env(0x85, READY, stream=1)
        self.assertEqual(findings(client, server, len(client)),
                         [("LIFE-6", "client", len(self.startup), "LIFE-6")])

    def test_client_framing_lz4_after_an_error_to_startup_breaks_life_8(self):
        startup = env(5, STARTUP, string_map(CQL_VERSION="9.9.9", COMPRESSION="lz4"), stream=1)
        client = startup + frame(env(5, OPTIONS, stream=2), lz4=True)
        server = env(0x85, ERROR, (0x000A).to_bytes(4, "big") + b"\x00\x00", stream=1)
        self.assertEqual(findings(client, server, len(startup)), [("RECV-1", "client", len(startup), "LIFE-8")])

    def test_client_framing_uncompressed_after_an_error_to_startup_is_clean(self):
        startup = env(5, STARTUP, string_map(CQL_VERSION="9.9.9", COMPRESSION="lz4"), stream=1)
        client = startup + frame(env(5, OPTIONS, stream=2))
        server = env(0x85, ERROR, (0x000A).to_bytes(4, "big") + b"\x00\x00", stream=1)
        self.assertEqual(findings(client, server, len(startup)), [])


if __name__ == "__main__":
    unittest.main()
