"""Interoperability of real components on both sides: the Python and Java drivers, as released
and with the kit's CRC32C opt-in (conformance/drivers/*), against the live node of
cassandra/run.sh, with or without the kit's CRC32C extension. Each session is captured, and what
it negotiated is read from the capture, not from the driver.

    python interop.py drive PORT NODE OUT.json      NODE: plain | crc32c
    python interop.py judge PORT CAPTURE RUNS.json  (after the capture has ended)

`drive` (the conformance Python adapter's venv: it needs cassandra-driver) writes ks.t on the
node with the released Python driver and reads it back (its own session, the `setup` run), then
runs the adapters (conformance/drivers/{python,java}/run) one after the other, each with
`--action select` and, for the opted-in drivers on the extended node, `insert-large` too (the
driver then sends sequences of frames, as the node does for the select). It records each run's
wall-clock window and report in RUNS.json; a run whose workload fails or whose rows differ from
what setup wrote fails here.

`judge` runs `cqlframe check --json` ($CQLFRAME_BIN) and tshark with wireshark/cqlframe.lua on
the capture, gives each connection and each packet to the run whose window holds it, and
asserts, per run, the row of the spec's negotiation table (spec/framing_v6.adoc, "Negotiation
cases") it shows: every connection seen from its start, no MUST violation (SHOULD findings are
printed, not failed), at least one framed connection and every framed one negotiated with the
row's payload checksum; the dissector decodes every frame of the run with that checksum, the
checksum bit as the row says, CRC24 and payload checksum good, with no expert info of its own at
warning or error level and no Lua error; an opted-in driver's own count of its connections'
checksums names the same one. A CQL frame outside every window fails too. Prints one line per
run and writes interop.json beside the capture. Exit status 1 on any failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CQLFRAME = os.environ.get("CQLFRAME_BIN", str(ROOT / "target" / "release" / "cqlframe"))
DISSECTOR = ROOT / "wireshark" / "cqlframe.lua"
# The insert-large blob: a literal of twice as many hex digits, a sequence of frames.
INSERT_BLOB = 150_000
# Rows of ks.t besides k = 1, which holds what insert-large writes (so it changes nothing).
ROW_SIZES = {0: 200_000, 2: 1_000, 3: 20}
# Severity of tshark's expert infos: warning and error.
WARNING = 0x00600000

ROW_NEITHER = "neither side extended: plain protocol v5"
ROW_OLD_SERVER = "old server, new client"
ROW_OLD_CLIENT = "new server, old client"
ROW_BOTH = "new server lists crc32 and crc32c; client wants CRC32C"


@dataclass
class Run:
    """One driver session against the node, and the negotiation row it must show."""
    name: str
    driver: str          # python | java
    opt_in: bool         # the kit's CRC32C opt-in loaded (--checksum crc32c)
    compression: str     # none | lz4
    action: str          # setup | select | insert-large
    row: str             # the row of the spec's negotiation table
    checksum: str        # what every framed connection must have negotiated
    start: float = 0.0
    end: float = 0.0
    report: dict | None = None


def runs_for(node: str) -> list[Run]:
    """The sessions against a node: setup first, then every driver the node's rows need."""
    if node == "plain":
        runs = [Run("setup", "python", False, "none", "setup", ROW_NEITHER, "crc32")]
        runs += [Run(f"{d}-opt-in-{c}-select", d, True, c, "select", ROW_OLD_SERVER, "crc32")
                 for d in ("python", "java") for c in ("none", "lz4")]
        return runs
    runs = [Run("setup", "python", False, "none", "setup", ROW_OLD_CLIENT, "crc32")]
    runs += [Run(f"java-{c}-select", "java", False, c, "select", ROW_OLD_CLIENT, "crc32")
             for c in ("none", "lz4")]
    runs += [Run(f"{d}-opt-in-{c}-{a}", d, True, c, a, ROW_BOTH, "crc32c")
             for d in ("python", "java") for c in ("none", "lz4") for a in ("select", "insert-large")]
    return runs


def blob(k: int) -> bytes:
    """Row k's value: insert-large's bytes (7i + 3) for k = 1, (31k + 7i + 1) mod 256 otherwise."""
    if k == 1:
        return bytes((7 * i + 3) & 0xFF for i in range(INSERT_BLOB))
    return bytes((31 * k + 7 * i + 1) & 0xFF for i in range(ROW_SIZES[k]))


def digest(rows) -> str:
    """The adapters' digest of rows (conformance/README.md, "Writing an adapter")."""
    h = hashlib.sha256()
    for k, v in rows:
        h.update(int(k).to_bytes(4, "big", signed=True) + len(v).to_bytes(4, "big") + v)
    return h.hexdigest()


