"""The latency `cqlframe proxy` adds, once the node of cassandra/bench/e2e/proxy.sh runs.

    python3 proxy.py PORT NODE_PID OUT [--smoke] [--repeats N] [--seconds S]

Starts `cqlframe proxy` in front of the node twice (every byte of both directions judged as it
flows, no capture): as it starts by default, and with `--spin` (its thread polls without sleeping
for SPIN microseconds after bytes moved); beside them socat as a bare TCP relay (bytes
forwarded, nothing read into them: the cost of the extra socket hop alone). It writes a small
blob (read_load.py setup), then per repeat runs the end-to-end benchmark's clients, the Python
driver (read_load.py) and the Java driver (ReadLoad.java), each with four sessions side by side
in the same run: `plain` straight to the node, `relay` through socat, `proxy` and `spin` through
the two proxies, the driver as released in all.
Every cell (compression x requests in flight) runs the sessions one after the other, their order
rotating from cell to cell and from repeat to repeat, closed-loop on a prepared
`SELECT v FROM e2e.blobs WHERE k = ?` as the end-to-end benchmark does. From their JSON lines:
p50 and p99 of each, and what the relay and the proxies add over `plain` and the proxies over
the relay, in microseconds, per repeat (the sessions of one client run) and the median of the
repeats. Each proxy must exit 0 (no MUST broken) having judged its sessions' connections.
Prints the table, writes OUT/proxy.md and OUT/proxy.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
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
VARIANTS = ["plain", "relay", "proxy", "spin"]
# The proxies' sessions: their --spin, in microseconds.
PROXIES = {"proxy": 0, "spin": 300}


def start_proxy(port: int, out: Path, spin: int = 0) -> tuple[subprocess.Popen, int]:
    """`out` receives the proxy's reports and its output (proxy.txt)."""
    out.mkdir(parents=True, exist_ok=True)
    proxy = subprocess.Popen([CQLFRAME, "proxy", "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{port}",
                              "--report-dir", str(out), "--quiet"] + (["--spin", str(spin)] if spin else []),
                             stdout=open(out / "proxy.txt", "w"), stderr=subprocess.PIPE, text=True)
    listening = proxy.stderr.readline()
    return proxy, int(listening.split(",")[0].rsplit(":", 1)[-1])


