#!/usr/bin/env python3
"""Collects one run of reference/cqlframe/benches/run.sh into a Markdown table and results.json.

    report.py BUILD_BENCH_DIR [--check]

Reads, for each round (BUILD_BENCH_DIR/round-N), criterion's estimates (ours,
cassandra-protocol, raw baselines), java.json (JMH), python.json and go.json; then memory.jsonl
and the manifest of inputs. A time is the median of its runs in a round, as ns per frame, and a
cell the median of its rounds; GB/s is payload (content) bytes per second, 1e9 decimal; "x" is
the peer's time over ours (how many times faster ours is), taken within each round and given as
the median of the rounds with the lowest and highest. The targets, the speed this reference
holds itself to against the drivers (decode several times faster than theirs, nothing slower
than the Java driver's, and CRC32C framing faster than its CRC32 on large frames), are judged
on those medians. Prints the Markdown and writes BUILD_BENCH_DIR/results.md and results.json.
With --check (run.sh --smoke), exits 1 if any round lacks a cell it should have: the table is
complete, whatever the timings.
"""
import json
import os
import platform
import statistics
import subprocess
import sys

IMPLS = ["ours", "cassandra-protocol", "java", "python", "go"]
TITLES = {
    "ours": "ours",
    "cassandra-protocol": "cassandra-protocol 4.0.1 (Rust)",
    "java": "Java driver 4.19.3",
    "python": "Python driver 3.30.1",
    "go": "gocql v2.1.2",
}


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def criterion_ns(root, *parts):
    est = load(os.path.join(root, *parts, "new", "estimates.json"))
    return est["median"]["point_estimate"] if est else None


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:  # noqa: BLE001 - machine description only
        return ""


def machine():
    cpu = "%s (family %s model %s)" % (sh("lscpu | sed -n 's/^Model name: *//p'"),
                                       sh("lscpu | sed -n 's/^CPU family: *//p'"),
                                       sh("lscpu | sed -n 's/^Model: *//p'"))
    flags = sh("grep -m1 '^flags' /proc/cpuinfo")
    feats = [f for f in ("avx2", "avx512f", "avx512bw", "vpclmulqdq", "pclmulqdq", "sse4_2") if " %s" % f in flags]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "features": feats,
        "kernel": platform.release(),
        "glibc": platform.libc_ver()[1],
        "rustc": sh("rustc -V"),
        "java": sh("java -version 2>&1 | head -1"),
        "go": sh("go version"),
        "python": sh("python3 -V"),
    }


def checksum_paths(crit):
    """The checksum paths the framing bench used (it records them beside criterion's output)."""
    try:
        with open(os.path.join(crit, "checksum-paths.txt")) as f:
            return f.read().strip()
    except OSError:
        return "?"


def measure(round_dir, cases):
    """One round's times: ns[(impl, op, format, checksum, size)] per frame, the runs behind the
    peers' medians, and raw[(baseline, size)]."""
    crit = os.path.join(round_dir, "criterion")
    ns = {}
    runs = {}
    for (fmt, ck, size), c in cases.items():
        label = "%s-%s" % (fmt, ck)
        v = criterion_ns(crit, "decode", "ours-" + label, str(size))
        if v is not None:
            ns[("ours", "decode", fmt, ck, size)] = v / c["frames"]
        v = criterion_ns(crit, "encode", "ours-" + label, str(size))
        if v is not None:
            ns[("ours", "encode", fmt, ck, size)] = v
        for op in ("decode", "encode"):
            v = criterion_ns(crit, op, "cassandra-protocol-" + label, str(size))
            if v is not None:
                ns[("cassandra-protocol", op, fmt, ck, size)] = v

    for r in load(os.path.join(round_dir, "java.json"), []) or []:
        op = r["benchmark"].rsplit(".", 1)[1]
        fmt, size = r["params"]["format"], int(r["params"]["size"])
        c = cases[(fmt, "crc32", size)]
        per_call = 1 if op == "encode" else c["frames"]
        its = [x / per_call for fork in r["primaryMetric"]["rawData"] for x in fork]
        ns[("java", op, fmt, "crc32", size)] = statistics.median(its)
        runs[("java", op, fmt, "crc32", size)] = its
    for name in ("python", "go"):
        doc = load(os.path.join(round_dir, name + ".json"), {}) or {}
        for r in doc.get("results", []):
            key = (name, r["op"], r["format"], r["checksum"], r["size"])
            ns[key] = r["ns_per_frame"]
            runs[key] = r["runs_ns_per_frame"]

    raw = {}
    for size in sorted({s for (_, _, s) in cases}):
        for name in ("crc32c", "crc32", "lz4flex-d0", "lz4flex-d16", "lz4flex-d2048", "memcpy-d16", "memcpy-d2048"):
            v = criterion_ns(crit, "raw", name, str(size))
            if v is not None:
                raw[(name, size)] = v
        for name, fmt in (("crc32c-stream", "uncompressed"), ("lz4flex-stream", "lz4")):
            v = criterion_ns(crit, "raw", name, str(size))
            if v is not None:
                raw[(name, size)] = v / cases[(fmt, "crc32c", size)]["frames"]
        for fmt in ("uncompressed", "lz4"):
            for ck in ("crc32", "crc32c"):
                name = "ours-parts-%s-%s" % (fmt, ck)
                v = criterion_ns(crit, "encode", name, str(size))
                if v is not None:
                    raw[(name, size)] = v
        for variant in ("ours-chunked", "ours-frames"):
            for fmt in ("uncompressed", "lz4"):
                c = cases[(fmt, "crc32c", size)]
                v = criterion_ns(crit, "decode", "%s-%s-crc32c" % (variant, fmt), str(size))
                if v is not None:
                    raw[("%s-%s" % (variant, fmt), size)] = v / c["frames"]
    return ns, runs, raw


