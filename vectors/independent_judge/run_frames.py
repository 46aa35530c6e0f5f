"""Runs the judge's frame reader on every frames case of vectors/manifest.json.

Each case is one direction already framing with the case's format, payload checksum and body
limit; the reader's first framing error, as (rule, offset), is compared with `expected.error`
(as run.py compares a session's).
Prints PASS/FAIL per case and "N passed, M failed"; exits non-zero on any failure.
"""
import json
import os
import sys

from inputs import VECTORS
from judge import FramedReader
from run import JUDGE_6, REFUSED, compare_error, read


def main():
    with open(os.path.join(VECTORS, "manifest.json")) as f:
        cases = [c for c in json.load(f)["cases"] if c["kind"] == "frames"]
    passed = failed = 0
    for case in cases:
        side = "server" if case["direction"] == "server-to-client" else "client"
        reader = FramedReader(read(case["input"]), 0, side, case["format"], case["checksum"], None,
                              case["max_envelope_body"])
        findings = [f for unit in reader.units() for f in unit]
        first = [f for f in findings if f.rule not in JUDGE_6 | REFUSED][:1]
        diffs = compare_error("first error", first, case["expected"]["error"])
        ok = not diffs
        print(f"{'PASS' if ok else 'FAIL'} {case['id']}" + "".join(f"\n    {d}" for d in diffs))
        passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