def setup(port: int) -> str:
    """Writes ks.t with the released Python driver, reads it back, returns the adapters' digest of
    `SELECT k, v FROM ks.t` (rows in the node's token order)."""
    from cassandra import ProtocolVersion
    from cassandra.cluster import Cluster

    cluster = Cluster(["127.0.0.1"], port=port, protocol_version=ProtocolVersion.V5,
                      compression=False, connect_timeout=20)
    try:
        session = cluster.connect()
        session.default_timeout = 60
        session.execute("CREATE KEYSPACE IF NOT EXISTS ks WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute("CREATE TABLE IF NOT EXISTS ks.t (k int PRIMARY KEY, v blob)")
        insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        written = {k: blob(k) for k in [1, *ROW_SIZES]}
        for k, v in written.items():
            session.execute(insert, (k, v))
        rows = [(r.k, bytes(r.v)) for r in session.execute("SELECT k, v FROM ks.t")]
    finally:
        cluster.shutdown()
    if dict(rows) != written:
        raise SystemExit("interop: ks.t does not read back as written")
    return digest(rows)


def adapter(run: Run, port: int) -> tuple[int, dict]:
    args = [str(ROOT / "conformance" / "drivers" / run.driver / "run"), "--host", "127.0.0.1",
            "--port", str(port), "--case", f"interop.{run.name}", "--action", run.action,
            "--compression", run.compression, "--checksum", "crc32c" if run.opt_in else "default",
            "--protocol", "default", "--timeout", "30", "--blob-size", str(INSERT_BLOB)]
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    try:
        return p.returncode, json.loads(p.stdout)
    except json.JSONDecodeError:
        return p.returncode, {"error": f"no report; stderr: {p.stderr.strip()[-500:]}"}


def drive(port: int, node: str, out: Path) -> int:
    runs = runs_for(node)
    failures = 0
    expected = None
    for run in runs:
        run.start = time.time()
        if run.action == "setup":
            expected = setup(port)
            run.report = {"digest": expected}
            status, problem = 0, None
        else:
            status, run.report = adapter(run, port)
            results = run.report.get("results") or []
            problem = run.report.get("error") or next((r["error"] for r in results if "error" in r), None)
            if not problem and not results:
                problem = "no result"
            if not problem and run.action == "select" and results[0].get("digest") != expected:
                problem = f"rows differ from ks.t: {results[0]}"
        run.end = time.time()
        if status != 0 or problem:
            failures += 1
            print(f"interop: FAIL {run.name}: exit {status}: {problem}")
        else:
            print(f"interop: {run.name}: ran in {run.end - run.start:.1f} s")
    out.write_text(json.dumps([asdict(r) for r in runs], indent=1))
    return 1 if failures else 0


def packets(capture: Path, port: int) -> tuple[dict[int, float], list[dict], list[tuple[int, str]], list[str]]:
    """Per packet its time; per packet with CQL frames what the dissector decoded; the
    dissector's own expert infos at warning or error level (packet, message); Lua errors."""
    common = ["tshark", "-n", "-X", f"lua_script:{DISSECTOR}", "-o", f"cqlframe.port:{port}", "-r", str(capture)]
    fields = ["frame.number", "frame.time_epoch", "cqlframe.frame.checksum.algorithm", "cqlframe.frame.checksum_bit",
              "cqlframe.frame.crc24.status", "cqlframe.frame.checksum.status"]
    p = subprocess.run(common + ["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]
                       + [a for f in fields for a in ("-e", f)], capture_output=True, text=True, check=True)
    lua_errors = [line for line in p.stderr.splitlines() + p.stdout.splitlines() if "Lua Error" in line]
    times, framed = {}, []
    for line in p.stdout.splitlines():
        number, when, algorithms, bits, crc24, payload = (line.split("\t") + [""] * 6)[:6]
        times[int(number)] = float(when)
        if algorithms:
            framed.append({"packet": int(number), "algorithms": algorithms.split("|"), "bits": bits.split("|"),
                           "status": crc24.split("|") + payload.split("|")})
    p = subprocess.run(common + ["-Y", f"cqlframe && _ws.expert.severity >= {WARNING}", "-T", "pdml"],
                       capture_output=True, text=True, check=True)
    experts = []
    for packet in ET.fromstring(p.stdout).iter("packet"):
        number = int(next(f.get("show") for f in packet.iter("field") if f.get("name") == "frame.number"))
        for item in packet.iter("field"):
            parts = {f.get("name"): f.get("show") for f in item}
            if item.get("name") == "_ws.expert" and any(k.startswith("cqlframe.expert.") for k in parts) \
                    and int(parts["_ws.expert.severity"]) >= WARNING:
                experts.append((number, parts["_ws.expert.message"]))
    return times, framed, experts, lua_errors


def judge(port: int, capture: Path, runs_file: Path) -> int:
    runs = json.loads(runs_file.read_text())
    check = subprocess.run([CQLFRAME, "check", "--json", "--no-progress", "--port", str(port), str(capture)],
                           capture_output=True, text=True)
    if check.returncode not in (0, 1):   # 1: a MUST rule is broken, judged below
        raise SystemExit(f"interop: cqlframe check exited {check.returncode}: {check.stderr.strip()}")
    times, framed, experts, stray = packets(capture, port)

    def owner(packet: int) -> dict | None:
        """The run whose window holds the packet."""
        return next((r for r in runs if r["start"] <= times[packet] <= r["end"]), None)

    problems = {r["name"]: [] for r in runs}
    connections = {r["name"]: [] for r in runs}
    findings = {r["name"]: set() for r in runs}
    # Sequences of frames per run and direction: the large rows go both ways.
    sequences = {r["name"]: {"client_to_server": 0, "server_to_client": 0} for r in runs}
    frames = {r["name"]: {} for r in runs}
    for c in json.loads(check.stdout)["connections"]:
        run = owner(c["first_packet"])
        if run is None:
            stray.append(f"connection {c['id']} ({c['client']}) outside every run's window")
            continue
        connections[run["name"]].append(c["negotiated"] or "not framed")
        for d in sequences[run["name"]]:
            sequences[run["name"]][d] += c[d]["sequences"]
        findings[run["name"]].update(f"{v['rule']} ({v['level']}, {v['direction']})" for v in c["rules"])
        out = problems[run["name"]]
        if c["handshake"] != "seen":
            out.append(f"connection {c['id']}: handshake {c['handshake']}")
        if c["violations"]:
            out.append(f"connection {c['id']}: {c['violations']} violations: "
                       + "; ".join(f"{v['rule']} {v['message']}" for v in c["rules"] if v["level"] == "MUST"))
        if c["negotiated"] and c["negotiated"].split()[-1] != run["checksum"]:
            out.append(f"connection {c['id']}: negotiated {c['negotiated']}, the row says {run['checksum']}")
    for f in framed:
        run = owner(f["packet"])
        if run is None:
            stray.append(f"packet {f['packet']} (CQL frames) outside every run's window")
            continue
        for a in f["algorithms"]:
            frames[run["name"]][a] = frames[run["name"]].get(a, 0) + 1
        bit = "1" if run["checksum"] == "crc32c" else "0"
        if set(f["algorithms"]) != {run["checksum"]} or set(f["bits"]) != {bit}:
            problems[run["name"]].append(f"packet {f['packet']}: dissector shows {f['algorithms']}, bits {f['bits']}")
        if set(f["status"]) != {"1"}:
            problems[run["name"]].append(f"packet {f['packet']}: CRC24 and payload status {f['status']} (1: good)")
    for packet, message in experts:
        run = owner(packet)
        (problems[run["name"]] if run else stray).append(f"dissector, packet {packet}: {message}")
    results = []
    for r in runs:
        name = r["name"]
        if all(n == "not framed" for n in connections[name]):
            problems[name].append("no framed connection in the capture")
        # select reads rows of 200 KB, insert-large writes a 300 KB literal: sequences each way.
        direction = {"select": "server_to_client", "insert-large": "client_to_server"}.get(r["action"])
        if direction and not sequences[name][direction]:
            problems[name].append(f"no sequence of frames {direction.replace('_', ' ')}")
        said = ((r["report"] or {}).get("negotiated") or {}).get("frame_checksums")
        if said is not None and set(said) != {r["checksum"]}:
            problems[name].append(f"the driver says {said}, the capture {r['checksum']}")
        results.append({"run": name, "row": r["row"], "driver": r["driver"], "opt_in": r["opt_in"],
                        "compression": r["compression"], "action": r["action"], "expected": r["checksum"],
                        "connections": connections[name], "dissector_frames": frames[name], "driver_says": said,
                        "sequences": sequences[name], "findings": sorted(findings[name]), "problems": problems[name]})
        counted = ", ".join(f"{n} {a}" for a, n in sorted(frames[name].items()))
        print(f"{'FAIL' if problems[name] else 'ok':4} {name:28} [{r['row']}] capture: "
              f"{', '.join(connections[name])}; dissector: {counted} frames"
              + (f"; findings: {', '.join(sorted(findings[name]))}" if findings[name] else ""))
        for p in problems[name][:8]:
            print(f"     {p}")
        if len(problems[name]) > 8:
            print(f"     ... {len(problems[name]) - 8} more in interop.json")
    for s in stray:
        print(f"FAIL {s}")
    (capture.parent / "interop.json").write_text(json.dumps({"runs": results, "stray": stray}, indent=1))
    failed = sum(bool(r["problems"]) for r in results)
    print(f"interop: {len(results) - failed} runs as the negotiation table says, {failed + len(stray)} failures")
    return 1 if failed or stray else 0


def main() -> int:
    if len(sys.argv) != 5 or sys.argv[1] not in ("drive", "judge"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    port = int(sys.argv[2])
    if sys.argv[1] == "drive":
        return drive(port, sys.argv[3], Path(sys.argv[4]))
    return judge(port, Path(sys.argv[3]), Path(sys.argv[4]))


if __name__ == "__main__":
    sys.exit(main())
