"""The latency `cqlframe proxy` adds, once the node of cassandra/bench/e2e/proxy.sh runs.

    python3 proxy.py PORT NODE_PID OUT [--smoke] [--repeats N] [--seconds S]

Starts `cqlframe proxy` in front of the node three times (every byte of both directions judged
as it flows, no capture): as it starts by default (its thread polls a few microseconds after
bytes moved before it sleeps), with `--spin 0` (it sleeps at once) and with `--spin 300` (it
polls through a round trip to the node); beside them socat as a bare TCP relay (bytes
forwarded, nothing read into them: the cost of the extra socket hop alone). It writes a small
blob (read_load.py setup), then per repeat runs the end-to-end benchmark's clients, the Python
driver (read_load.py) and the Java driver (ReadLoad.java), each with five sessions side by side
in the same run: `plain` straight to the node, `relay` through socat, `proxy`, `sleep` and `spin`
through the three proxies, the driver as released in all.
Every cell (compression x requests in flight) runs the sessions one after the other, their order
rotating from cell to cell and from repeat to repeat, closed-loop on a prepared
`SELECT v FROM e2e.blobs WHERE k = ?` as the end-to-end benchmark does. From their JSON lines:
p50 and p99 of each, and what the relay and the proxies add over `plain`, in microseconds, per
repeat (the sessions of one client run) and the median of the repeats. Each proxy must exit 0
(no MUST broken) having judged its sessions' connections.

Then throughput, per repeat and driver: a 128 KiB blob (THROUGHPUT_BLOB, two frames of the node
per answer), uncompressed, 8 in flight, `plain`, `relay`, `proxy` and `sleep` side by side as
above, each proxy a fresh one started for the client run: MB/s of each session, and each proxy's
CPU time over the run (utime + stime of /proc/PID/stat) against the bytes it judged both ways
(its report.json): what one core of the proxy relays and judges, under a real driver's
workload, as it starts and sleeping at once; beside them socat's CPU time over the same run.
Prints the tables, writes OUT/proxy.md and OUT/proxy.json.
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
from table import cpu, idle  # noqa: E402  (cassandra/bench/table.py)

CQLFRAME = os.environ.get("CQLFRAME_BIN", str(ROOT / "target/release/cqlframe"))
# A small request: the SELECT and an answer of one short row.
BLOB = 64
IN_FLIGHT = [1, 8]
COMPRESSIONS = ["none", "lz4"]
VARIANTS = ["plain", "relay", "proxy", "sleep", "spin"]
# The proxies' sessions: their --spin, in microseconds (None: the default).
PROXIES = {"proxy": None, "sleep": 0, "spin": 300}
# The throughput part: a blob of two full frames, its sessions and requests in flight.
THROUGHPUT_BLOB = 131072
THROUGHPUT_PROXIES = ["proxy", "sleep"]
THROUGHPUT_VARIANTS = ["plain", "relay", *THROUGHPUT_PROXIES]
THROUGHPUT_IN_FLIGHT = [8]


def median_range(values: list[float], spec: str = ".0f") -> str:
    """The median of `values` and, in brackets, the lowest and highest, each formatted by `spec`."""
    return f"{statistics.median(values):{spec}} ({min(values):{spec}}, {max(values):{spec}})"


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process `pid` so far, and of its children that have exited
    (socat forks one per connection): /proc/PID/stat, fields 14 to 17."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def throughput(o: argparse.Namespace, sha: dict, relay: subprocess.Popen, bare: int) -> tuple[list[dict], list[dict]]:
    """The throughput part: the clients' JSON lines, and per client run each proxy's CPU time and
    the bytes it judged, and socat's CPU time over the same run."""
    t = argparse.Namespace(**vars(o))
    t.in_flight = THROUGHPUT_IN_FLIGHT
    lines, runs = [], []
    for repeat in range(o.repeats):
        for driver in DRIVERS[repeat % 2:] + DRIVERS[:repeat % 2]:
            proxies = {name: start_proxy(o.port, o.out / f"throughput-{name}", PROXIES[name])
                       for name in THROUGHPUT_PROXIES}
            relay_cpu = cpu_seconds(relay.pid)
            try:
                got = client(driver, "none", t, sha, o.seconds, o.warmup, repeat, THROUGHPUT_VARIANTS,
                             [THROUGHPUT_BLOB], via_option(bare, proxies))
                cpu = {name: cpu_seconds(proxy.pid) for name, (proxy, _) in proxies.items()}
                time.sleep(0.5)  # socat reaps the children of the client's connections
                relay_cpu = cpu_seconds(relay.pid) - relay_cpu
            finally:
                errors = stop_proxies(proxies)
            run = {"driver": driver, "repeat": repeat, "relay_cpu_s": relay_cpu}
            for name, (proxy, _) in proxies.items():
                report = json.loads((o.out / f"throughput-{name}" / "report.json").read_text())
                if proxy.returncode != 0 or report["totals"]["violations"]:
                    print(errors[name], file=sys.stderr)
                    raise SystemExit(f"proxy bench: throughput: the {name} proxy exited {proxy.returncode}")
                run[f"{name}_cpu_s"] = cpu[name]
                run[f"{name}_bytes"] = report["totals"]["bytes"]
            lines += [dict(json.loads(line), repeat=repeat) for line in got]
            runs.append(run)
            print(f"proxy bench: throughput, repeat {repeat + 1}/{o.repeats}, {driver}", flush=True)
    return lines, runs