def start_relay(port: int) -> tuple[subprocess.Popen, int]:
    """socat forwarding each connection to the node, Nagle off on both sockets as the proxy has it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        via = s.getsockname()[1]
    relay = subprocess.Popen(["socat", f"TCP-LISTEN:{via},bind=127.0.0.1,reuseaddr,fork,nodelay",
                              f"TCP:127.0.0.1:{port},nodelay"], stderr=subprocess.DEVNULL)
    for _ in range(100):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", via)) == 0:
                return relay, via
        time.sleep(0.05)
    relay.kill()
    raise SystemExit("proxy bench: socat did not listen")


def table(lines: list[dict], env: dict, o: argparse.Namespace) -> str:
    cells: dict[tuple, dict[int, dict[str, dict]]] = {}
    for m in lines:
        cells.setdefault((m["driver"], m["compression"], m["in_flight"]), {}).setdefault(
            m["repeat"], {})[m["variant"]] = m
    out = [f"Relay: {env['relay']}.", f"CPU: {env['cpu']}; load at the start: `{env['uptime_start']}`; at the end: `{env['uptime_end']}`",
           f"{o.repeats} repeats of {o.seconds} s windows per session (after {o.warmup} s of warm-up), at most "
           f"{o.max_requests} requests each; {BLOB}-byte blob; {env['elapsed_s']:.0f} s in all.", "",
           f"`proxy`: `cqlframe proxy` as it starts by default; `spin`: with `--spin {PROXIES['spin']}`.", "",
           "Each cell: median of the repeats; +relay = relay - plain, +proxy = proxy - plain, +spin = spin - plain: "
           "of the same client run, median (lowest, highest) over the repeats.", "",
           "| driver | compression | in flight | p50 us plain / relay / proxy / spin | p50 +relay us | p50 +proxy us "
           "| p50 +spin us | p99 us plain / relay / proxy / spin | p99 +relay us | p99 +proxy us | p99 +spin us "
           "| req/s plain / relay / proxy / spin |",
           "|---|---|---:|---|---|---|---|---|---|---|---|---|"]
    for (driver, compression, n), repeats in sorted(cells.items()):
        runs = list(repeats.values())

        def med(metric: str) -> str:
            return " / ".join(f"{statistics.median(r[v][metric] for r in runs):.0f}" for v in VARIANTS)

        def added(metric: str, variant: str, base: str = "plain") -> str:
            d = [r[variant][metric] - r[base][metric] for r in runs]
            return f"{statistics.median(d):+.0f} ({min(d):+.0f}, {max(d):+.0f})"

        rps = " / ".join(f"{statistics.median(r[v]['requests'] / r[v]['seconds'] for r in runs):.0f}"
                         for v in VARIANTS)
        out.append(f"| {driver} | {compression} | {n} | {med('p50_us')} | {added('p50_us', 'relay')} "
                   f"| {added('p50_us', 'proxy')} | {added('p50_us', 'spin')} | {med('p99_us')} "
                   f"| {added('p99_us', 'relay')} | {added('p99_us', 'proxy')} | {added('p99_us', 'spin')} | {rps} |")
    return "\n".join(out) + "\n"


def main() -> int:
    o = arguments(__doc__).parse_args()
    o.warmup, o.client_warmup, o.max_requests, o.in_flight = 0.5, 2.0, 50_000, IN_FLIGHT
    if o.smoke:
        o.repeats, o.seconds, o.warmup, o.client_warmup, o.max_requests = 1, 0.1, 0.02, 0.02, 200
    o.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = {"cpu": cpu(), "uptime_start": uptime(),
           "relay": subprocess.run(["socat", "-V"], capture_output=True, text=True).stdout.splitlines()[1]}
    setup = subprocess.run([str(PYTHON), str(HERE / "read_load.py"), "setup", str(o.port), str(BLOB)],
                           capture_output=True, text=True, check=True)
    sha = json.loads(setup.stdout)
    proxies = {name: start_proxy(o.port, o.out / name, spin) for name, spin in PROXIES.items()}
    relay, bare = start_relay(o.port)
    extra = ("--via", ",".join([f"relay={bare}"] + [f"{name}={via}" for name, (_, via) in proxies.items()]))
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
        relay.terminate()
        relay.wait(timeout=30)
        for proxy, _ in proxies.values():
            proxy.send_signal(signal.SIGTERM)
        errors = {name: proxy.communicate(timeout=120)[1] for name, (proxy, _) in proxies.items()}
    env["uptime_end"] = uptime()
    env["elapsed_s"] = time.monotonic() - started
    reports = {name: json.loads((o.out / name / "report.json").read_text()) for name in proxies}
    for name, (proxy, _) in proxies.items():
        if proxy.returncode != 0 or reports[name]["totals"]["connections"] == 0:
            print(errors[name], file=sys.stderr)
            print(f"proxy bench: {name}: the proxy exited {proxy.returncode} after "
                  f"{reports[name]['totals']['connections']} connections", file=sys.stderr)
            return 1
    missing = [(d, c, n, v) for d in DRIVERS for c in COMPRESSIONS for n in IN_FLIGHT for v in VARIANTS
               if sum((m["driver"], m["compression"], m["in_flight"], m["variant"]) == (d, c, n, v)
                      for m in lines) != o.repeats]
    if missing:
        print(f"proxy bench: missing cells: {missing}", file=sys.stderr)
        return 1
    text = table(lines, env, o) + "\n"
    for name, report in reports.items():
        text += (f"The `{name}` proxy judged {report['totals']['connections']} connections "
                 f"({report['totals']['packets']} reads and writes, {report['totals']['bytes']} bytes): "
                 f"{report['totals']['violations']} MUST violations, {report['totals']['findings']} SHOULD findings.\n")
    print("\n" + text)
    (o.out / "proxy.md").write_text(text)
    (o.out / "proxy.json").write_text(json.dumps({"environment": env, "options": {
        k: v for k, v in vars(o).items() if k != "out"}, "measurements": lines}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