def round_dirs(out_dir):
    names = [d for d in os.listdir(out_dir) if d.startswith("round-")] if os.path.isdir(out_dir) else []
    return [os.path.join(out_dir, d) for d in sorted(names, key=lambda d: int(d[6:]))]


def medians(tables):
    """The median over the rounds of every key any round has."""
    keys = set().union(*tables)
    return {k: statistics.median([t[k] for t in tables if k in t]) for k in keys}


class Speedups:
    """Peer time over our time, taken within each round (both measured minutes apart at most)."""

    def __init__(self, measured):
        # One lookup per round: the cells' keys (impl, op, format, checksum, size) and the
        # baselines' (name, size) never collide.
        self.rounds = [{**ns, **raw} for ns, _, raw in measured]

    def of(self, peer, ours):
        """The ratio in each round, None where one of the two keys is missing."""
        return [r[peer] / r[ours] if r.get(peer) and r.get(ours) else None for r in self.rounds]


def median_present(xs):
    """The median of the rounds' ratios that were measured, None if none was."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    """The median ratio, with the lowest and highest round's when there are several."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    mid = fmt_ratio(statistics.median(xs))
    return mid if len(xs) == 1 else "%s, %s-%s" % (mid, fmt_ratio(min(xs)).rstrip("x"), fmt_ratio(max(xs)).rstrip("x"))


def inputs(out_dir, script):
    """The inputs' cases by (format, checksum, size), and the payload sizes, from the manifest
    gen_data.py wrote under out_dir/data; exits naming `script` when there is none."""
    manifest = load(os.path.join(out_dir, "data", "manifest.json"))
    if not manifest:
        sys.exit("no inputs in %s/data: run reference/cqlframe/benches/%s" % (out_dir, script))
    return {(c["format"], c["checksum"], c["size"]): c for c in manifest["cases"]}, manifest["sizes"]


