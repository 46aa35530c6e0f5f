#!/usr/bin/env python3
"""Tests against.py's verdicts on three rounds built from a smoke run (run.sh --smoke makes one):

    test_against.py BUILD_BENCH_SMOKE_DIR

Both builds of every round get the same criterion files, so every cell is level (ratio 1.00),
but for two rewritten ones. Decode, uncompressed CRC32C, 2037 B: base 85, 88 and 80 ns against
the work tree's 100 in each round, ratios 0.85, 0.88, 0.80: slower in every round and by 15% in
the median, so "slower", and the target "nothing slower" missed. Encode, LZ4 CRC32, 16373 B:
ratios 1.20, 0.98 and 1.30: 20% faster in the median but not in every round, so "level". Then a
cell removed from one build of one round must fail the report.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from known_timings import Checks, set_criterion_ns

HERE = os.path.dirname(os.path.abspath(__file__))
SLOWER = ("decode", "uncompressed-crc32c", 2037, [85.0, 88.0, 80.0], [100.0] * 3)
UNEVEN = ("encode", "lz4-crc32", 16373, [120.0, 98.0, 130.0], [100.0] * 3)


def build(smoke, out):
    """Three rounds; both builds of a round copy one smoke round's criterion files."""
    shutil.copytree(os.path.join(smoke, "data"), os.path.join(out, "data"))
    with open(os.path.join(out, "against.txt"), "w") as f:
        f.write("base=%s\nsubject=test\nhead=%s\navx2=1\n" % ("a" * 40, "b" * 40))
    for name in ("uptime-start.txt", "uptime-end.txt"):
        with open(os.path.join(out, name), "w") as f:
            f.write("up\n")
    for k in range(3):
        src = os.path.join(smoke, "round-%d" % (k % 2 + 1), "criterion")
        for side in ("base", "head"):
            dst = os.path.join(out, "round-%d" % (k + 1), side)
            shutil.copytree(src, os.path.join(dst, "criterion"))
            with open(os.path.join(dst, "paths.txt"), "w") as f:
                f.write("crc32 cells: crc32=vpclmul\n")
        for op, label, size, base, head in (SLOWER, UNEVEN):
            for side, ns in (("base", base[k]), ("head", head[k])):
                criterion = os.path.join(out, "round-%d" % (k + 1), side, "criterion")
                set_criterion_ns(criterion, op, "ours-" + label, size, ns)


def main(smoke):
    checks = Checks("test_against")
    expect = checks.expect
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "against")
        build(smoke, out)
        run = subprocess.run([sys.executable, os.path.join(HERE, "against.py"), out], capture_output=True, text=True)
        expect("against.py exits 0 (%s)" % run.stderr.strip()[-300:], run.returncode == 0)
        rows = {(r["cell"]["op"], r["cell"]["format"] + "-" + r["cell"]["checksum"], r["cell"]["size"]): r
                for r in json.load(open(os.path.join(out, "results.json")))["rows"]} if run.returncode == 0 else {}
        slower, uneven = rows.get(SLOWER[:3]), rows.get(UNEVEN[:3])
        expect("the slower cell: ratio 0.85 and verdict slower",
               slower is not None and abs(slower["ratio"] - 0.85) < 1e-9 and slower["verdict"] == "slower")
        expect("the uneven cell: ratio 1.20 and verdict level",
               uneven is not None and abs(uneven["ratio"] - 1.2) < 1e-9 and uneven["verdict"] == "level")
        others = [r for k, r in rows.items() if k not in (SLOWER[:3], UNEVEN[:3])]
        expect("%d other cells, all level at 1.00" % len(others),
               len(others) == 38 and all(r["verdict"] == "level" and r["ratio"] == 1.0 for r in others))
        expect("the table shows the slower cell's range", "0.85x, 0.80-0.88 | **slower**" in run.stdout)
        expect("the target is missed", "Nothing slower than the base: **missed** (of 40 cells: 1 slower, 39 level, 0 faster" in run.stdout)

        shutil.rmtree(os.path.join(out, "round-2", "head", "criterion", "raw", "crc32", "2037"))
        run = subprocess.run([sys.executable, os.path.join(HERE, "against.py"), out], capture_output=True, text=True)
        expect("a missing cell fails the report, named",
               run.returncode == 1 and "round 2 head: raw - crc32 2037" in run.stderr)
    checks.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: test_against.py BUILD_BENCH_SMOKE_DIR")
    main(sys.argv[1])
