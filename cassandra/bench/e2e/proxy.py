"""The latency `cqlframe proxy` adds, once the node of cassandra/bench/e2e/proxy.sh runs.

    python3 proxy.py PORT NODE_PID OUT [--smoke] [--repeats N] [--seconds S]

Starts `cqlframe proxy` in front of the node (every byte of both directions judged as it flows,
no capture), writes a small blob (read_load.py setup), then per repeat runs the end-to-end
benchmark's clients, the Python driver (read_load.py) and the Java driver (ReadLoad.java), each
with two sessions side by side in the same run: `plain` straight to the node and `proxy` through
the proxy, the driver as released in both. Every cell (compression x requests in flight) runs
the two sessions one after the other, their order rotating from cell to cell and from repeat to
repeat, closed-loop on a prepared `SELECT v FROM e2e.blobs WHERE k = ?` as the end-to-end
benchmark does. From their JSON lines: p50 and p99 of each, and what the proxy adds, in
microseconds and as a ratio, per repeat (the two sessions of one client run) and the median of
the repeats. The proxy must exit 0 (no MUST broken) having judged the proxy sessions'
connections. Prints the table, writes OUT/proxy.md and OUT/proxy.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
from e2e import DRIVERS, PYTHON, arguments, client, uptime  # noqa: E402  (cassandra/bench/e2e/e2e.py)
from table import cpu  # noqa: E402  (cassandra/bench/table.py)

CQLFRAME = os.environ.get("CQLFRAME_BIN", str(ROOT / "target/release/cqlframe"))
# A small request: the SELECT and an answer of one short row.
BLOB = 64
IN_FLIGHT = [1, 8]
COMPRESSIONS = ["none", "lz4"]
VARIANTS = ["plain", "proxy"]


def start_proxy(port: int, out: Path) -> tuple[subprocess.Popen, int]:
    proxy = subprocess.Popen([CQLFRAME, "proxy", "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{port}",
                              "--report-dir", str(out / "proxy"), "--quiet"],
                             stdout=open(out / "proxy.txt", "w"), stderr=subprocess.PIPE, text=True)
    listening = proxy.stderr.readline()
    return proxy, int(listening.split(",")[0].rsplit(":", 1)[-1])


def table(lines: list[dict], env: dict, o: argparse.Namespace) -> str:
    cells: dict[tuple, dict[int, dict[str, dict]]] = {}
    for m in lines:
        cells.setdefault((m["driver"], m["compression"], m["in_flight"]), {}).setdefault(
            m["repeat"], {})[m["variant"]] = m
    out = [f"CPU: {env['cpu']}; load at the start: `{env['uptime_start']}`; at the end: `{env['uptime_end']}`",
           f"{o.repeats} repeats of {o.seconds} s windows per session (after {o.warmup} s of warm-up), at most "
           f"{o.max_requests} requests each; {BLOB}-byte blob; {env['elapsed_s']:.0f} s in all.", "",
           "Each cell: median of the repeats; added = proxy - plain of the same client run, median (lowest, "
           "highest) over the repeats.", "",
           "| driver | compression | in flight | p50 us plain / proxy | p50 added us | p50 ratio "
           "| p99 us plain / proxy | p99 added us | p99 ratio | req/s plain / proxy |",
           "|---|---|---:|---|---|---:|---|---|---:|---|"]
    for (driver, compression, n), repeats in sorted(cells.items()):
        runs = list(repeats.values())

        def med(variant: str, metric: str) -> float:
            return statistics.median(r[variant][metric] for r in runs)

        def added(metric: str) -> str:
            d = [r["proxy"][metric] - r["plain"][metric] for r in runs]
            return f"{statistics.median(d):+.0f} ({min(d):+.0f}, {max(d):+.0f})"

        rps = {v: statistics.median(r[v]["requests"] / r[v]["seconds"] for r in runs) for v in VARIANTS}
        out.append(f"| {driver} | {compression} | {n} | {med('plain', 'p50_us'):.0f} / {med('proxy', 'p50_us'):.0f} "
                   f"| {added('p50_us')} | {med('proxy', 'p50_us') / med('plain', 'p50_us'):.2f} "
                   f"| {med('plain', 'p99_us'):.0f} / {med('proxy', 'p99_us'):.0f} | {added('p99_us')} "
                   f"| {med('proxy', 'p99_us') / med('plain', 'p99_us'):.2f} | {rps['plain']:.0f} / {rps['proxy']:.0f} |")
    return "\n".join(out) + "\n"


def main() -> int:
    o = arguments(__doc__).parse_args()
    o.warmup, o.client_warmup, o.max_requests, o.in_flight = 0.5, 2.0, 50_000, IN_FLIGHT
    if o.smoke:
        o.repeats, o.seconds, o.warmup, o.client_warmup, o.max_requests = 1, 0.1, 0.02, 0.02, 200
    o.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = {"cpu": cpu(), "uptime_start": uptime()}
    setup = subprocess.run([str(PYTHON), str(HERE / "read_load.py"), "setup", str(o.port), str(BLOB)],
                           capture_output=True, text=True, check=True)
    sha = json.loads(setup.stdout)
    proxy, via = start_proxy(o.port, o.out)
    extra = ("--proxy", str(via))
    lines = []
    try:
        if not o.smoke:
            # The node's and the Java client's JIT compilers, not measured.
            for driver in DRIVERS:
                client(driver, "none", o, sha, 0.1, 0.05, variants=VARIANTS, sizes=[BLOB], extra=extra)
        for repeat in range(o.repeats):
            for driver in DRIVERS[repeat % 2:] + DRIVERS[:repeat % 2]:
                for compression in COMPRESSIONS:
                    got = client(driver, compression, o, sha, o.seconds, o.warmup, repeat, VARIANTS, [BLOB], extra)
                    lines += [dict(json.loads(line), repeat=repeat) for line in got]
                    print(f"proxy bench: repeat {repeat + 1}/{o.repeats}, {driver}, {compression}", flush=True)
    finally:
        proxy.send_signal(signal.SIGTERM)
        _, err = proxy.communicate(timeout=120)
    env["uptime_end"] = uptime()
    env["elapsed_s"] = time.monotonic() - started
    report = json.loads((o.out / "proxy" / "report.json").read_text())
    if proxy.returncode != 0 or report["totals"]["connections"] == 0:
        print(err, file=sys.stderr)
        print(f"proxy bench: the proxy exited {proxy.returncode} after {report['totals']['connections']} "
              "connections", file=sys.stderr)
        return 1
    missing = [(d, c, n, v) for d in DRIVERS for c in COMPRESSIONS for n in IN_FLIGHT for v in VARIANTS
               if sum((m["driver"], m["compression"], m["in_flight"], m["variant"]) == (d, c, n, v)
                      for m in lines) != o.repeats]
    if missing:
        print(f"proxy bench: missing cells: {missing}", file=sys.stderr)
        return 1
    text = table(lines, env, o)
    text += (f"\nThe proxy judged {report['totals']['connections']} connections "
             f"({report['totals']['packets']} reads and writes, {report['totals']['bytes']} bytes): "
             f"{report['totals']['violations']} MUST violations, {report['totals']['findings']} SHOULD findings.\n")
    print("\n" + text)
    (o.out / "proxy.md").write_text(text)
    (o.out / "proxy.json").write_text(json.dumps({"environment": env, "options": {
        k: v for k, v in vars(o).items() if k != "out"}, "measurements": lines}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