def main(out_dir, check=False):
    cases, sizes = inputs(out_dir, "run.sh")
    dirs = round_dirs(out_dir)
    if not dirs:
        sys.exit("no rounds in %s: run reference/cqlframe/benches/run.sh" % out_dir)
    measured = [measure(d, cases) for d in dirs]
    ns = medians([m[0] for m in measured])
    raw = medians([m[2] for m in measured])
    runs = {}
    for m in measured:
        for k, v in m[1].items():
            runs.setdefault(k, []).extend(v)
    speed = Speedups(measured)

    md = []
    md.append("Each cell: ns per frame (GB/s of payload; peer time / our time). n/a: the "
              "implementation lacks that format or checksum (none of the drivers has CRC32C). "
              "%d round%s: a time is the median of the rounds, a ratio the median of the ratios "
              "taken within each round%s.\n" % (len(dirs), "" if len(dirs) == 1 else "s",
                                                "" if len(dirs) == 1 else ", then the lowest-highest round's"))
    for op in ("decode", "encode"):
        md.append("### %s\n" % op)
        md.append("| format | checksum | payload | " + " | ".join(TITLES[i] for i in IMPLS) + " |")
        md.append("|---|---|---:|" + "---:|" * len(IMPLS))
        for fmt in ("uncompressed", "lz4"):
            for ck in ("crc32", "crc32c"):
                for size in sizes:
                    ours = ("ours", op, fmt, ck, size)
                    cells = []
                    for impl in IMPLS:
                        key = (impl, op, fmt, ck, size)
                        v = ns.get(key)
                        if v is None:
                            cells.append("n/a")
                        elif impl == "ours" or ours not in ns:
                            cells.append("%s (%.2f)" % (fmt_ns(v), size / v))
                        else:
                            cells.append("%s (%.2f; %s)" % (fmt_ns(v), size / v, spread(speed.of(key, ours))))
                    md.append("| %s | %s | %d | %s |" % (fmt, ck, size, " | ".join(cells)))
        md.append("")

    md.append("### encode for a vectored write (same criterion run)\n")
    md.append("`FrameEncoder::frame`: header, payload and trailer as three slices for `write_vectored`, "
              "the payload not copied (the Java driver's encoder works this way). Each cell: ns per frame "
              "(java driver time / this time, same format, the Java driver's CRC32).\n")
    md.append("| format | payload | crc32 | crc32c |")
    md.append("|---|---:|---:|---:|")
    for fmt in ("uncompressed", "lz4"):
        for size in sizes:
            cells = []
            java = ("java", "encode", fmt, "crc32", size)
            for ck in ("crc32", "crc32c"):
                parts = ("ours-parts-%s-%s" % (fmt, ck), size)
                v = raw.get(parts)
                cells.append("n/a" if v is None else "%s (%s)" % (fmt_ns(v), spread(speed.of(java, parts))))
            md.append("| %s | %d | %s |" % (fmt, size, " | ".join(cells)))
    md.append("")

    md.append("### baselines (same criterion run)\n")
    md.append("| payload | our CRC32C | our CRC32 | CRC32C / lz4_flex over the decode stream, per frame | lz4_flex decompress_into (out +0 / +16 / +2048 B mod 4 KiB) | memcpy (dst +16 / +2048) | ours, 64 KiB reads (unc / lz4, crc32c) | ours, frame layer only (unc / lz4, crc32c) |")
    md.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        def g(name, s=size):
            v = raw.get((name, s))
            return fmt_ns(v) if v is not None else "n/a"
        md.append("| %d | %s (%s GB/s) | %s | %s / %s | %s / %s / %s | %s / %s | %s / %s | %s / %s |" % (
            size, g("crc32c"), ("%.2f" % (size / raw[("crc32c", size)])) if ("crc32c", size) in raw else "n/a",
            g("crc32"), g("crc32c-stream"), g("lz4flex-stream"), g("lz4flex-d0"), g("lz4flex-d16"), g("lz4flex-d2048"),
            g("memcpy-d16"), g("memcpy-d2048"),
            g("ours-chunked-uncompressed"), g("ours-chunked-lz4"),
            g("ours-frames-uncompressed"), g("ours-frames-lz4")))
    md.append("")

    targets = []

    def target(name, ok, detail):
        targets.append({"target": name, "met": ok, "detail": detail})

    def against(name, need, cells):
        """A target met when every cell's median ratio reaches `need`. cells: (label, peer, ours)
        as Speedups.of takes them; the detail names the lowest and lists them all."""
        got = []  # (median ratio, label, ratio per round)
        for label, peer, ours in cells:
            xs = speed.of(peer, ours)
            mid = median_present(xs)
            if mid is not None:
                got.append((mid, label, xs))
        if not got:
            return
        lo = min(got)
        # Rounds in which every cell was measured and reached `need`.
        rounds_ok = sum(all(x is not None and x >= need for x in per) for per in zip(*(xs for _, _, xs in got)))
        target(name, lo[0] >= need, "lowest %s (%s); %s%s" % (
            spread(lo[2]), lo[1], ", ".join("%s %s" % (label, fmt_ratio(m)) for m, label, _ in got),
            "" if len(dirs) == 1 else "; every cell at or above in %d of %d rounds" % (rounds_ok, len(dirs))))

    d = ns.get(("ours", "decode", "uncompressed", "crc32c", 16373))
    r = raw.get(("crc32c-stream", 16373))
    hot = raw.get(("crc32c", 16373))
    share = median_present(speed.of(("crc32c-stream", 16373), ("ours", "decode", "uncompressed", "crc32c", 16373)))
    if share is not None:
        target("decode of a 16373-byte CRC32C frame >= 90% of raw CRC32C throughput", share >= 0.9,
               "%.2f GB/s vs %.2f GB/s for the CRC32C of the same payloads in place: %.0f%% "
               "(one payload in a hot loop: %s GB/s)" % (
                   16373 / d, 16373 / r, 100 * share, "%.2f" % (16373 / hot) if hot else "n/a"))

    def cells(impl, op, checksum, fmts=("uncompressed", "lz4"), smallest=0, ours_of=None):
        """(label, peer, ours) for `op` of every size and format: the peer with CRC32 (no driver
        has CRC32C), ours with `checksum`, as `write_frame` or, with ours_of, another form."""
        return [("%s %d B" % (f, s), (impl, op, f, "crc32", s),
                 ours_of(f, s) if ours_of else ("ours", op, f, checksum, s))
                for f in fmts for s in sizes if s >= smallest]

    def parts(checksum):
        return lambda f, s: ("ours-parts-%s-%s" % (f, checksum), s)

    against("decode >= 3x the java driver's (same checksum, every size, both formats)", 3,
            cells("java", "decode", "crc32"))
    against("decode >= 100x the python driver's (same checksum, every size, both formats)", 100,
            cells("python", "decode", "crc32"))
    for op in ("decode", "encode"):
        against("%s >= 1.0x the java driver's with CRC32 (every size, both formats)" % op, 1.0,
                cells("java", op, "crc32"))
    against("encode as a vectored write (`frame`) >= 1.0x the java driver's with CRC32", 1.0,
            cells("java", "encode", "crc32", ours_of=parts("crc32")))
    for op in ("decode", "encode"):
        against("%s with CRC32C >= 1.5x the java driver's with CRC32 at >= 16373 B (both formats)" % op,
                1.5, cells("java", op, "crc32c", smallest=16373))
    against("encode as a vectored write (`frame`) with CRC32C >= 1.5x the java driver's with CRC32 at >= 16373 B",
            1.5, cells("java", "encode", "crc32c", smallest=16373, ours_of=parts("crc32c")))
    d = ns.get(("ours", "decode", "uncompressed", "crc32c", 64))
    r = raw.get(("crc32c", 64))
    if d and r:
        target("per-frame overhead, 64-byte payload (uncompressed, CRC32C) < 15 ns, outside the payload's CRC32C", d - r < 15,
               "%.1f ns per frame: %.1f ns for the CRC32C of the payload, %.1f ns for the rest "
               "(header CRC24, checks, envelope extraction); frame layer only %s per frame" % (
                   d, r, d - r, fmt_ns(raw.get(("ours-frames-uncompressed", 64)))))
    for size in sizes:
        d = ns.get(("ours", "decode", "lz4", "crc32c", size))
        l4 = raw.get(("lz4flex-stream", size))
        slower = median_present(speed.of(("ours", "decode", "lz4", "crc32c", size), ("lz4flex-stream", size)))
        if slower is not None:
            target("LZ4 decode within 10%% of lz4_flex alone, %d B" % size, slower <= 1.10,
                   "%s vs %s for lz4_flex on the same blocks in place (%+.0f%%; ours adds the CRC32C of the block)" % (
                       fmt_ns(d), fmt_ns(l4), 100 * (slower - 1)))

    md.append("### targets\n")
    for t in targets:
        verdict = {True: "met", False: "missed"}[t["met"]]
        md.append("- %s: **%s** (%s)" % (t["target"], verdict, t["detail"]))
    md.append("")

    memory = []
    try:
        with open(os.path.join(out_dir, "memory.jsonl")) as f:
            memory = [json.loads(line) for line in f if line.strip()]
    except OSError:
        pass
    if memory:
        md.append("### memory: decoding a %s stream in 64 KiB reads (peak RSS, /usr/bin/time -v)\n"
                  % fmt_bytes(memory[0]["bytes"]))
        md.append("| stream | peak RSS | decode rate (wire bytes) |")
        md.append("|---|---:|---:|")
        for m in memory:
            what = "%s, %s%s" % (m["format"], m["checksum"], ", reads generated only (baseline)" if m["generate_only"] else "")
            md.append("| %s | %.1f MiB | %s |" % (what, m["max_rss_kib"] / 1024,
                                                  "-" if m["generate_only"] else "%.2f GB/s" % m["wire_gb_per_s"]))
        md.append("")

    mach = machine()
    up0 = sh("cat %s/uptime-start.txt" % out_dir)
    up1 = sh("cat %s/uptime-end.txt" % out_dir)
    elapsed = sh("cat %s/elapsed-seconds.txt" % out_dir)
    mach["checksum_paths"] = checksum_paths(os.path.join(dirs[0], "criterion"))
    md.append("Machine: %s, %s cores (%s), Linux %s, glibc %s; %s; %s; %s; %s." % (
        mach["cpu"], mach["cores"], ", ".join(mach["features"]), mach["kernel"], mach["glibc"],
        mach["rustc"], mach["java"], mach["go"], mach["python"]))
    md.append("Checksum paths in use (ours): %s." % mach["checksum_paths"])
    md.append("Load: start `%s`, end `%s`; run took %s s." % (up0, up1, elapsed or "?"))
    text = "\n".join(md)
    print(text)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(text + "\n")
    doc = {
        "machine": mach, "uptime_start": up0, "uptime_end": up1, "elapsed_seconds": elapsed,
        "unit": "ns per frame (median); gb_per_s = payload bytes / ns",
        "results": [
            {"impl": k[0], "op": k[1], "format": k[2], "checksum": k[3], "size": k[4],
             "ns_per_frame": v, "gb_per_s": k[4] / v,
             "ratio_to_ours": ratio_to_ours(speed, k),
             "rounds_ns_per_frame": [m[0].get(k) for m in measured],
             "runs_ns_per_frame": runs.get(k)}
            for k, v in sorted(ns.items())
        ],
        "baselines": [{"name": k[0], "size": k[1], "ns": v} for k, v in sorted(raw.items())],
        "placement": load(os.path.join(out_dir, "rust-placement.json")),
        "targets": targets,
        "memory": memory,
    }
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    if check:
        missing = ["round %d: %s" % (i + 1, m) for i, (n, _, r) in enumerate(measured)
                   for m in missing_cells(n, r, cases, memory)]
        for m in missing:
            print("missing: %s" % m, file=sys.stderr)
        print("bench check: %d cells, %d missing" % (len(ns), len(missing)), file=sys.stderr)
        if missing:
            sys.exit(1)


