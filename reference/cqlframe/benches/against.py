#!/usr/bin/env python3
"""The report of against.sh: our cells in the work tree against a base commit's, in rounds.

    against.py BUILD_AGAINST_DIR

Reads each round's criterion estimates of both builds (BUILD_AGAINST_DIR/round-K/{base,head},
through report.py's measure()), and gives per cell the median of the rounds' times and the
median of the per-round ratios base / work tree with the lowest and highest round's. A cell is
"slower" when the work tree was slower in every round and by more than TOLERANCE in the median,
"faster" the other way round, "level" otherwise: on these VMs one round can move a time by 20%, and
the same code built twice differs by up to 10%, so neither one round nor a small median decides. Prints the Markdown and writes
BUILD_AGAINST_DIR/results.md and results.json; exits 1 if a round lacks a cell of either build.
"""
import json
import os
import statistics
import sys

from report import fmt_ns, fmt_ratio, inputs, machine, measure, round_dirs, spread

# The same code built twice (against.sh HEAD --rounds 5, Intel Xeon family 6 model 207) gave
# cells slower or faster in every round by up to 8% and 10% in the median (code layout, the
# VM): at 5%, four of 40 cells would have been called slower or faster; at 10%, none.
TOLERANCE = 0.10
RAW = ("crc32", "crc32c")


def cells(ns, raw):
    """One build's times in a round, keyed (op, format, checksum, size) and ("raw", "-", name, size)."""
    got = {k[1:]: v for k, v in ns.items() if k[0] == "ours"}
    got.update({("raw", "-", name, size): v for (name, size), v in raw.items() if name in RAW})
    return got


def verdict(ratios):
    mid = statistics.median(ratios)
    if all(r < 1 for r in ratios) and mid < 1 - TOLERANCE:
        return "slower"
    if all(r > 1 for r in ratios) and mid > 1 + TOLERANCE:
        return "faster"
    return "level"


def main(out_dir):
    cases, sizes = inputs(out_dir, "against.sh")
    about = dict(line.split("=", 1) for line in open(os.path.join(out_dir, "against.txt")).read().splitlines())
    dirs = round_dirs(out_dir)
    rounds = [{side: cells(*measure(os.path.join(d, side), cases)[::2]) for side in ("base", "head")} for d in dirs]
    wanted = [(op, fmt, ck, size) for op in ("decode", "encode") for fmt in ("uncompressed", "lz4")
              for ck in ("crc32", "crc32c") for size in sizes if (fmt, ck, size) in cases]
    wanted += [("raw", "-", name, size) for name in RAW for size in sizes]
    missing = ["round %d %s: %s" % (i + 1, side, " ".join(map(str, key)))
               for i, r in enumerate(rounds) for side in ("base", "head") for key in wanted if key not in r[side]]
    if missing:
        sys.exit("missing cells:\n  " + "\n  ".join(missing))

    rows = []
    for key in wanted:
        ratios = [r["base"][key] / r["head"][key] for r in rounds]
        rows.append({"cell": dict(zip(("op", "format", "checksum", "size"), key)),
                     "base_ns": statistics.median(r["base"][key] for r in rounds),
                     "head_ns": statistics.median(r["head"][key] for r in rounds),
                     "ratios": ratios, "ratio": statistics.median(ratios), "verdict": verdict(ratios)})
    paths = sorted(set(open(os.path.join(dirs[0], "head", "paths.txt")).read().splitlines()))
    md = ["Base %s (%s) against the work tree %s; %d round%s. Checksum paths of the work tree: %s%s." % (
        about["base"][:12], about["subject"], about["head"][:12] + about["head"][40:], len(dirs),
        "" if len(dirs) == 1 else "s", "; ".join(paths),
        " (forced: the paths an AVX2-only CPU chooses); the base: its own choice" if about["avx2"] == "1"
        else "; the base: its own choice"),
        "",
        "Each cell: ns per frame (for `raw`, per payload), the median of the rounds; base / work tree, the "
        "median of the per-round ratios with the lowest and highest round's (above 1: the work tree is "
        "faster). slower / faster: in every round, and by more than %d%% in the median." % (TOLERANCE * 100),
        "",
        "| op | format | checksum | payload | base | work tree | base / work tree | |",
        "|---|---|---|---:|---:|---:|---:|---|"]
    for row in rows:
        c = row["cell"]
        md.append("| %s | %s | %s | %d | %s | %s | %s | %s |" % (
            c["op"], c["format"], c["checksum"], c["size"], fmt_ns(row["base_ns"]), fmt_ns(row["head_ns"]),
            spread(row["ratios"]), "" if row["verdict"] == "level" else "**%s**" % row["verdict"]))
    m = machine()
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("slower", "level", "faster")}
    slower = [r for r in rows if r["verdict"] == "slower"]
    md += ["", "Nothing slower than the base: **%s** (of %d cells: %d slower, %d level, %d faster; lowest %s)." % (
        "met" if not slower else "missed", len(rows), counts["slower"], counts["level"], counts["faster"],
        fmt_ratio(min(r["ratio"] for r in rows))), "",
        "Machine: %(cpu)s, %(cores)s cores (%(features)s); %(rustc)s." % dict(m, features=", ".join(m["features"])),
        "Load: start `%s`, end `%s`." % tuple(
            open(os.path.join(out_dir, f)).read().strip() for f in ("uptime-start.txt", "uptime-end.txt"))]
    text = "\n".join(md) + "\n"
    print(text)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"against": about, "paths": paths, "tolerance": TOLERANCE, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: against.py BUILD_AGAINST_DIR")
    main(sys.argv[1])
