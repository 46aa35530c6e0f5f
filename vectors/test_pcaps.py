#!/usr/bin/env python3
"""Checks the session captures (vectors/pcap/*.pcap) with Wireshark's tshark.

For every session case of vectors/manifest.json:

* vectors/pcap/<id>.pcap exists (and no other file is there), and `cqlframe pcap --case <id>`
  writes the same bytes;
* that capture, and the same session written with `cqlframe pcap --mss 1` and `--mss 7`, are
  read by tshark with IPv4 and TCP checksum validation on, and
  - every packet's IPv4 and TCP checksum status is "good", every packet is in TCP stream 0;
  - no expert info of severity warning or error, and no note besides the two of the FIN
    close (a retransmission, duplicate ACK, lost segment, out-of-order segment, window-full
    or malformed packet would show up here);
  - no TCP payload is longer than the MSS, and both SYNs announce that MSS;
  - `-z follow,tcp,raw,0` (tshark's reassembly) gives each direction's bytes exactly equal to
    the case's cases/<id>.client.bin and cases/<id>.server.bin.

tshark runs with Wireshark's CQL dissector disabled (`--disable-protocol cql`): these checks
are about the Ethernet/IPv4/TCP layers, and Wireshark 4.0's CQL dissector (v3/v4 only) reports
its own limitations (it does not skip the value of a VARCHAR column in a Rows result, so the
v4 session's first RESULT shows as malformed).

Needs tshark (Debian: apt-get install tshark; run as root, or as a user allowed to read the
files) and Python 3.11 (standard library only). Environment: CQLFRAME_BIN (default
target/release/cqlframe; built if missing), TSHARK (default tshark).

Usage: python3 vectors/test_pcaps.py [--mss 1,7] [--jobs N] [--verbose]
Last line: pcaps: N passed, M failed (one check per capture file).
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from checklib import Tally, cqlframe_binary, first_difference

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "vectors"
DEFAULT_MSS = 1460
CLIENT_PORT, SERVER_PORT = 50042, 9042
# Expert infos of every clean capture (severity "note"); chats (SYN, SYN+ACK, FIN) are allowed.
ALLOWED_NOTES = {
    "This frame initiates the connection closing",
    "This frame undergoes the connection closing",
}
SEVERITY_CHAT, SEVERITY_NOTE = 0x00200000, 0x00400000
FIELDS = [
    "frame.number",
    "ip.checksum.status",
    "tcp.checksum.status",
    "tcp.stream",
    "tcp.srcport",
    "tcp.len",
    "tcp.options.mss_val",
    "_ws.expert.severity",
    "_ws.expert.message",
]


def tshark_check(path, client, server, mss):
    """The problems tshark finds in the capture at `path` (an empty list if none)."""
    command = [
        os.environ.get("TSHARK", "tshark"), "-r", str(path), "-n",
        "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
        "--disable-protocol", "cql",
        "-T", "fields", "-E", "separator=/t", "-E", "aggregator=|",
    ]
    for field in FIELDS:
        command += ["-e", field]
    command += ["-z", "follow,tcp,raw,0"]
    run = subprocess.run(command, capture_output=True, text=True)
    problems = []
    stderr = [l for l in run.stderr.splitlines() if l.strip() and not l.startswith("Running as user")]
    if run.returncode != 0 or stderr:
        return ["tshark exit %d: %s" % (run.returncode, " / ".join(stderr)[:500])]
    lines = run.stdout.split("\n")
    split = next((i for i, l in enumerate(lines) if l.startswith("=====")), None)
    if split is None:
        return ["tshark printed no follow output"]
    packets, follow = lines[:split], lines[split:]

    def problem(text):
        if len(problems) < 10:
            problems.append(text)

    mss_values = []
    for line in packets:
        if not line:
            continue
        number, ip_ok, tcp_ok, stream, sport, length, mss_val, severities, messages = line.split("\t")
        where = "packet %s" % number
        if ip_ok != "1" or tcp_ok != "1":
            problem("%s: checksum status ip %r tcp %r (1 = good)" % (where, ip_ok, tcp_ok))
        if stream != "0":
            problem("%s: TCP stream %r, not 0" % (where, stream))
        if int(length or 0) > mss:
            problem("%s: %s payload bytes, MSS %d" % (where, length, mss))
        if mss_val:
            mss_values.append(int(mss_val))
        for severity, message in zip(severities.split("|"), messages.split("|")):
            if not severity:
                continue
            level = int(severity)
            if level > SEVERITY_NOTE or (level == SEVERITY_NOTE and message not in ALLOWED_NOTES):
                problem("%s: expert info %#x %s" % (where, level, message))
    if mss_values != [mss, mss]:
        problem("MSS options %r, expected [%d, %d] in the two SYNs" % (mss_values, mss, mss))

    nodes = {}
    data = {0: bytearray(), 1: bytearray()}
    for line in follow:
        if line.startswith("Node "):
            node, address = line[5:].split(": ", 1)
            nodes[int(node)] = address
        elif line and not line.startswith(("=====", "Follow:", "Filter:")):
            node = 1 if line.startswith("\t") else 0
            data[node] += bytes.fromhex(line.strip())
    want_nodes = {0: "127.0.0.1:%d" % CLIENT_PORT, 1: "127.0.0.1:%d" % SERVER_PORT}
    if nodes != want_nodes:
        problem("follow nodes %r, expected %r" % (nodes, want_nodes))
    for node, name, want in [(0, "client", client), (1, "server", server)]:
        got = bytes(data[node])
        if got != want:
            problem("%s stream: reassembled %d bytes, case has %d, first difference at %d"
                    % (name, len(got), len(want), first_difference(got, want)))
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mss", default="1,7", help="extra MSS values to write and check (comma list; '' for none)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="tshark runs in parallel")
    parser.add_argument("--verbose", action="store_true", help="print every passing check too")
    args = parser.parse_args(argv)
    extra = [int(m) for m in args.mss.split(",") if m.strip()]

    manifest = json.loads((VECTORS / "manifest.json").read_text())
    sessions = [c for c in manifest["cases"] if c["kind"] == "session"]
    binary = cqlframe_binary("test_pcaps")
    tally = Tally(args.verbose)
    report = tally.report

    def write_pcap(cid, out, *options):
        return subprocess.run([str(binary), "pcap", "--case", cid, "--root", str(ROOT), *options, "-o", str(out)],
                              capture_output=True, text=True)

    present = {p.name for p in (VECTORS / "pcap").glob("*")}
    expected = {c["id"] + ".pcap" for c in sessions}
    for name in sorted(present - expected):
        report(False, "vectors/pcap/%s" % name, ["not a session case's capture"])

    with tempfile.TemporaryDirectory(prefix="cqlframe-pcaps-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        jobs = []
        for case in sessions:
            cid = case["id"]
            client = (VECTORS / case["client_stream"]["file"]).read_bytes()
            server = (VECTORS / case["server_stream"]["file"]).read_bytes()
            committed = VECTORS / "pcap" / (cid + ".pcap")
            if not committed.exists():
                report(False, "vectors/pcap/%s.pcap" % cid, ["missing (run cqlframe vectors generate)"])
                continue
            # The command line must write the committed capture at the default MSS.
            again = Path(tmp) / (cid + ".pcap")
            run = write_pcap(cid, again)
            if run.returncode != 0 or again.read_bytes() != committed.read_bytes():
                report(False, "cqlframe pcap --case %s" % cid,
                       [run.stderr.strip() or "differs from vectors/pcap/%s.pcap" % cid])
            jobs.append((committed.relative_to(ROOT), committed, client, server, DEFAULT_MSS))
            for mss in extra:
                out = Path(tmp) / ("%s.mss%d.pcap" % (cid, mss))
                run = write_pcap(cid, out, "--mss", str(mss))
                if run.returncode != 0:
                    report(False, "cqlframe pcap --case %s --mss %d" % (cid, mss), [run.stderr.strip()])
                    continue
                jobs.append(("%s (--mss %d)" % (cid, mss), out, client, server, mss))
        futures = [(label, pool.submit(tshark_check, path, client, server, mss))
                   for label, path, client, server, mss in jobs]
        for label, future in futures:
            problems = future.result()
            report(not problems, label, problems)
    return tally.summary("pcaps")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
