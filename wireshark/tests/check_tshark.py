#!/usr/bin/env python3
"""The dissector (wireshark/cqlframe.lua) under tshark, on the kit's captures.

    python3 wireshark/tests/check_tshark.py [--update-golden] [--quick]

Checks, each counted once:

* golden: every session capture vectors/pcap/<id>.pcap gives exactly the selected fields of
  wireshark/tests/golden/<id>.txt (see FIELDS; regenerate with --update-golden after a deliberate
  change of output, and review the diff);
* envelopes: the envelopes the dissector shows in each direction (version, flags, stream,
  opcode, body length, framed) equal the manifest's expected envelopes of that session
  (client_receives: what the server sent; server_receives: what the client sent), in order
  (RECV-6, RECV-13, LIFE-4, LIFE-5, LIFE-8, NEG-1, NEG-5); for an invalid session the
  manifest's list (up to the first error) is a prefix of the dissector's;
* segmentation: the same session written by `cqlframe pcap --mss 1`, `--mss 7` and `--mss 1460`
  gives the same envelope list as the committed capture (RECV-4, partial reads);
* negatives: each invalid session raises the expert info of its rule (the manifest's first
  error: LIFE-3, LIFE-6, RECV-1, RECV-3, ...; or that of one of the server's alternative
  outcomes, `server_receives_alternatives`), and no valid session raises an error;
* mid-connection: every frames case of the manifest, written as the server side of a capture
  whose TCP handshake is cut off, is noted as joined midway and decoded from the first
  self-contained frame whose CRC24 and payload checksum verify (as `cqlframe check` does): a
  valid case whose first frame is self-contained shows the manifest's envelopes, and every case
  at the default envelope body limit names the rules and capture notes check names
  (check_judge.compare), so that a frame seen from its middle is never judged as a protocol fault;
* robustness: mutated captures (editcap -E 0.02 --seed N, with and without payload checksum
  verification) produce no "Lua Error" on stderr or in the expert info.

Python 3.11 standard library; needs tshark, editcap and the cqlframe binary ($CQLFRAME_BIN,
default target/release/cqlframe).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from check_judge import compare
from expert import names

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "wireshark" / "cqlframe.lua"
GOLDEN = ROOT / "wireshark" / "tests" / "golden"
CQLFRAME = Path(os.environ.get("CQLFRAME_BIN", ROOT / "target" / "release" / "cqlframe"))
SERVER_PORT = "9042"
# the envelope body limit both tools default to (cqlframe check --max-body, cqlframe.max_body)
DEFAULT_MAX_BODY = 268435456

# The golden fields: one line per packet the dissector decoded something in.
FIELDS = [
    "frame.number", "tcp.srcport", "cqlframe.mode", "cqlframe.stream_offset",
    "cqlframe.frame.format", "cqlframe.frame.length", "cqlframe.frame.uncompressed_length",
    "cqlframe.frame.self_contained", "cqlframe.frame.checksum_bit", "cqlframe.frame.crc24",
    "cqlframe.frame.crc24.status", "cqlframe.frame.checksum", "cqlframe.frame.checksum.status",
    "cqlframe.frame.sequence.index", "cqlframe.version", "cqlframe.flags", "cqlframe.stream",
    "cqlframe.opcode", "cqlframe.length", "cqlframe.envelope.framed",
    "cqlframe.envelope.frame_count", "cqlframe.negotiated.format", "cqlframe.negotiated.checksum",
    "cqlframe.option.key", "cqlframe.option.value", "cqlframe.error.code", "cqlframe.query",
    "cqlframe.result.kind", "cqlframe.result.column", "cqlframe.result.rows_count",
    "_ws.expert.message", "_ws.col.Info",
]
ENVELOPE_FIELDS = ["tcp.srcport", "cqlframe.version", "cqlframe.flags", "cqlframe.stream",
                   "cqlframe.opcode", "cqlframe.length", "cqlframe.envelope.framed"]

passed = failed = 0


def check(ok: bool, what: str) -> None:
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}")


def tshark(pcap: Path, *args: str, prefs: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    cmd = ["tshark", "-X", f"lua_script:{PLUGIN}", "-r", str(pcap)]
    for p in prefs:
        cmd += ["-o", p]
    return subprocess.run(cmd + list(args), capture_output=True, text=True)


def fields(pcap: Path, names: list[str], prefs: tuple[str, ...] = ()) -> tuple[str, str]:
    args = ["-Y", "cqlframe", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-E", "separator=\t"]
    for n in names:
        args += ["-e", n]
    r = tshark(pcap, *args, prefs=prefs)
    return r.stdout, r.stderr


def envelopes(pcap: Path, prefs: tuple[str, ...] = ()) -> tuple[dict[str, list[tuple]], str, list[str], str]:
    """Per direction ('server' = sent by the server), the envelopes in order; also the expert
    messages, their severities and stderr, from the same run."""
    out, err = fields(pcap, ENVELOPE_FIELDS + ["_ws.expert.message", "_ws.expert.severity"], prefs)
    result: dict[str, list[tuple]] = {"client": [], "server": []}
    messages: list[str] = []
    severities: list[int] = []
    for line in out.splitlines():
        cols = line.split("\t")
        messages += [m for m in cols[-2].split("|") if m]
        severities += [int(v, 0) for v in cols[-1].split("|") if v]
        cols = cols[:-2]
        side = "server" if cols[0] == SERVER_PORT else "client"
        parts = [c.split("|") if c else [] for c in cols[1:]]
        n = len(parts[0])
        if any(len(p) != n for p in parts):
            result[side].append(("MISMATCHED FIELD COUNTS", line))
            continue
        for k in range(n):
            v, fl, st, op, ln, fr = (p[k] for p in parts)
            result[side].append((int(v, 16), int(fl, 16), int(st), int(op, 16), int(ln), fr in ("1", "True")))
    return result, err, messages, severities


def manifest_envelopes(side: dict) -> list[tuple]:
    return [(e["version"], e["flags"], e["stream"], e["opcode"], e["length"], e.get("framed", True))
            for e in side["envelopes"]]


def session_size(case: dict) -> int:
    return case["client_stream"]["length"] + case["server_stream"]["length"]


def outcomes(case: dict, key: str) -> list[dict]:
    """What a conforming receiver of a session may report: the expected result, then the
    alternatives the spec allows (a server's `server_receives_alternatives`)."""
    return [case["expected"][key]] + case["expected"].get(key + "_alternatives", [])


def lua_error(text: str) -> bool:
    return "Lua Error" in text or "lua_error" in text.lower()


def write_pcap(out: Path, *args: str) -> None:
    subprocess.run([str(CQLFRAME), "pcap", "--root", str(ROOT), *args, "-o", str(out)], check=True,
                   capture_output=True)


# Small streams only in 1-byte segments: Wireshark's own TCP reassembly is quadratic in the
# number of segments of one PDU, and a 131060-byte frame in 1-byte segments takes it many minutes
# (measured with perf: the time is in libwireshark's reassembly, not in the Lua dissector).
ONE_BYTE_LIMIT = 20000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--update-golden", action="store_true", help="rewrite wireshark/tests/golden/")
    ap.add_argument("--quick", action="store_true", help="skip the 1-byte segmentation and fewer mutations")
    ap.add_argument("--jobs", type=int, default=min(os.cpu_count() or 2, 4))
    a = ap.parse_args()

    manifest = json.loads((ROOT / "vectors" / "manifest.json").read_text())
    sessions = [c for c in manifest["cases"] if c["kind"] == "session"]
    frames_cases = [c for c in manifest["cases"] if c["kind"] == "frames"]
    tmp = Path(tempfile.mkdtemp(prefix="cqlframe-ws-"))
    GOLDEN.mkdir(parents=True, exist_ok=True)
    pool = ThreadPoolExecutor(max_workers=a.jobs)
    results: list[list[tuple[bool, str]]] = []

    # 1. golden outputs, envelopes against the manifest, expert infos of the negatives
    def session_checks(case: dict) -> tuple[list[tuple[bool, str]], dict | None]:
        cid = case["id"]
        pcap = ROOT / "vectors" / "pcap" / f"{cid}.pcap"
        if not pcap.exists():
            return [(False, f"{cid}: capture {pcap} missing")], None
        r: list[tuple[bool, str]] = []
        out, err = fields(pcap, FIELDS)
        r.append((not lua_error(out + err), f"{cid}: Lua error: {err.strip()[:300]}"))
        golden = GOLDEN / f"{cid}.txt"
        if a.update_golden:
            golden.write_text(out)
        want = golden.read_text() if golden.exists() else None
        r.append((want == out, f"{cid}: output differs from {golden.relative_to(ROOT)}"
                  + ("" if want is not None else " (missing: run with --update-golden)")))
        envs, err, messages, severities = envelopes(pcap)
        for side, key in (("server", "client_receives"), ("client", "server_receives")):
            wants = [manifest_envelopes(o) for o in outcomes(case, key)]
            got = envs[side]
            ok = any(got == w if case["valid"] else got[: len(w)] == w for w in wants)
            r.append((ok, f"{cid}: {side} envelopes {got} != manifest {wants[0]}"))
        if not case["valid"]:
            for k in ("server_receives", "client_receives"):
                rules = [o["error"]["rule"] for o in outcomes(case, k) if o["error"]]
                # a stream that ends inside a unit (RECV-9) is not visible in a capture: TCP
                # reassembly waits for the rest
                if rules and "RECV-9" not in rules:
                    r.append((any(names(messages, rule) for rule in rules),
                              f"{cid}: no expert info names {' or '.join(rules)}"))
        else:
            bad = [s for s in severities if s >= 0x00800000]   # PI_ERROR
            r.append((not bad, f"{cid}: valid session raises {len(bad)} error expert infos"))
        return r, envs

    committed: dict[str, dict] = {}
    for case, (r, envs) in zip(sessions, pool.map(session_checks, sessions)):
        results.append(r)
        if envs is not None:
            committed[case["id"]] = envs

    # 2. the same sessions in other segmentations
    def segmentation(job: tuple[dict, int]) -> list[tuple[bool, str]]:
        case, mss = job
        cid = case["id"]
        pcap = tmp / f"{cid}.mss{mss}.pcap"
        write_pcap(pcap, "--case", cid, "--mss", str(mss))
        envs, err, _, _ = envelopes(pcap)
        return [(not lua_error(err), f"{cid} mss {mss}: Lua error: {err.strip()[:300]}"),
                (envs == committed[cid], f"{cid} mss {mss}: envelopes differ from the committed capture")]

    jobs = []
    for case in sessions:
        if case["id"] not in committed:
            continue
        for mss in (7, 1460) if a.quick else (1, 7, 1460):
            if mss == 1 and session_size(case) > ONE_BYTE_LIMIT:
                continue
            jobs.append((case, mss))
    results += list(pool.map(segmentation, jobs))

    # 3. frames cases as mid-connection captures (the SYN handshake cut off)
    empty = tmp / "empty.bin"
    empty.write_bytes(b"")

    def mid_connection(case: dict) -> list[tuple[bool, str]]:
        cid = case["id"]
        full = tmp / f"{cid}.full.pcap"
        pcap = tmp / f"{cid}.pcap"
        write_pcap(full, "--client", str(empty), "--server", str(ROOT / "vectors" / case["input"]["file"]))
        subprocess.run(["editcap", str(full), str(pcap), "1-3"], check=True, capture_output=True)
        envs, err, messages, _ = envelopes(pcap, (f"cqlframe.max_body:{case['max_envelope_body']}",))
        r = [(not lua_error(err), f"{cid}: Lua error: {err.strip()[:300]}")]
        r.append(("Capture joined the connection midway" in "\n".join(messages) or
                  any("joined midway" in m for m in messages), f"{cid}: no joined-midway note"))
        exp = case["expected"]
        frames = exp["frames"]
        # a capture that starts midway is decoded from the first self-contained frame whose CRC24
        # and payload checksum verify, as check decodes it: when that is the first frame of a
        # valid case, every envelope of the manifest is shown
        if case["valid"] and frames and frames[0]["self_contained"]:
            want_envs = manifest_envelopes(exp)
            r.append((envs["server"] == want_envs, f"{cid}: envelopes {envs['server']} != manifest {want_envs}"))
        # and whatever is shown names the rules and capture notes that check names
        if case["max_envelope_body"] == DEFAULT_MAX_BODY:
            r += [(ok, f"{cid} (joined midway): {what}") for ok, what in compare(pcap, 9042)]
        return r

    results += list(pool.map(mid_connection, frames_cases))

    # 4. mutated captures: no Lua error, with and without payload verification
    seeds = [1, 2] if a.quick else [1, 2, 3, 4]
    sources = [ROOT / "vectors" / "pcap" / f"{c['id']}.pcap" for c in sessions]
    sources += [tmp / f"{c['id']}.mss7.pcap" for c in sessions if session_size(c) <= ONE_BYTE_LIMIT]

    def mutation(job: tuple[Path, int]) -> list[tuple[bool, str]]:
        src, seed = job
        mutated = tmp / f"mut-{src.stem}-{seed}.pcap"
        subprocess.run(["editcap", "-E", "0.02", "--seed", str(seed), str(src), str(mutated)], check=True,
                       capture_output=True)
        prefs = () if seed % 2 else ("cqlframe.verify:FALSE",)
        # every tree item is added (fields output still runs all the dissector's code); a Lua
        # error shows as an expert message "Lua Error: ..." or on stderr
        r = tshark(mutated, "-T", "fields", "-e", "_ws.expert.message", prefs=prefs)
        text = r.stdout + r.stderr
        return [(not lua_error(text), f"{mutated.name} {prefs}: Lua error: "
                 + next((l for l in text.splitlines() if "Lua" in l), "")[:300])]

    results += list(pool.map(mutation, [(s, seed) for s in sources if s.exists() for seed in seeds]))

    pool.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    for r in results:
        for ok, what in r:
            check(ok, what)
    print(f"tshark: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
