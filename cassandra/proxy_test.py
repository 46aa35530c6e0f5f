"""`cqlframe proxy` in front of the live node of cassandra/run.sh, the drivers unchanged.

    python proxy_test.py PORT OUT_DIR     (the conformance Python adapter's venv)

1. Clean: the proxy with --capture (and --spin 300: its thread polls a while before it sleeps)
   between the node and the bundled Python workload
   (cassandra/workload.py, without and with LZ4) and the Python and Java drivers as
   cassandra/interop.py drives them (`drive PORT plain`). Every workload succeeds (the proxy
   never lets a read of the driver end inside a frame header on a clean run); the proxy
   exits 0 with no MUST violation and no reaction, and no SHOULD finding but the one the suite
   finds in the Java driver on LZ4 (ENV-4); `cqlframe check` on its capture lists the very
   connections the proxy's report.json lists (same summaries, same rules).
2. `--fault chop=1`: the node's bytes reach the client one byte per read. The Python driver's
   header-split bug (conformance/RESULTS.md, recv.chop-*: FAIL RECV-4) shows as a failed
   connect and a RECV-4 reaction; the proxy exits 1. The Java driver, which takes every split,
   connects with no finding and no reaction (the proxy spinning, --spin 300, as in step 1).
   Again check's verdict on the capture equals the
   proxy's judge.
3. Every frame fault of the catalogue (`cqlframe conformance list --json`) on the Python
   workload's data connection: applied once to a real response of the node, found by the judge
   under the fault's rule, check on the capture in agreement, and the driver's reaction
   (--expect-fault) what the suite found for the Python driver (conformance/RESULTS.md). The
   LZ4 end-of-block faults need a response in one frame that ends with a value repeating every
   256 bytes: for them the driver writes such a row and reads it back (workload.py lz4-period),
   and must fail to read it (liblz4 refuses both blocks).

    python proxy_test.py PORT OUT_DIR [FAULT ...]   (faults: only those of step 3)

Exit status 1 on any failure. Prints one line per step.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CQLFRAME = os.environ.get("CQLFRAME_BIN", str(ROOT / "target/release/cqlframe"))
PYTHON = sys.executable


def start(port: int, out: Path, name: str, *extra: str) -> tuple[subprocess.Popen, int, Path]:
    """The proxy on an ephemeral port in front of 127.0.0.1:PORT; its port and report folder."""
    report = out / name
    proxy = subprocess.Popen([CQLFRAME, "proxy", "--listen", "127.0.0.1:0", "--upstream",
                              f"127.0.0.1:{port}", "--capture", str(out / f"{name}.pcap"),
                              "--report-dir", str(report), "--json-lines", *extra],
                             stdout=open(out / f"{name}.jsonl", "w"), stderr=subprocess.PIPE, text=True)
    listening = proxy.stderr.readline()
    return proxy, int(listening.split(",")[0].rsplit(":", 1)[-1]), report


def stop(proxy: subprocess.Popen) -> int:
    proxy.send_signal(signal.SIGTERM)
    _, err = proxy.communicate(timeout=120)
    sys.stderr.write(err)
    return proxy.returncode


def same_as_check(out: Path, name: str) -> dict:
    """The proxy's report.json, after asserting that check on its capture lists the same
    connections (summaries and rules) and totals."""
    report = json.loads((out / name / "report.json").read_text())
    check = subprocess.run([CQLFRAME, "check", "--json", "--no-progress", str(out / f"{name}.pcap")],
                           capture_output=True, text=True)
    checked = json.loads(check.stdout)
    by_id = sorted(report["connections"], key=lambda c: c["id"])
    assert by_id == checked["connections"], f"{name}: check on the capture differs from the proxy"
    for key in ("connections", "violations", "findings", "packets", "bytes"):
        assert report["totals"][key] == checked["totals"][key], (name, key)
    assert check.returncode == (1 if report["totals"]["violations"] else 0), check.returncode
    return report


def main() -> int:
    port, out = int(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)

    # 1. Clean runs.
    started = time.time()
    proxy, via, _ = start(port, out, "proxy-clean", "--spin", "300")
    for compression in ("none", "lz4"):
        subprocess.run([PYTHON, str(ROOT / "cassandra/workload.py"), str(via), compression], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run([PYTHON, str(ROOT / "cassandra/interop.py"), "drive", str(via), "plain",
                    str(out / "proxy-interop-runs.json")], check=True, stdout=subprocess.DEVNULL)
    status = stop(proxy)
    report = same_as_check(out, "proxy-clean")
    drivers = {r["driver"] for r in json.loads((out / "proxy-interop-runs.json").read_text())}
    assert status == 0 and report["verdict"] == "PASS", (status, report["verdict"])
    assert report["totals"]["violations"] == 0, report["totals"]
    # The one SHOULD the suite finds in these drivers on LZ4 (conformance/RESULTS.md: the Java
    # driver's NON-STRICT ENV-4, a COMPRESSION flag inside LZ4 frames); nothing else.
    should = {(r["rule"], c["negotiated"]) for c in report["connections"] for r in c["rules"]}
    assert all(rule == "ENV-4" and "lz4" in n for rule, n in should), should
    assert not report["reactions"], report["reactions"]
    framed = {c["negotiated"] for c in report["connections"] if c["negotiated"]}
    assert any("lz4" in n for n in framed) and any("uncompressed" in n for n in framed), framed
    print(f"proxy: clean: Python workload (none, lz4) and {sorted(drivers)} drivers through the proxy, "
          f"{report['totals']['connections']} connections ({sorted(framed)}), no MUST violation, "
          f"{report['totals']['findings']} ENV-4 (SHOULD, the Java driver on LZ4), check on the capture agrees ({time.time() - started:.0f} s)")

    # 2. chop=1: the Python driver fails as in the conformance suite; the Java driver does not.
    started = time.time()
    proxy, via, _ = start(port, out, "proxy-chop1-python", "--fault", "chop=1")
    run = subprocess.run([PYTHON, str(ROOT / "cassandra/workload.py"), str(via), "none"],
                         capture_output=True, text=True)
    status = stop(proxy)
    report = same_as_check(out, "proxy-chop1-python")
    assert run.returncode != 0, "the Python driver's workload succeeded through chop=1"
    assert status == 1 and report["verdict"] == "FAIL", (status, report["verdict"])
    assert report["totals"]["violations"] == 0, report["totals"]
    assert report["reactions"] and all(r["rule"] == "RECV-4" for r in report["reactions"]), report["reactions"]
    lines = [json.loads(l) for l in (out / "proxy-chop1-python.jsonl").read_text().splitlines()]
    assert any(l["type"] == "reaction" for l in lines), "no live reaction line"
    print(f"proxy: chop=1: the Python driver's workload failed ({run.stderr.strip().splitlines()[-1][:100]}), "
          f"{len(report['reactions'])} RECV-4 reactions, exit 1 ({time.time() - started:.0f} s)")

    started = time.time()
    proxy, via, _ = start(port, out, "proxy-chop1-java", "--fault", "chop=1", "--spin", "300")
    java = subprocess.run([str(ROOT / "conformance/drivers/java/run"), "--host", "127.0.0.1", "--port", str(via),
                           "--case", "proxy.chop-1", "--action", "connect", "--compression", "none",
                           "--checksum", "default", "--protocol", "default", "--timeout", "60"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    status = stop(proxy)
    report = same_as_check(out, "proxy-chop1-java")
    adapter = json.loads(java.stdout or "{}")
    assert java.returncode == 0 and not adapter.get("error"), (java.returncode, java.stdout[-500:], java.stderr[-500:])
    assert status == 0 and not report["reactions"], (status, report["reactions"])
    assert report["totals"]["violations"] == 0 and report["totals"]["connections"] > 0, report["totals"]
    print(f"proxy: chop=1: the Java driver connected, no finding, no reaction ({time.time() - started:.0f} s)")

    # 3. Every frame fault of the catalogue on the node's real frames.
    only = sys.argv[3:]
    return faults(port, out, only)


# The Python driver's outcome for each fault in the conformance suite (conformance/RESULTS.md):
# the proxy's reaction check must agree where the suite's verdict is about the driver's reaction.
SUITE_FAILS = {"overshoot", "interleave", "empty-continuation", "checksum-bit", "truncate-frame",
               "partial-envelope"}
SUITE_PASSES = {"header-bitflip", "payload-bitflip", "trailer-bitflip", "truncate-sequence",
                "lz4-length", "lz4-bad-offset", "unframed", "lz4-ends-after-match",
                "lz4-last-match-too-late"}
# Faults that need a response in one frame ending with a row value that repeats with the
# conformance rows' period (256 bytes): the workload's rows are not such, so these run the
# workload's lz4-period mode, whose row is.
PERIOD_ROW = {"lz4-ends-after-match", "lz4-last-match-too-late"}


def faults(port: int, out: Path, only: list[str]) -> int:
    """Each fault on the Python workload's data connection (connection 2; 1 is its control
    connection), LZ4 faults on an LZ4 connection: the fault applied to a real response, the
    judge finds it under the fault's rule in the node's direction, check on the capture agrees,
    and with --expect-fault the driver's reaction is what the suite found."""
    listing = subprocess.run([CQLFRAME, "conformance", "list", "--json"], capture_output=True, text=True,
                             check=True, cwd=ROOT)
    kinds = sorted({c["server"]["fault"]["kind"] for c in json.loads(listing.stdout)["cases"]
                    if c["server"].get("fault") and (not only or c["server"]["fault"]["kind"] in only)})
    failures = []
    for kind in kinds:
        started = time.time()
        name = f"proxy-fault-{kind}"
        compression = "lz4-period" if kind in PERIOD_ROW else "lz4" if kind.startswith("lz4") else "none"
        proxy, via, _ = start(port, out, name, "--fault", f"{kind},connection=2", "--expect-fault")
        try:
            # A driver that hangs on the fault is stopped after the proxy's reaction bound.
            ok = subprocess.run([PYTHON, str(ROOT / "cassandra/workload.py"), str(via), compression],
                                capture_output=True, timeout=15).returncode == 0
        except subprocess.TimeoutExpired:
            ok = False
        status = stop(proxy)
        report = same_as_check(out, name)
        fault = report["fault"]
        conn = next((c for c in report["connections"] if c["id"] == 2), None)
        rules = {r[k] for r in (conn or {}).get("rules", []) for k in ("rule", "sender_rule")
                 if r["direction"] == "server-to-client" and r.get(k)}
        reacted = [r["rule"] for r in report["reactions"]]
        line = (f"proxy: fault {kind}: applied {fault['applied']}, judged {sorted(rules)}, workload "
                f"{'ok' if ok else 'failed'}, reaction {reacted or 'none'}, exit {status} "
                f"({time.time() - started:.0f} s)")
        print(line)
        # An unframed envelope after the switch is detected as a header that fails its CRC24
        # (RECV-1; the judge's message names LIFE-7).
        judged = "RECV-1" if kind == "unframed" else fault["rule"]
        if fault["applied"] != 1 or judged not in rules:
            failures.append(line)
        if kind in SUITE_FAILS and not reacted or kind in SUITE_PASSES and reacted:
            failures.append(f"{line}: the suite's verdict differs")
        # A decoder that skips LZ4's end-of-block checks reads the row right; the Python driver's
        # (liblz4's LZ4_decompress_safe) refuses the block, as in the suite.
        if kind in PERIOD_ROW and ok:
            failures.append(f"{line}: the driver read the row from the faulty block")
    for f in failures:
        print(f"proxy: FAIL {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
