"""The end-to-end measurement of cassandra/bench/e2e/run.sh, once the extended node runs.

    python3 e2e.py PORT NODE_PID OUT [--smoke] [--repeats N] [--seconds S] [--compression none,lz4]
    python3 e2e.py --tables-from OUT/e2e.json      the tables of a stored run again

Writes the blobs (read_load.py setup), runs each client once with short windows to warm the
node's JIT compiler up (not measured; not with --smoke), then per repeat runs the Python and the
Java client (read_load.py, ReadLoad.java; the order of the drivers alternates, and that of the
variants rotates, from repeat to repeat) for each compression, every cell (variant x blob x
requests in flight) once per client run. From their JSON lines: the node's CPU time per request
(utime+stime of its JVM over the window, /proc, divided by the requests), requests per second
and the latency p50/p99, each the median of the repeats with their spread; the ratio CRC32C /
CRC32 of the opted-in driver (same code, only the checksum differs), for the node's CPU, the
client's CPU and the latencies; and what the checksum itself costs the node per request (the
blob's bytes times the ns per byte of ChecksumBench, build/cassandra-bench/checksum.json) as a
share of its CPU per request where that is lowest. Prints the tables, writes OUT/e2e.md and
OUT/e2e.json. Exit status 1 if a client fails, a cell is missing, or a session negotiated
another checksum than its variant's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
from table import checksum_cost, cpu, idle  # noqa: E402  (cassandra/bench/table.py)

PYTHON = ROOT / ".cache" / "venv" / "conformance-python" / "bin" / "python"
ADAPTER_JAR = ROOT / ".cache" / "conformance" / "java" / "java-conformance-adapter.jar"
SIZES = [16384, 131072]
IN_FLIGHT = [1, 4, 16, 64]
VARIANTS = ["plain", "crc32", "crc32c"]
DRIVERS = ["python", "java"]
TICK = os.sysconf("SC_CLK_TCK")
# Versions, as pinned: cassandra/pom.xml, conformance/drivers/*/requirements.txt and pom.xml.
PINS = ("Apache Cassandra 5.0.9 (cassandra-all, Maven Central) with the kit's CRC32C agent; "
        "Python cassandra-driver 3.30.1 + google-crc32c 1.9.0 (frame_checksum.py); "
        "Java java-driver-core 4.19.3 + lz4-java 1.10.2 (checksum/ of the conformance adapter)")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def client(driver: str, compression: str, o: argparse.Namespace, sha: dict, seconds: float, warmup: float,
           repeat: int = 0, variants: list[str] = VARIANTS, sizes: list[int] = SIZES,
           extra: tuple[str, ...] = ()) -> list[str]:
    """One run of a driver's client (read_load.py, ReadLoad.java): its JSON lines."""
    options = ["--sizes", ",".join(map(str, sizes)), "--in-flight", ",".join(map(str, o.in_flight)),
               "--seconds", str(seconds), "--max-requests", str(o.max_requests), "--warmup", str(warmup),
               "--client-warmup", str(o.client_warmup), "--compression", compression,
               # The order of the variants rotates from repeat to repeat (and in the client from cell to cell).
               "--variants", ",".join(variants[repeat % len(variants):] + variants[:repeat % len(variants)]),
               "--sha256", ",".join(f"{k}={v}" for k, v in sha.items()), *extra]
    if driver == "python":
        command = [str(PYTHON), str(HERE / "read_load.py")]
    else:
        command = ["java", "-cp", str(ADAPTER_JAR), str(HERE / "ReadLoad.java")]
    p = subprocess.run(command + ["load", str(o.port), str(o.node_pid)] + options, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"e2e: the {driver} client failed (exit {p.returncode})")
    return [line for line in p.stdout.splitlines() if line.startswith("{")]


def spread(values: list[float]) -> float:
    """(max - min) / median: how far apart the repeats of one cell are."""
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


def summarise(lines: list[dict]) -> dict:
    cells: dict[tuple, list[dict]] = {}
    for m in lines:
        key = (m["driver"], m["compression"], m["blob"], m["in_flight"], m["variant"])
        cells.setdefault(key, []).append({
            "cpu_us": m["server_cpu_ticks"] * 1e6 / TICK / m["requests"],
            "client_cpu_us": m["client_cpu_ticks"] * 1e6 / TICK / m["requests"],
            "rps": m["requests"] / m["seconds"], "p50_us": m["p50_us"], "p99_us": m["p99_us"]})
    summary = {}
    for key, runs in cells.items():
        summary[key] = {metric: {"median": statistics.median(r[metric] for r in runs),
                                 "spread": spread([r[metric] for r in runs]), "runs": [r[metric] for r in runs]}
                        for metric in runs[0]}
    return summary