def ratio_to_ours(speed, key):
    """The median over the rounds of this cell's time over ours (same op, format, checksum, size)."""
    return median_present(speed.of(key, ("ours",) + key[1:]))


def fmt_bytes(n):
    return "%.0f GiB" % (n / 2**30) if n >= 2**30 else "%.0f MiB" % (n / 2**20)


def missing_cells(ns, raw, cases, memory):
    """The cells a complete run has and this one lacks: every format, checksum and size for
    ours, in both encode forms; the CRC32 ones (the only checksum they have) for every peer; the
    memory runs."""
    missing = ["ours encode-parts %s %s %d" % (fmt, ck, size) for (fmt, ck, size) in cases
               if ("ours-parts-%s-%s" % (fmt, ck), size) not in raw]
    for impl in IMPLS:
        for op in ("decode", "encode"):
            for (fmt, ck, size) in cases:
                if (impl == "ours" or ck == "crc32") and (impl, op, fmt, ck, size) not in ns:
                    missing.append("%s %s %s %s %d" % (impl, op, fmt, ck, size))
    if len(memory) != 3:
        missing.append("memory: %d of 3 runs" % len(memory))
    return missing


def fmt_ns(v):
    if v is None:
        return "n/a"
    if v >= 1e6:
        return "%.2f ms" % (v / 1e6)
    if v >= 1e3:
        return "%.2f µs" % (v / 1e3)
    return "%.1f ns" % v


def fmt_ratio(x):
    return "%.0fx" % x if x >= 100 else "%.1fx" % x if x >= 10 else "%.2fx" % x


if __name__ == "__main__":
    main(sys.argv[1], check="--check" in sys.argv[2:])
