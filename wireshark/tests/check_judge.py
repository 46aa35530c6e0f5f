#!/usr/bin/env python3
"""The dissector names the same rules as the kit's rules engine.

    python3 wireshark/tests/check_judge.py [--port 9042] [--jobs N] CAPTURE_OR_FOLDER...

For every capture (a folder stands for every *.pcap under it), per TCP connection: the set of
(direction, rule, sender rule, level) named by the expert infos of wireshark/cqlframe.lua under
tshark equals the set `cqlframe check --json` reports in its `rules` (reference/harness/src/
rules/). Direction comes from the packet's ports (source port = the CQL port: server to client);
the level from the expert severity (error and warning: MUST, note: SHOULD); and the notes on what
the capture cannot show (bytes missing from it, a connection joined midway, where decoding starts
again) and on what the handshake left undecided (JUDGE-11), CAPTURE_NOTES, equal check's `notes`,
word for word. Both tools run with their default
envelope body limit, so that defaults that differ show. tshark reads in two passes, so that bytes
held behind a hole that never fills are judged at the end, as check judges them. Findings a receiver
would never reach are not compared, nor the dissector's remarks that name no rule of the judge:
NOT_COMPARED lists each with the reason, nor the judge's findings JUDGE_NOT_COMPARED lists. Every other expert info of the dissector must name its
rule in the finding format (wireshark/tests/expert.py), or the test fails.

Prints the connections that differ, and "judge: N passed, M failed" (one check per connection,
plus one per capture that could not be read). Python 3.11 standard library; needs tshark and the
cqlframe binary ($CQLFRAME_BIN, default target/release/cqlframe).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from expert import named

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "wireshark" / "cqlframe.lua"
CQLFRAME = Path(os.environ.get("CQLFRAME_BIN", ROOT / "target" / "release" / "cqlframe"))
# Both tools run with their defaults (envelope body limit, port), so that defaults that differ
# show as a difference; only a port other than the default is passed to both.
DEFAULT_PORT = 9042

# The dissector's expert infos that are not compared with the judge, and why.
NOT_COMPARED = {
    "after_error": "a frame decoded after a framing error of its direction: a receiver stops at "
                   "that error (RECV-11), and so does the judge; the dissector goes on where it "
                   "still knows the frame boundaries",
    "unframed_after_switch": "LIFE-7 is the dissector's reading of a header that fails its CRC24 "
                             "(it looks like an unframed envelope); a receiver detects RECV-1, "
                             "which is compared",
    "orphaned": "a client's bytes after the segment of its STARTUP when the server's direction "
                "stopped before the STARTUP response: the judge stops there too, with no finding",
    "unsynchronised": "data that starts with neither a verified frame header nor an envelope: "
                      "where decoding begins, no rule",
    "no_frame": "bytes searched in vain for a frame to decode from (a join, a gap): compared "
                "as a capture note (CAPTURE_NOTES)",
    "capture_gap": "bytes missing from the capture: compared as a capture note (CAPTURE_NOTES)",
    "joined": "a connection joined midway: compared as a capture note (CAPTURE_NOTES)",
    "resynchronised": "where decoding starts after a join or a gap: compared as a capture note "
                      "(CAPTURE_NOTES)",
    "unjudged": "what the handshake left undecided (JUDGE-11): compared as a capture note "
                "(CAPTURE_NOTES)",
    "capture_held": "bytes held behind a hole on a one-pass read, judged at the end of a two-pass "
                    "read (this test reads in two passes)",
    "switch": "the course of the handshake (chat): no rule broken",
    "detected": "the frame format detected without a handshake (chat): no rule broken",
    "no_switch": "a refused protocol version, no switch (LIFE-11): what happened, no rule broken",
    "malformed_body": "an envelope body that ends early: the CQL layer above framing, which the "
                      "judge does not check",
}
# The dissector's notes, compared word for word with the notes of check's report: what the
# capture cannot show (a gap, a connection joined midway, where decoding starts again) and what
# the handshake left undecided (JUDGE-11: a STARTUP never answered, a FRAME_CHECKSUM judged
# against nothing known of the node).
CAPTURE_NOTES = ("capture_gap", "joined", "resynchronised", "no_frame", "unjudged")
# The judge's findings that are not compared with the dissector, and why.
JUDGE_NOT_COMPARED = {
    "RECV-9": "a stream that ends inside a frame, a sequence or an unframed envelope: the judge "
              "sees the capture end; the dissector never learns it, as TCP reassembly waits for "
              "the rest",
}
PAST_REASON = ("a finding past its direction's first framing error: a receiver has stopped "
               "there (RECV-11) and the judge with it")

KEY_PREFIX = "cqlframe.expert."
SEVERITY_LEVEL = {0x00800000: "MUST", 0x00600000: "MUST", 0x00400000: "SHOULD"}   # error, warn, note

# (direction, rule, sender rule or "", level)
Named = tuple[str, str, str, str]


@dataclass
class Conn:
    """One TCP connection of a capture as one tool saw it."""
    client: str
    server: str
    rules: set[Named] = field(default_factory=set)
    # what the capture cannot show and the handshake left undecided, in both tools' words
    # (CAPTURE_NOTES)
    notes: set[str] = field(default_factory=set)
    detail: list[str] = field(default_factory=list)


def judge(pcap: Path, port: int) -> list[Conn]:
    r = subprocess.run([str(CQLFRAME), "check", str(pcap), "--json", "--no-progress",
                        *(["--port", str(port)] if port != DEFAULT_PORT else [])],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):   # 1: a MUST rule is broken, which is a result
        raise RuntimeError(f"cqlframe check exited {r.returncode}: {r.stderr.strip()[:300]}")
    conns = []
    for c in json.loads(r.stdout)["connections"]:
        conn = Conn(c["client"], c["server"])
        for e in c["rules"]:
            if e["rule"] not in JUDGE_NOT_COMPARED:
                conn.rules.add((e["direction"], e["rule"], e.get("sender_rule") or "", e["level"]))
            conn.detail.append(f"judge: {e['direction']} {e['rule']} x{e['count']} at offset "
                               f"{e['offset']}: {e['message']}")
        for n in c["notes"]:
            conn.notes.add(n)
            conn.detail.append(f"judge: note: {n}")
        conns.append(conn)
    return conns


def dissector(pcap: Path, port: int) -> tuple[list[Conn], list[str]]:
    """The connections with the rules their expert infos name, and the problems found in the
    expert infos themselves (unknown keys, a finding that names no rule, a Lua error)."""
    # two passes (-2; -R makes the first pass build the TCP fields the dissector reads): bytes
    # held behind a hole that never fills are judged at the end, as check judges them
    r = subprocess.run(["tshark", "-X", f"lua_script:{PLUGIN}", "-r", str(pcap), "-n", "-2", "-R", "frame",
                        *(["-o", f"cqlframe.port:{port}"] if port != DEFAULT_PORT else []),
                        "-Y", "_ws.expert", "-T", "pdml"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tshark exited {r.returncode}: {r.stderr.strip()[:300]}")
    streams: dict[str, Conn] = {}
    problems = []
    for packet in ET.fromstring(r.stdout).iter("packet"):
        values = {f.get("name"): f.get("show") for f in packet.iter("field")
                  if f.get("name") in ("ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "tcp.srcport",
                                       "tcp.dstport", "tcp.stream", "frame.number")}
        src_ip = values.get("ip.src") or values.get("ipv6.src")
        dst_ip = values.get("ip.dst") or values.get("ipv6.dst")
        sport, dport = int(values["tcp.srcport"]), int(values["tcp.dstport"])
        to_client = sport == port
        src, dst = f"{src_ip}:{sport}", f"{dst_ip}:{dport}"
        conn = streams.setdefault(values["tcp.stream"],
                                  Conn(dst, src) if to_client else Conn(src, dst))
        direction = "server-to-client" if to_client else "client-to-server"
        for item in packet.iter("field"):
            if item.get("name") != "_ws.expert":
                continue
            parts = {f.get("name"): f for f in item}
            message = parts["_ws.expert.message"].get("show")
            if "Lua Error" in message:
                problems.append(f"packet {values['frame.number']}: {message}")
                continue
            keys = [k for k in parts if k.startswith(KEY_PREFIX)]
            if not keys:
                continue   # TCP's, not the dissector's
            key = keys[0][len(KEY_PREFIX):]
            if key in CAPTURE_NOTES:
                conn.notes.add(message)
                conn.detail.append(f"dissector: packet {values['frame.number']} note: {message}")
            if key in NOT_COMPARED:
                continue
            n = named(message)
            level = SEVERITY_LEVEL.get(int(parts["_ws.expert.severity"].get("show")))
            where = f"packet {values['frame.number']} {direction} [{key}]"
            if n is None or level is None:
                problems.append(f"{where}: names no rule at a level (not in NOT_COMPARED): {message}")
                continue
            if n.past:
                continue   # PAST_REASON
            conn.rules.add((direction, n.rule, n.sender or "", level))
            conn.detail.append(f"dissector: {where} {level}: {message}")
    return list(streams.values()), problems


def pairs(pcap: Path, port: int) -> tuple[list[str], list[tuple[str, Conn, Conn]]]:
    """The problems in the dissector's expert infos, and each connection as (label, check's
    view, the dissector's view), paired by endpoints in order (a port pair may be reused)."""
    judged = judge(pcap, port)
    shown, problems = dissector(pcap, port)
    by_pair: dict[tuple[str, str], list[Conn]] = defaultdict(list)
    for c in shown:
        by_pair[(c.client, c.server)].append(c)
    out = []
    for k, c in enumerate(judged, 1):
        pair = (c.client, c.server)
        d = by_pair[pair].pop(0) if by_pair[pair] else Conn(*pair)
        out.append((f"connection {k} {c.client} -> {c.server}", c, d))
    for pair, rest in by_pair.items():
        for d in rest:
            out.append((f"connection {pair[0]} -> {pair[1]} (not in check's report)", Conn(*pair), d))
    return problems, out


