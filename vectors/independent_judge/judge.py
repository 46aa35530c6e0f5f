"""An independent judge of one CQL native protocol connection (spec/framing_v6.adoc, "Judging a connection").

Written from the spec alone, as a check that the spec defines the judge. Rule IDs in
comments point to the passages each step follows; QUESTIONS.md lists the choices the
spec left open.
"""
from dataclasses import dataclass, field

from checks import Lz4Error, crc24, crc32, crc32c, lz4_decode

# The levels of the rules a finding can name (the rule paragraphs of the spec).
LEVEL = {
    "LIFE-3": "MUST", "LIFE-4": "MUST", "LIFE-5": "MUST", "LIFE-6": "MUST NOT",
    "LIFE-8": "MUST", "LIFE-13": "MUST", "NEG-2": "MUST", "NEG-4": "MUST NOT",
    "NEG-6": "MUST", "NEG-9": "MUST", "FMT-6": "MUST", "FMT-10": "MUST",
    "LZ4-3": "SHOULD", "LZ4-4": "MUST", "LZ4-6": "MUST", "ENV-2": "MUST", "ENV-3": "MUST",
    "ENV-4": "SHOULD NOT", "ENV-5": "MUST", "SEND-7": "SHOULD", "SEND-8": "MUST",
    **{f"RECV-{n}": "MUST" for n in range(1, 15)},
}
# "The sender's rule behind a receiver's rule" (JUDGE-8); RECV-1 and RECV-3 get theirs per case.
SENDER = {"LZ4-4": "LZ4-1", "LZ4-6": "LZ4-5", "RECV-5": "SEND-2",
          "RECV-7": "SEND-3", "RECV-8": "SEND-5", "RECV-10": "SEND-6"}
OPCODES = {0: "ERROR", 1: "STARTUP", 2: "READY", 3: "AUTHENTICATE", 5: "OPTIONS", 6: "SUPPORTED",
           7: "QUERY", 8: "RESULT", 9: "PREPARE", 10: "EXECUTE", 11: "REGISTER", 12: "EVENT",
           13: "BATCH", 14: "AUTH_CHALLENGE", 15: "AUTH_RESPONSE", 16: "AUTH_SUCCESS"}
ERROR, STARTUP, READY, AUTHENTICATE, OPTIONS, SUPPORTED = 0, 1, 2, 3, 5, 6
PROTOCOL_ERROR = 0x000A
USE_BETA, COMPRESSION_FLAG = 0x10, 0x01
SEQUENCE_FILL = 131054  # SEND-7
MAX_BODY = 256 << 20  # the receiver's configured maximum (RECV-12); QUESTIONS.md Q4


@dataclass
class Finding:
    rule: str
    side: str  # the side charged: the sender of the bytes at fault
    offset: int  # in that side's stream
    sender_rule: str = None

    def __post_init__(self):
        self.sender_rule = self.sender_rule or SENDER.get(self.rule) or self.rule

    @property
    def level(self):
        # JUDGE-8: written MUST for MUST and MUST NOT, SHOULD for SHOULD and SHOULD NOT
        return LEVEL[self.rule].split()[0]

    def as_dict(self):
        return {"rule": self.rule, "level": self.level, "side": self.side,
                "direction": f"{self.side}-to-{'server' if self.side == 'client' else 'client'}",
                "offset": self.offset, "sender_rule": self.sender_rule}


class Stop(Exception):
    """A framing error: the receiver of this direction stops here (RECV-11, JUDGE-5)."""

    def __init__(self, finding):
        super().__init__(finding.rule)
        self.finding = finding


@dataclass
class Envelope:
    offset: int
    end: int
    version: int  # the version byte as sent, direction bit included
    flags: int
    stream: int
    opcode: int
    body: bytes

    @property
    def error_code(self):
        return int.from_bytes(self.body[:4], "big") if self.opcode == ERROR and len(self.body) >= 4 else None


