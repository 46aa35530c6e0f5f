#!/usr/bin/env bash
# Runs the checksum benchmarks (benches/checksums.rs) once and prints a Markdown table of the
# criterion medians: GB/s for payloads (ratio ours/peer), ns per call for CRC-24 headers.
#
#   reference/checksum/bench.sh            # run, then print
#   reference/checksum/bench.sh --report   # print the last run's results only
#
# Also prints the CPU, the paths in use and the ceilings of its `crc32` unit and carry-less
# multiplier (benches/ceilings/mod.rs). CARGO_TARGET_DIR defaults to
# <workspace>/target/checksum-bench.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
workspace="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$workspace/target/checksum-bench}"
export CRITERION_HOME="$CARGO_TARGET_DIR/criterion"

if [[ "${1:-}" != "--report" ]]; then
    mkdir -p "$CRITERION_HOME"
    uptime > "$CRITERION_HOME/uptime-start.txt"
    (cd "$workspace" && cargo bench -p cqlframe-checksum --bench checksums -- "$@" >&2)
    uptime > "$CRITERION_HOME/uptime-end.txt"
fi

python3 - "$CRITERION_HOME" <<'PY'
import json, os, sys

root = sys.argv[1]

def text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "?"

print(text(os.path.join(root, "machine.txt")))
print("load: start `%s`, end `%s`" % (text(os.path.join(root, "uptime-start.txt")),
                                     text(os.path.join(root, "uptime-end.txt"))))

def median_ns(*parts):
    path = os.path.join(root, *parts, "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"]
    except OSError:
        return None

def cell(ours, peer, size=None):
    if peer is None:
        return "n/a"
    if size is None:  # latency: ns, ratio is speedup peer/ours
        return f"{peer:.2f} ns ({peer / ours:.1f}x)" if ours else f"{peer:.2f} ns"
    gbs = size / peer
    return f"{gbs:.2f} ({(size / ours) / gbs:.2f}x)" if ours else f"{gbs:.2f}"

sizes = [64, 2037, 16373, 131071]
tables = [
    ("crc32c", ["ours-sse42", "ours-vpclmul512", "crc32c", "crc-fast"]),
    ("crc32", ["crc32fast", "crc-fast"]),
]
for group, peers in tables:
    print(f"\n### {group}: GB/s (ours / peer in parentheses)\n")
    print("| bytes | ours | " + " | ".join(peers) + " |")
    print("|---:|---:|" + "---:|" * len(peers))
    for size in sizes:
        ours = median_ns(group, "ours", str(size))
        row = [str(size), f"{size / ours:.2f}" if ours else "n/a"]
        row += [cell(ours, median_ns(group, p, str(size)), size) for p in peers]
        print("| " + " | ".join(row) + " |")

print("\n### ceilings: GB/s of payload one unit sustains alone (benches/ceilings/mod.rs)\n")
print("| unit | GB/s | ours at 131071 B, fraction of it |")
print("|---|---:|---|")
ours = {g: median_ns(g, "ours", "131071") for g in ("crc32", "crc32c")}
# Which of our checksums each unit serves (the IEEE polynomial has no `crc32` instruction).
for name, what, serves in (("crc32", "`crc32` instruction, 8 B each", ("crc32c",)),
                           ("clmul512", "512-bit carry-less multiply, 2 per 64 B folded", ("crc32", "crc32c")),
                           ("clmul256", "256-bit carry-less multiply, 2 per 32 B folded", ("crc32", "crc32c"))):
    ns = median_ns("ceiling", name)
    if ns is None:
        continue
    with open(os.path.join(root, "ceiling", name, "new", "benchmark.json")) as f:
        gbs = json.load(f)["throughput"]["BytesDecimal"] / ns
    frac = ", ".join("%s %.0f%%" % (g, 100 * 131071 / ours[g] / gbs) for g in serves if ours[g])
    print("| %s | %.2f | %s |" % (what, gbs, frac))

print("\n### crc24 headers: ns per call (peer / ours in parentheses)\n")
print("| header | ours | bitwise (Cassandra's loop) | crc crate |")
print("|---|---:|---:|---:|")
for n in (5, 3):
    group = f"crc24-header{n}"
    ours = median_ns(group, "ours")
    row = [f"{n} bytes", f"{ours:.2f} ns" if ours else "n/a"]
    row += [cell(ours, median_ns(group, p)) for p in ("bitwise", "crc")]
    print("| " + " | ".join(row) + " |")
PY