def tables(summary: dict, cost: dict, o: argparse.Namespace, env: dict) -> str:
    out = [f"CPU: {env['cpu']}; idle: {env.get('idle', 'not recorded')}; load at the start: `{env['uptime_start']}`; at the end: `{env['uptime_end']}`",
           f"{env['repeats']} repeats of {o.seconds} s windows (after {o.warmup} s of warm-up), at most "
           f"{o.max_requests} requests each; every session first read each blob for {o.client_warmup} s at 16 "
           f"in flight; {env['elapsed_s']:.0f} s in all. {PINS}; {env['java']}.",
           "", "Each cell: median of the repeats (spread: (max - min) / median). Server CPU: the node's JVM, "
           "utime+stime per request. `plain`: the driver as released (CRC32); `crc32`, `crc32c`: the kit's opt-in "
           "asking that checksum (same code; only the checksum differs).", ""]
    for compression in o.compression:
        out += [f"### {compression}", "",
                "| driver | blob | in flight | req/s plain / crc32 / crc32c | server CPU us/req plain / crc32 / crc32c "
                "| p50 us plain / crc32 / crc32c | p99 us plain / crc32 / crc32c "
                "| crc32c / crc32: server CPU, client CPU, p50, p99 |", "|---|---:|---:|---|---|---|---|---|"]
        for driver in DRIVERS:
            for blob in SIZES:
                for n in o.in_flight:
                    cell = [summary[(driver, compression, blob, n, v)] for v in VARIANTS]

                    def three(metric: str, fmt: str) -> str:
                        return " / ".join(format(c[metric]["median"], fmt) for c in cell)
                    ratios = ", ".join(f"{cell[2][m]['median'] / cell[1][m]['median']:.2f}"
                                       for m in ("cpu_us", "client_cpu_us", "p50_us", "p99_us"))
                    out.append(f"| {driver} | {blob // 1024} KiB | {n} | {three('rps', '.0f')} | "
                               f"{three('cpu_us', '.1f')} | {three('p50_us', '.0f')} | {three('p99_us', '.0f')} "
                               f"| {ratios} |")
        out.append("")
    if env["repeats"] > 1:
        out += ["Noise: the median over the cells above of the spread between repeats, per metric and variant:", "",
                "| metric | plain | crc32 | crc32c |", "|---|---:|---:|---:|"]
        for metric in ("rps", "cpu_us", "p50_us", "p99_us"):
            values = [statistics.median(s[metric]["spread"] for k, s in summary.items() if k[4] == v) for v in VARIANTS]
            out.append(f"| {metric} | " + " | ".join(f"{x:.0%}" for x in values) + " |")
        out.append("")
    cells = [k for k in summary if k[4] == "crc32"]
    out += [f"Ratios over the {len(cells)} cells: CRC32C / CRC32 of the opted-in driver, and beside it plain / crc32 "
            "(the released driver against the opt-in with the same checksum: what two codecs and the noise make "
            "of one checksum); median (lowest - highest):", "",
            "| metric | crc32c / crc32 | plain / crc32 |", "|---|---|---|"]
    for metric in ("cpu_us", "client_cpu_us", "rps", "p50_us", "p99_us"):
        shown = []
        for variant in ("crc32c", "plain"):
            r = [summary[k[:4] + (variant,)][metric]["median"] / summary[k][metric]["median"] for k in cells]
            shown.append(f"{statistics.median(r):.2f} ({min(r):.2f} - {max(r):.2f})")
        out.append(f"| {metric} | {shown[0]} | {shown[1]} |")
    out.append("")
    out += ["The checksum's own share of the node's CPU per request: the blob's bytes (the node checksums "
            "each response payload once; the envelope and the request add under 200 bytes) times ChecksumBench's "
            "ns per byte (fastest iteration), against the node's CPU per request where it is lowest for the "
            "opted-in driver with that checksum (the number in flight in brackets), where the share is largest; "
            "beside it the difference CRC32C - CRC32 the benchmark predicts and the one measured in that cell.", "",
            "| driver | compression | blob | CRC32 us/req | CRC32C us/req | server CPU us/req crc32 / crc32c "
            "| share CRC32 | share CRC32C | CRC32C - CRC32 predicted / measured us |",
            "|---|---|---:|---:|---:|---|---:|---:|---|"]
    for driver in DRIVERS:
        for compression in o.compression:
            for blob in SIZES:
                us = {c: blob * cost[(c.upper(), blob)][0] / 1e3 for c in ("crc32", "crc32c")}
                n = min(o.in_flight, key=lambda n: summary[(driver, compression, blob, n, "crc32")]["cpu_us"]["median"])
                cpu_us = {c: summary[(driver, compression, blob, n, c)]["cpu_us"]["median"] for c in us}
                out.append(f"| {driver} | {compression} | {blob // 1024} KiB | {us['crc32']:.2f} | {us['crc32c']:.2f} "
                           f"| {cpu_us['crc32']:.0f} / {cpu_us['crc32c']:.0f} [{n}] | {us['crc32'] / cpu_us['crc32']:.2%} "
                           f"| {us['crc32c'] / cpu_us['crc32c']:.2%} | {us['crc32c'] - us['crc32']:+.2f} / "
                           f"{cpu_us['crc32c'] - cpu_us['crc32']:+.0f} |")
    out += ["", "ChecksumBench, ns per byte of the fastest iteration: " + ", ".join(
        f"{c} {n // 1024} KiB {v[0]:.4f}" for (c, n), v in sorted(cost.items()))]
    return "\n".join(out) + "\n"