def read_unframed(data, pos, side, max_body):
    """One envelope before the switch ("Unframed handshake and the switch", ENV-3, RECV-9, RECV-12)."""
    v = data[pos]
    # LIFE-3, LIFE-14: v3-v6 with either direction bit (a wrong one is ENV-2, "Envelopes"), or a
    # version probe (v1, v2, v7, DSE's 0x41 and 0x42) and the refusal of a retired one.
    envelope = 3 <= v & 0x7F <= 6
    probe = v in (0x81, 0x82) if side == "server" else v in (0x01, 0x02, 0x07, 0x41, 0x42)
    if not (envelope or probe):
        raise Stop(Finding("LIFE-4" if side == "server" else "LIFE-3", side, pos))
    hlen = 8 if v & 0x7F <= 2 else 9  # v1 and v2 headers have a one-byte stream (JUDGE-1)
    if len(data) - pos < hlen:
        raise Stop(Finding("RECV-9", side, pos))
    h = data[pos:pos + hlen]
    stream = int.from_bytes(h[2:hlen - 5], "big", signed=True)
    length = int.from_bytes(h[hlen - 4:], "big", signed=True)
    if length < 0:
        raise Stop(Finding("ENV-3", side, pos))
    if length > max_body:
        raise Stop(Finding("RECV-12", side, pos))
    if len(data) - pos < hlen + length:
        raise Stop(Finding("RECV-9", side, pos))
    return Envelope(pos, pos + hlen + length, v, h[1], stream, h[hlen - 5], data[pos + hlen:pos + hlen + length])


def string_map(body, multi=False):
    """A [string map] (STARTUP) or [string multimap] (SUPPORTED) as (KEY, value) pairs, keys upper-cased."""
    pairs, i = [], 0

    def short():
        nonlocal i
        n = int.from_bytes(body[i:i + 2], "big")
        i += 2
        return n

    def string():
        nonlocal i
        n = short()
        s = body[i:i + n].decode("utf-8", "replace")
        i += n
        return s

    try:
        for _ in range(short()):
            key = string().upper()
            pairs.append((key, [string() for _ in range(short())] if multi else string()))
    except (IndexError, ValueError):
        pass
    return pairs


def looks_like_envelope(h):
    """The test of "The sender's rule behind a receiver's rule" for an envelope sent unframed after the switch."""
    return (len(h) >= 6 and 3 <= h[0] & 0x7F <= 6 and not h[1] & ~0x1F and h[4] in OPCODES
            and h[5] < 0x10)