def compare(pcap: Path, port: int) -> list[tuple[bool, str]]:
    try:
        problems, paired = pairs(pcap, port)
    except (RuntimeError, json.JSONDecodeError, ET.ParseError, KeyError, UnicodeDecodeError) as e:
        # UnicodeDecodeError: a label of the dissector is not UTF-8 (bytes from the wire)
        return [(False, f"{pcap}: {e}")]
    results = [(not problems, f"{pcap}: " + "\n    ".join(problems))]
    results += [verdict(pcap, label, j, d) for label, j, d in paired]
    return results


def verdict(pcap: Path, what: str, j: Conn, d: Conn) -> tuple[bool, str]:
    if j.rules == d.rules and j.notes == d.notes:
        return True, ""
    fmt = lambda s: ", ".join("/".join(x for x in t if x) for t in sorted(s)) or "none"
    lines = [f"{pcap.name} {what}:",
             f"  only check:     {fmt(j.rules - d.rules)}",
             f"  only dissector: {fmt(d.rules - j.rules)}"]
    if j.notes != d.notes:
        lines += [f"  capture notes only check:     {sorted(j.notes - d.notes)}",
                  f"  capture notes only dissector: {sorted(d.notes - j.notes)}"]
    lines += [f"    {x}" for x in j.detail + d.detail]
    return False, "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("captures", nargs="+", type=Path)
    ap.add_argument("--port", type=int, default=9042, help="the CQL server port")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    pcaps = []
    for c in a.captures:
        found = sorted(c.rglob("*.pcap")) if c.is_dir() else [c]
        if not found:
            print(f"FAIL {c}: no capture")
            return 1
        pcaps += found
    passed = failed = 0
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for results in pool.map(lambda p: compare(p, a.port), pcaps):
            for ok, what in results:
                if ok:
                    passed += 1
                else:
                    failed += 1
                    print(f"FAIL {what}")
    print(f"judge: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