def arguments(doc: str) -> argparse.ArgumentParser:
    """The options every benchmark over the node shares: where the node listens, its pid (for
    its CPU time), where the table goes, and how long and how often to measure."""
    p = argparse.ArgumentParser(usage=doc.split("\n\n")[1])
    p.add_argument("port", type=int)
    p.add_argument("node_pid", type=int)
    p.add_argument("out", type=Path)
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seconds", type=float, default=2.0)
    return p


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--tables-from":
        return retable(Path(sys.argv[2]))
    p = arguments(__doc__)
    p.add_argument("--compression", type=lambda s: s.split(","), default=["none"])
    o = p.parse_args()
    o.warmup, o.client_warmup, o.max_requests, o.in_flight = 0.5, 2.0, 50_000, IN_FLIGHT
    if o.smoke:
        o.repeats, o.seconds, o.warmup, o.client_warmup, o.max_requests = 1, 0.1, 0.02, 0.02, 200
    started = time.monotonic()
    env = {"cpu": cpu(), "idle": idle(), "uptime_start": uptime(), "repeats": o.repeats, "python": platform.python_version(),
           "java": subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]}
    setup = subprocess.run([str(PYTHON), str(HERE / "read_load.py"), "setup", str(o.port)] + list(map(str, SIZES)),
                           capture_output=True, text=True, check=True)
    sha = json.loads(setup.stdout)
    if not o.smoke:
        for driver in DRIVERS:
            for compression in o.compression:
                client(driver, compression, o, sha, seconds=0.1, warmup=0.05)
        print(f"e2e: warm-up done after {time.monotonic() - started:.0f} s", flush=True)
    lines = []
    for repeat in range(o.repeats):
        for driver in DRIVERS[repeat % 2:] + DRIVERS[:repeat % 2]:
            for compression in o.compression:
                got = [json.loads(line) for line in client(driver, compression, o, sha, o.seconds, o.warmup, repeat)]
                print(f"e2e: repeat {repeat + 1}/{o.repeats}, {driver}, {compression}: {len(got)} cells", flush=True)
                lines += [dict(m, repeat=repeat) for m in got]
    env["uptime_end"] = uptime()
    env["elapsed_s"] = time.monotonic() - started
    wrong = [f"{m['driver']} {m['variant']}: negotiated {m['negotiated']}" for m in lines
             if m["variant"] != "plain" and set(m["negotiated"] or {}) != {m["variant"]}]
    missing = [(d, c, b, n, v) for d in DRIVERS for c in o.compression for b in SIZES for n in o.in_flight
               for v in VARIANTS if not any((m["driver"], m["compression"], m["blob"], m["in_flight"], m["variant"])
                                            == (d, c, b, n, v) for m in lines)]
    if wrong or missing:
        print(f"e2e: sessions with another checksum: {wrong}; missing cells: {missing}", file=sys.stderr)
        return 1
    cost = checksum_cost(str(ROOT / "build" / "cassandra-bench" / "checksum.json"))
    summary = summarise(lines)
    text = tables(summary, cost, o, env)
    print("\n" + text)
    o.out.mkdir(parents=True, exist_ok=True)
    (o.out / "e2e.md").write_text(text)
    (o.out / "e2e.json").write_text(json.dumps({
        "environment": env, "pins": PINS, "options": {k: v for k, v in vars(o).items() if k != "out"},
        "checksum_ns_per_byte": [{"checksum": c, "bytes": n, "fastest": v[0], "median": v[1]}
                                 for (c, n), v in cost.items()],
        "summary": [dict(zip(("driver", "compression", "blob", "in_flight", "variant"), k), **v)
                    for k, v in summary.items()],
        "measurements": lines}, indent=1, default=str))
    return 0


def retable(path: Path) -> int:
    """The tables again from a run's e2e.json (its measurements, options and ChecksumBench figures)."""
    run = json.loads(path.read_text())
    o = argparse.Namespace(**run["options"])
    cost = {(c["checksum"], c["bytes"]): (c["fastest"], c["median"]) for c in run["checksum_ns_per_byte"]}
    text = tables(summarise(run["measurements"]), cost, o, run["environment"])
    print(text)
    (path.parent / "e2e.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