class FramedReader:
    """One direction after the switch, read as its receiver reads it ("Decoding procedure")."""

    def __init__(self, data, start, side, fmt, checksum, version, max_body, asked=None, bit_cause=None):
        self.data, self.start, self.side = data, start, side
        self.fmt, self.checksum, self.version, self.max_body = fmt, checksum, version, max_body
        # the sender's rule behind RECV-3 when the handshake caused it (JUDGE-8): NEG-4 after a
        # server that ignores FRAME_CHECKSUM took a STARTUP asking for another checksum
        self.bit_cause = bit_cause
        self.asked = asked  # (format, checksum) of a refused STARTUP, for LIFE-8 (either side)

    def verifies_header(self, pos, fmt):
        hlen = 8 if fmt == "lz4" else 6
        h = self.data[pos:pos + hlen]
        return len(h) == hlen and crc24(h[:hlen - 3]) == int.from_bytes(h[hlen - 3:], "little")

    def header_sender(self, pos):
        # JUDGE-8: a header that fails as uncompressed and verifies as an LZ4 header, when the
        # refused STARTUP asked for LZ4: the header alone decides (no payload is awaited)
        if self.asked and self.asked[0] == "lz4" and self.verifies_header(pos, "lz4"):
            return "LIFE-8"
        if looks_like_envelope(self.data[pos:pos + 6]):
            return "LIFE-4" if self.side == "server" else "LIFE-5"
        return "CRC-1"

    def units(self):
        """Yields the findings made at each frame, in stream order; ends at the first framing error."""
        try:
            yield from self._frames()
        except Stop as stop:
            yield [stop.finding]

    def fail(self, rule, pos, sender=None):
        raise Stop(Finding(rule, self.side, pos, sender))

    def _frames(self):
        d, pos, seq, lz4 = self.data, self.start, None, self.fmt == "lz4"
        hlen = 8 if lz4 else 6
        while True:
            if pos == len(d):
                if seq:
                    self.fail("RECV-9", seq["first"])  # ends between frames, a sequence incomplete
                return
            h = d[pos:pos + hlen]
            if len(h) < hlen:
                self.fail("RECV-9", pos)
            if crc24(h[:hlen - 3]) != int.from_bytes(h[hlen - 3:], "little"):
                self.fail("RECV-1", pos, self.header_sender(pos))
            word = int.from_bytes(h[:hlen - 3], "little")
            if lz4:
                clen, ulen, sc, bit, reserved = (word & 0x1FFFF, (word >> 17) & 0x1FFFF,
                                                 (word >> 34) & 1, (word >> 35) & 1, word >> 36)
            else:
                clen, ulen, sc, bit, reserved = word & 0x1FFFF, 0, (word >> 17) & 1, (word >> 18) & 1, word >> 19
            if bit != (self.checksum == "crc32c"):
                asked_bit = self.asked and bit == (self.asked[1] == "crc32c")
                self.fail("RECV-3", pos, "LIFE-8" if asked_bit else self.bit_cause or "FMT-13")
            end = pos + hlen + clen + 4
            if end > len(d):
                self.fail("RECV-9", pos)
            payload = d[pos + hlen:end - 4]
            algo = crc32c if self.checksum == "crc32c" else crc32
            if algo(payload) != int.from_bytes(d[end - 4:end], "little"):
                self.fail("RECV-2", pos, "CRC-3" if self.checksum == "crc32c" else "CRC-2")
            content = payload
            if ulen:
                try:
                    content = lz4_decode(payload, ulen)
                except Lz4Error as e:
                    self.fail(e.rule, pos)
            # the frame's own sender rules (JUDGE-9), checked once it passed steps 1 to 6 (JUDGE-6),
            # even when its content then fails
            own = []
            if reserved:
                own.append(Finding("FMT-10" if lz4 else "FMT-6", self.side, pos))
            if ulen and clen >= ulen:
                own.append(Finding("LZ4-3", self.side, pos))
            if not sc and seq is None and len(content) < 9:
                own.append(Finding("SEND-8", self.side, pos))
            try:
                done, seq = self.content(content, sc, seq, pos)
            except Stop:
                if own:
                    yield own
                raise
            yield own + [f for env, sizes in done for f in self.envelope(env, sizes, pos)]
            pos = end

    def content(self, content, sc, seq, pos):
        """Steps 7 and 8: the envelopes this frame completes, and the sequence after it."""
        done = []  # envelopes this frame completes, with the content sizes of their sequence
        if sc:
            if seq:
                self.fail("RECV-8", pos)
            i = 0
            while i < len(content):
                if len(content) - i < 9:
                    self.fail("RECV-5", pos)
                length = self.body_length(content[i:i + 9], pos)
                if len(content) - i < 9 + length:
                    self.fail("RECV-5", pos)
                done.append((content[i:i + 9 + length], None))
                i += 9 + length
        else:
            if not content:
                self.fail("RECV-10", pos)
            if seq is None:
                seq = {"first": pos, "buf": bytearray(), "sizes": [], "length": None}
            seq["buf"] += content
            seq["sizes"].append(len(content))
            if seq["length"] is None and len(seq["buf"]) >= 9:
                seq["length"] = self.body_length(seq["buf"][:9], pos)
            if seq["length"] is not None:
                total = 9 + seq["length"]
                if len(seq["buf"]) > total:
                    self.fail("RECV-7", pos)
                if len(seq["buf"]) == total:
                    done.append((bytes(seq["buf"]), seq["sizes"]))
                    seq = None
        return done, seq

    def body_length(self, header, pos):
        length = int.from_bytes(header[5:9], "big", signed=True)
        if length < 0:
            self.fail("ENV-3", pos)
        if length > self.max_body:
            self.fail("RECV-12", pos)
        return length

    def envelope(self, env, sizes, pos):
        """An envelope's rules, at the frame that completes it (JUDGE-9's order)."""
        # A bare frame stream (the frames cases) names no version: ENV-2 is not judged there.
        if self.version is not None and env[0] != self.version | (0x80 if self.side == "server" else 0):
            return [Finding("ENV-2", self.side, pos)]  # refused on its own; nothing more judged
        if self.version == 6 and not env[1] & USE_BETA:
            return [Finding("ENV-5", self.side, pos)]
        out = []
        if sizes and any(s < SEQUENCE_FILL for s in sizes[:-1]):
            out.append(Finding("SEND-7", self.side, pos))
        if env[1] & COMPRESSION_FLAG:
            out.append(Finding("ENV-4", self.side, pos))
        return out