def throughput_table(lines: list[dict], runs: list[dict]) -> str:
    out = [f"Throughput: a {THROUGHPUT_BLOB}-byte blob, uncompressed, {THROUGHPUT_IN_FLIGHT[0]} in flight; "
           "MB/s of answers (blob bytes read), median (lowest, highest) over the repeats; each proxy's CPU "
           "time over the client run (every session's warm-up included) against the bytes it judged both ways; "
           "socat's CPU time over the same run, its session's schedule the same as the proxies'.", "",
           "| driver | " + " | ".join(f"MB/s {v}" for v in THROUGHPUT_VARIANTS) + " | relay CPU s | "
           + " | ".join(f"{p} CPU s | MB judged by {p} | MB per {p} CPU second" for p in THROUGHPUT_PROXIES) + " |",
           "|---|" + "---|" * (len(THROUGHPUT_VARIANTS) + 1 + 3 * len(THROUGHPUT_PROXIES))]
    for driver in DRIVERS:
        mine = [r for r in runs if r["driver"] == driver]
        mbs = [median_range([m["requests"] * m["blob"] / m["seconds"] / 1e6 for m in lines
                             if m["driver"] == driver and m["variant"] == v]) for v in THROUGHPUT_VARIANTS]
        judged = [f"{median_range([r[f'{p}_cpu_s'] for r in mine], '.2f')} "
                  f"| {median_range([r[f'{p}_bytes'] / 1e6 for r in mine])} "
                  f"| {median_range([r[f'{p}_bytes'] / 1e6 / r[f'{p}_cpu_s'] for r in mine])}"
                  for p in THROUGHPUT_PROXIES]
        out.append(f"| {driver} | {' | '.join(mbs)} | {median_range([r['relay_cpu_s'] for r in mine], '.2f')} "
                   f"| {' | '.join(judged)} |")
    return "\n".join(out) + "\n"


def start_proxy(port: int, out: Path, spin: int | None = None) -> tuple[subprocess.Popen, int]:
    """`out` receives the proxy's reports and its output (proxy.txt)."""
    out.mkdir(parents=True, exist_ok=True)
    proxy = subprocess.Popen([CQLFRAME, "proxy", "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{port}",
                              "--report-dir", str(out), "--quiet"] + ([] if spin is None else ["--spin", str(spin)]),
                             stdout=open(out / "proxy.txt", "w"), stderr=subprocess.PIPE, text=True)
    listening = proxy.stderr.readline()
    return proxy, int(listening.split(",")[0].rsplit(":", 1)[-1])


def via_option(bare: int, proxies: dict[str, tuple[subprocess.Popen, int]]) -> tuple[str, str]:
    """The clients' `--via`: socat's port as `relay`, each proxy's under its name."""
    return "--via", ",".join([f"relay={bare}"] + [f"{name}={via}" for name, (_, via) in proxies.items()])


