#!/usr/bin/env python3
"""Prints the tables of the checksum benchmarks (checksums.rs) that bench.sh ran.

    report.py CRITERION_DIR [--check]

CRITERION_DIR holds one criterion output per round (round-1, round-2, ...). Every time is the
median of criterion's samples in a round, and a cell is the median of its rounds. A ratio is
taken within each round (ours and the peer measured seconds apart) and the cell gives the
median of those ratios with their range: on a VM whose speed drifts from minute to minute, the
range says how far one run can be trusted. The targets (TARGETS: ours as fast as the fastest
crates, faster on long CRC32C payloads) are judged on the median ratio. With --check, exits 1
if a round lacks a cell (bench.sh --smoke).
"""
import json
import os
import statistics
import sys

SIZES = [64, 2037, 16373, 131071]
TABLES = [
    ("crc32c", ["ours-sse42", "ours-vpclmul512", "crc32c", "crc-fast"]),
    ("crc32", ["crc32fast", "crc-fast"]),
]
# The units whose ceilings are measured, and which of our checksums each serves (the IEEE
# polynomial has no `crc32` instruction).
CEILINGS = [
    ("crc32", "`crc32` instruction, 8 B each", ("crc32c",)),
    ("clmul512", "512-bit carry-less multiply, 2 per 64 B folded", ("crc32", "crc32c")),
    ("clmul256", "256-bit carry-less multiply, 2 per 32 B folded", ("crc32", "crc32c")),
]
# The checksum targets, ours against the fastest crates: (group, peer, size, lowest ratio
# ours / peer).
TARGETS = [("crc32c", "crc-fast", s, need) for s, need in ((64, 1.0), (2037, 1.0), (16373, 1.2), (131071, 1.2))] + [
    ("crc32", "crc32fast", s, 1.0) for s in SIZES
]
# Where the peer is missing on some CPUs (our forced paths need their instructions).
OPTIONAL = {"ours-sse42", "ours-vpclmul512"}


def text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "?"


class Rounds:
    """The criterion medians of every round under one directory."""

    def __init__(self, root):
        names = sorted((d for d in os.listdir(root) if d.startswith("round-")), key=lambda d: int(d[6:]))
        self.dirs = [os.path.join(root, d) for d in names]
        if not self.dirs:
            sys.exit("no rounds in %s: run reference/checksum/bench.sh" % root)

    def ns(self, *parts):
        """The median time of one benchmark in each round (None where a round lacks it)."""
        out = []
        for d in self.dirs:
            try:
                with open(os.path.join(d, *parts, "new", "estimates.json")) as f:
                    out.append(json.load(f)["median"]["point_estimate"])
            except OSError:
                out.append(None)
        return out

    def median_ns(self, *parts):
        got = [v for v in self.ns(*parts) if v is not None]
        return statistics.median(got) if got else None

    def speedups(self, ours, peer):
        """peer time / our time in each round that has both."""
        return [p / o for o, p in zip(self.ns(*ours), self.ns(*peer)) if o and p]


def ratio(speedups):
    """The median ratio, and its range over the rounds when there are several."""
    if not speedups:
        return "n/a"
    mid = statistics.median(speedups)
    if len(speedups) == 1:
        return "%.2fx" % mid
    return "%.2fx, %.2f-%.2f" % (mid, min(speedups), max(speedups))


def main(root, check):
    r = Rounds(root)
    print(text(os.path.join(r.dirs[0], "machine.txt")))
    print("load: start `%s`, end `%s`" % (text(os.path.join(root, "uptime-start.txt")),
                                         text(os.path.join(root, "uptime-end.txt"))))
    print("rounds: %d (cells: median of the rounds; ratios: median, then lowest-highest round)" % len(r.dirs))
    missing = []

    for group, peers in TABLES:
        print(f"\n### {group}: GB/s (ours / peer in parentheses)\n")
        print("| bytes | ours | " + " | ".join(peers) + " |")
        print("|---:|---:|" + "---:|" * len(peers))
        for size in SIZES:
            ours = (group, "ours", str(size))
            row = [str(size), "%.2f" % (size / r.median_ns(*ours)) if r.median_ns(*ours) else "n/a"]
            for p in peers:
                peer = (group, p, str(size))
                ns = r.median_ns(*peer)
                row.append("%.2f (%s)" % (size / ns, ratio(r.speedups(ours, peer))) if ns else "n/a")
            print("| " + " | ".join(row) + " |")
            for name in ["ours"] + peers:
                lacking = [i + 1 for i, v in enumerate(r.ns(group, name, str(size))) if v is None]
                if lacking and name not in OPTIONAL:
                    missing.append("%s/%s/%d in round %s" % (group, name, size, lacking))

    print("\n### ceilings: GB/s of payload one unit sustains alone (benches/ceilings/mod.rs)\n")
    print("| unit | GB/s | ours at 131071 B, fraction of it |")
    print("|---|---:|---|")
    ours = {g: r.median_ns(g, "ours", "131071") for g in ("crc32", "crc32c")}
    for name, what, serves in CEILINGS:
        ns = r.median_ns("ceiling", name)
        if ns is None:
            continue
        with open(os.path.join(r.dirs[0], "ceiling", name, "new", "benchmark.json")) as f:
            gbs = json.load(f)["throughput"]["BytesDecimal"] / ns
        frac = ", ".join("%s %.0f%%" % (g, 100 * 131071 / ours[g] / gbs) for g in serves if ours[g])
        print("| %s | %.2f | %s |" % (what, gbs, frac))

    print("\n### crc24 headers: ns per call (peer / ours in parentheses)\n")
    print("| header | ours | bitwise (Cassandra's loop) | crc crate |")
    print("|---|---:|---:|---:|")
    for n in (5, 3):
        group = f"crc24-header{n}"
        ours = r.median_ns(group, "ours")
        row = [f"{n} bytes", f"{ours:.2f} ns" if ours else "n/a"]
        for p in ("bitwise", "crc"):
            ns = r.median_ns(group, p)
            row.append("%.2f ns (%s)" % (ns, ratio(r.speedups((group, "ours"), (group, p)))) if ns else "n/a")
        print("| " + " | ".join(row) + " |")

    print("\n### targets, judged on the median ratio\n")
    for group, peer, size, need in TARGETS:
        got = r.speedups((group, "ours", str(size)), (group, peer, str(size)))
        if not got:
            continue
        mid = statistics.median(got)
        print("- %s >= %.1fx %s at %d B: **%s** (%s; %d of %d rounds at or above)" % (
            group.upper(), need, peer, size, "met" if mid >= need else "missed", ratio(got),
            sum(x >= need for x in got), len(got)))

    if check:
        for m in missing:
            print("missing: %s" % m, file=sys.stderr)
        if missing:
            sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1], "--check" in sys.argv[2:])