@dataclass
class Judgement:
    findings: list = field(default_factory=list)  # one per occurrence, in the order made
    notes: list = field(default_factory=list)  # what could not be judged (JUDGE-11)
    unjudged: list = field(default_factory=list)  # the same as (what, direction, rule, offset)
    switch: dict = field(default_factory=lambda: {"client": None, "server": None})

    def entries(self):
        """JUDGE-9: one entry per rule, direction and sender's rule, with the count and the first."""
        out = {}
        for f in self.findings:
            key = (f.rule, f.side, f.sender_rule)
            if key not in out:
                out[key] = dict(f.as_dict(), count=0)
            out[key]["count"] += 1
        return list(out.values())

    def as_dict(self):
        return {"findings": [f.as_dict() for f in self.findings], "entries": self.entries(),
                "notes": self.notes, "unjudged": self.unjudged, "switch": self.switch}


class Judge:
    def __init__(self, client, server, responds_after=None, node_checksums=None, max_body=MAX_BODY):
        self.data = {"client": client, "server": server}
        self.responds_after = responds_after  # client bytes written before the STARTUP response
        self.node_checksums = node_checksums  # the caller's word (JUDGE-7): a list, or None
        self.max_body = max_body
        self.out = Judgement()
        self.outstanding = {}  # stream -> client request envelope not yet answered
        self.supported = None  # FRAME_CHECKSUMS of the last SUPPORTED: None unseen, () without the key
        self.startup = None  # an outstanding STARTUP of v5 or later, with its options
        self.legacy = False  # a STARTUP of v4 or lower was sent: nothing ever switches (LIFE-2)
        self.broken = []  # the rules the server broke by taking the STARTUP

    def find(self, finding):
        self.out.findings.append(finding)

    def note(self, text, what):
        """What could not be judged (JUDGE-11): said in words, and as (what, direction, rule, offset)."""
        self.out.notes.append(text)
        self.out.unjudged.append(what)

    def known_checksums(self):
        if self.node_checksums is not None:
            return tuple(c.lower() for c in self.node_checksums)
        return self.supported

    def run(self):
        pos = {"client": 0, "server": 0}
        live = {"client": True, "server": True}
        while live["client"] or live["server"]:
            for side in ("client", "server"):  # turns, one envelope each way (JUDGE-2)
                if not live[side] or (side == "client" and self.startup):
                    continue
                # the rest of the client stream comes after the server's handshake ("What a
                # judge is given"): here, after a server that stopped before its response
                if side == "client" and live["server"] and self.responds_after is not None \
                        and pos["client"] >= self.responds_after:
                    continue
                if pos[side] == len(self.data[side]):
                    live[side] = False
                    continue
                try:
                    env = read_unframed(self.data[side], pos[side], side, self.max_body)
                except Stop as stop:
                    self.find(stop.finding)
                    live[side] = False
                    continue
                pos[side] = env.end
                if side == "client":
                    self.client_envelope(env)
                    if self.startup and self.early_bytes(env):
                        live["client"] = False
                elif self.server_envelope(env) is not None:
                    live["server"] = False
                if self.startup and self.startup.get("answer"):
                    return self.switched(live["client"])
            if self.startup and not live["server"]:
                at = self.startup["env"].offset
                self.note(f"the STARTUP at client byte {at} was never answered: where the client switches is unknown",
                          ("startup_unanswered", "client-to-server", None, at))
                if live["client"] and pos["client"] < len(self.data["client"]) and self.responds_after is None:
                    self.find(Finding("LIFE-6", "client", self.startup["env"].end))
                break
        return self.out

    def early_bytes(self, startup):
        """JUDGE-3: client bytes after the STARTUP that came before the response (or with it)."""
        # Bytes before `responds_after` came before the response; the rest of the client stream
        # is one write, so a STARTUP in it came together with what follows it (QUESTIONS.md Q24).
        n = self.responds_after
        if n is not None and len(self.data["client"]) > startup.end and (n > startup.end or n <= startup.offset):
            self.find(Finding("LIFE-6", "client", startup.end))
            return True  # judged alike whether the server closes or parses them (JUDGE-10)
        return False

    def client_envelope(self, env):
        version = env.version & 0x7F
        if env.version & 0x80:
            self.find(Finding("ENV-2", "client", env.offset))  # the direction bit, refused
            self.outstanding[env.stream] = env
            return
        if version == 6 and not env.flags & USE_BETA:
            self.find(Finding("ENV-5", "client", env.offset))  # refused, not processed
            self.outstanding[env.stream] = env
            return
        self.outstanding[env.stream] = env
        if env.opcode != STARTUP or self.legacy:
            return
        options = string_map(env.body)
        self.check_neg4(env, options)
        if version >= 5:
            self.startup = {"env": env, "options": options, "answer": None}
        else:
            self.legacy = True

    def check_neg4(self, env, options):
        asked = [v.lower() for k, v in options if k == "FRAME_CHECKSUM" and v.lower() != "crc32"]
        if not asked:
            return
        known = self.known_checksums()
        if known is None:
            self.note(f"FRAME_CHECKSUM {asked[0]!r} of the STARTUP at client byte {env.offset}: "
                      "NEG-4 cannot be judged, no SUPPORTED of the node came before it",
                      ("checksum", "client-to-server", "NEG-4", env.offset))
        elif any(a not in known for a in asked):
            self.find(Finding("NEG-4", "client", env.offset))

    def server_envelope(self, env):
        """Pairs a server envelope before the switch with a request (LIFE-13); returns a stop, if any."""
        if self.legacy:
            return None  # after a v4 STARTUP: native_protocol_v4.spec's business ("Pairing responses")
        # refused on its own ("Envelopes": ENV-2 asks only for the direction bit before the switch)
        if not env.version & 0x80:
            self.find(Finding("ENV-2", "server", env.offset))
            return None
        if env.version & 0x7F == 6 and not env.flags & USE_BETA:
            self.find(Finding("ENV-5", "server", env.offset))
            return None
        request = self.outstanding.get(env.stream)
        refused = [r for r in self.outstanding.values() if r.version & 0x7F != env.version & 0x7F]
        if env.opcode == ERROR and refused and (request is None or request in refused):
            # a refusal of the protocol version, on any stream (LIFE-11): no switch follows
            self.answered(request or refused[0])
            return None
        if request is not None:
            if request.opcode == STARTUP:
                if env.opcode not in (READY, AUTHENTICATE, ERROR):
                    self.find(Finding("LIFE-13", "server", env.offset))
                    return env
                self.check_answer(request, string_map(request.body), env)
                if self.startup and request is self.startup["env"]:
                    self.startup["answer"] = env  # the switch (LIFE-4, LIFE-5)
                    return None
            self.answered(request)
            if request.opcode == OPTIONS and env.opcode == SUPPORTED:
                listed = [v for k, v in string_map(env.body, multi=True) if k == "FRAME_CHECKSUMS"]
                self.supported = tuple(c.lower() for c in listed[0]) if listed else ()
            return None
        if env.opcode == ERROR and env.stream == 0 and env.error_code == PROTOCOL_ERROR:
            return None  # a framing error reported before the switch (ERR-6): the client's fault
        self.find(Finding("LIFE-13", "server", env.offset))
        return env

    def answered(self, request):
        del self.outstanding[request.stream]
        if self.startup and request is self.startup["env"]:
            self.startup = None  # refused: nothing switches

    def check_answer(self, startup, options, answer):
        """A server that takes a STARTUP it had to refuse ("A STARTUP taken that had to be refused")."""
        self.broken = []
        if answer.opcode == ERROR and answer.error_code == PROTOCOL_ERROR:
            return
        framed = startup.version & 0x7F >= 5
        broken = []
        if framed and any(k == "COMPRESSION" and v.lower() != "lz4" for k, v in options):
            broken.append("NEG-2")
        known = self.known_checksums()
        asked = [v.lower() for k, v in options if k == "FRAME_CHECKSUM" and v.lower() != "crc32"]
        if framed and asked and known is None:
            # said at the answer's first byte (JUDGE-11, "A FRAME_CHECKSUM that cannot be judged")
            self.note(f"FRAME_CHECKSUM {asked[0]!r} of the STARTUP at client byte {startup.offset}: "
                      f"NEG-6 cannot be judged at the answer at server byte {answer.offset}, no SUPPORTED "
                      "of the node came before it", ("checksum", "server-to-client", "NEG-6", answer.offset))
        elif framed and asked and known and any(c not in known for c in asked):
            broken.append("NEG-6")
        if len({k for k, _ in options}) < len(options):
            broken.append("NEG-9")
        # one rule per answer, the first in the order NEG-9, NEG-2, NEG-6 ("A STARTUP taken ...")
        for rule in sorted(broken, key=["NEG-9", "NEG-2", "NEG-6"].index)[:1]:
            self.find(Finding(rule, "server", answer.offset))
        self.broken = broken

    def switched(self, client_live):
        """After the response to a STARTUP of v5 or later (LIFE-4, LIFE-5, LIFE-8, "A STARTUP taken ...")."""
        st = self.startup
        start_env, answer, opts = st["env"], st["answer"], st["options"]
        first = {}
        for k, v in opts:
            first.setdefault(k, v.lower())
        asked = ("lz4" if first.get("COMPRESSION") == "lz4" else "uncompressed",
                 "crc32c" if first.get("FRAME_CHECKSUM") == "crc32c" else "crc32")
        broken = self.broken
        version = start_env.version & 0x7F
        plain = ("uncompressed", "crc32")
        # Each direction is read as its receiver decided (JUDGE-1): the client by what it asked,
        # the server by what it answered ("Negotiation cases", "A STARTUP taken that had to be refused").
        server_asked = bit_cause = None
        if answer.opcode == ERROR:
            server_fmt, client_fmt = plain, plain
            client_asked = server_asked = asked if asked != plain else None
        elif broken:
            server_fmt, client_fmt, client_asked = asked, plain, None
        elif self.known_checksums() == ():  # a server that ignores FRAME_CHECKSUM frames with CRC32
            server_fmt, client_fmt, client_asked = asked, (asked[0], "crc32"), None
            bit_cause = "NEG-4" if asked[1] != "crc32" else None
        else:
            server_fmt, client_fmt, client_asked = asked, asked, None
        self.out.switch = {"client": start_env.end, "server": answer.end}
        readers = [FramedReader(self.data["server"], answer.end, "server", *server_fmt, version, self.max_body,
                                server_asked, bit_cause)]
        if client_live:
            readers.insert(0, FramedReader(self.data["client"], start_env.end, "client", *client_fmt,
                                           version, self.max_body, client_asked, bit_cause))
        # After the switch the rest of the client stream came as one write, then the rest of the
        # server stream ("What a judge is given")
        for r in readers:
            for findings in r.units():
                self.out.findings.extend(findings)
        return self.out


def judge(client, server, **kw):
    return Judge(client, server, **kw).run()