def stop_proxies(proxies: dict[str, tuple[subprocess.Popen, int]]) -> dict[str, str]:
    """Stops the proxies together (each writes its reports as it exits); what each wrote on stderr."""
    for proxy, _ in proxies.values():
        proxy.send_signal(signal.SIGTERM)
    return {name: proxy.communicate(timeout=120)[1] for name, (proxy, _) in proxies.items()}


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
    out = [f"Relay: {env['relay']}.", f"CPU: {env['cpu']}; idle: {env['idle']}; load at the start: `{env['uptime_start']}`; at the end: `{env['uptime_end']}`",
           f"{o.repeats} repeats of {o.seconds} s windows per session (after {o.warmup} s of warm-up), at most "
           f"{o.max_requests} requests each; {BLOB}-byte blob; {env['elapsed_s']:.0f} s in all.", "",
           f"`proxy`: `cqlframe proxy` as it starts by default; `sleep`: with `--spin {PROXIES['sleep']}`; "
           f"`spin`: with `--spin {PROXIES['spin']}`.", "",
           "Each cell: median of the repeats; +relay = relay - plain, +proxy = proxy - plain, and so on: "
           "of the same client run, median (lowest, highest) over the repeats.", "",
           f"| driver | compression | in flight | p50 us {' / '.join(VARIANTS)} | "
           + " | ".join(f"p50 +{v} us" for v in VARIANTS[1:])
           + f" | p99 us {' / '.join(VARIANTS)} | " + " | ".join(f"p99 +{v} us" for v in VARIANTS[1:])
           + f" | req/s {' / '.join(VARIANTS)} |",
           "|---|---|---:|" + "---|" * (2 * len(VARIANTS) + 1)]
    for (driver, compression, n), repeats in sorted(cells.items()):
        runs = list(repeats.values())

        def med(metric: str) -> str:
            return " / ".join(f"{statistics.median(r[v][metric] for r in runs):.0f}" for v in VARIANTS)

        def added(metric: str) -> str:
            return " | ".join(median_range([r[v][metric] - r["plain"][metric] for r in runs], "+.0f")
                              for v in VARIANTS[1:])

        rps = " / ".join(f"{statistics.median(r[v]['requests'] / r[v]['seconds'] for r in runs):.0f}"
                         for v in VARIANTS)
        out.append(f"| {driver} | {compression} | {n} | {med('p50_us')} | {added('p50_us')} "
                   f"| {med('p99_us')} | {added('p99_us')} | {rps} |")
    return "\n".join(out) + "\n"


def main() -> int:
    o = arguments(__doc__).parse_args()
    o.warmup, o.client_warmup, o.max_requests, o.in_flight = 0.5, 2.0, 50_000, IN_FLIGHT
    if o.smoke:
        o.repeats, o.seconds, o.warmup, o.client_warmup, o.max_requests = 1, 0.1, 0.02, 0.02, 200
    o.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = {"cpu": cpu(), "idle": idle(), "uptime_start": uptime(),
           "relay": subprocess.run(["socat", "-V"], capture_output=True, text=True).stdout.splitlines()[1]}
    setup = subprocess.run([str(PYTHON), str(HERE / "read_load.py"), "setup", str(o.port), str(BLOB),
                            str(THROUGHPUT_BLOB)],
                           capture_output=True, text=True, check=True)
    sha = json.loads(setup.stdout)
    proxies = {name: start_proxy(o.port, o.out / name, spin) for name, spin in PROXIES.items()}
    relay, bare = start_relay(o.port)
    extra = via_option(bare, proxies)
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
        t_lines, t_runs = throughput(o, sha, relay, bare)
    finally:
        relay.terminate()
        relay.wait(timeout=30)
        errors = stop_proxies(proxies)
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
    missing += [(d, "none", THROUGHPUT_IN_FLIGHT[0], v) for d in DRIVERS for v in THROUGHPUT_VARIANTS
                if sum((m["driver"], m["variant"]) == (d, v) for m in t_lines) != o.repeats]
    if missing:
        print(f"proxy bench: missing cells: {missing}", file=sys.stderr)
        return 1
    text = table(lines, env, o) + "\n"
    for name, report in reports.items():
        text += (f"The `{name}` proxy judged {report['totals']['connections']} connections "
                 f"({report['totals']['packets']} reads and writes, {report['totals']['bytes']} bytes): "
                 f"{report['totals']['violations']} MUST violations, {report['totals']['findings']} SHOULD findings.\n")
    text += "\n" + throughput_table(t_lines, t_runs)
    print("\n" + text)
    (o.out / "proxy.md").write_text(text)
    (o.out / "proxy.json").write_text(json.dumps({"environment": env, "options": {
        k: v for k, v in vars(o).items() if k != "out"}, "measurements": lines,
        "throughput": {"measurements": t_lines, "proxy_runs": t_runs}}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
