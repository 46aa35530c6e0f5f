"""Runs the independent judge on every session case of vectors/manifest.json and compares.

For each case it compares, with what the reference recorded:
* `expected.judged`: the findings of JUDGE-6's sender rules, one per finding, in order, as
  (direction, rule, level, offset), the level written `MUST` or `SHOULD` as JUDGE-8 says;
* each receiver's first framing error (or LIFE-6, LIFE-13 where a receiver stops on them) as
  (rule, offset), and for RECV-1 whether the sender's rule is an unframed envelope's (LIFE-4,
  LIFE-5: the manifest's `unframed_envelope`): `server_receives.error` against the judge's first such finding in the client's
  direction, `client_receives.error` in the server's. Not `server_receives_alternatives`: those
  are other outcomes a server may choose, and JUDGE-10 has the judge charge the client the same
  way whichever it chose;
* the envelopes refused on their own (ENV-2, ENV-5), as (rule, offset), per direction;
* `expected.charged`: every finding of a receiver's rule, in order, as (direction, rule, sender's
  rule, offset): the sender's rule behind each (JUDGE-8), LIFE-8 and NEG-4 included;
* `expected.unjudged`: what could not be judged (JUDGE-11), in order, as (what, direction, rule,
  offset);
* where each direction switches (`client_switch_offset`, `server_switch_offset`).

The judge is given the order of the two streams through `server_responds_after`, as the spec's
"What a judge is given" says; `--without-order` runs it without (QUESTIONS.md Q1).
"""
import argparse
import json
import os
import sys

from inputs import VECTORS
from judge import judge

JUDGE_6 = {"FMT-6", "FMT-10", "LZ4-3", "SEND-7", "SEND-8", "ENV-4", "NEG-4", "NEG-2", "NEG-6", "NEG-9"}
REFUSED = {"ENV-2", "ENV-5"}


def read(blob):
    with open(os.path.join(VECTORS, blob["file"]), "rb") as f:
        return f.read()


def compare_error(what, first, error):
    """A receiver's first error as (rule, offset); for RECV-1 also whether it names an unframed
    envelope as the cause (the manifest's `unframed_envelope`, the sender's rule LIFE-4 or LIFE-5)."""
    mine = [(f.rule, f.offset) for f in first]
    theirs = [(error["rule"], error["offset"])] if error else []
    if mine != theirs:
        return [f"{what}: {mine} != expected {theirs}"]
    if error and error["kind"] == "header_crc_mismatch":
        unframed = first[0].sender_rule in ("LIFE-4", "LIFE-5")
        if unframed != error["detail"]["unframed_envelope"]:
            return [f"{what}: sender's rule {first[0].sender_rule}, expected unframed_envelope "
                    f"{error['detail']['unframed_envelope']}"]
    return []


def compare(case, result):
    """Lists the differences between the judge's result and the case's expected outputs."""
    exp, diffs = case["expected"], []
    mine = [(f.as_dict()["direction"], f.rule, f.level, f.offset)
            for f in result.findings if f.rule in JUDGE_6]
    theirs = [(j["direction"], j["rule"], j["level"], j["offset"]) for j in exp["judged"]]
    if mine != theirs:
        diffs.append(f"judged: {mine} != expected {theirs}")
    mine = [(f.as_dict()["direction"], f.rule, f.sender_rule, f.offset)
            for f in result.findings if f.rule not in JUDGE_6]
    theirs = [(c["direction"], c["rule"], c["sender_rule"], c["offset"]) for c in exp["charged"]]
    if mine != theirs:
        diffs.append(f"charged: {mine} != expected {theirs}")
    theirs = [(u["what"], u["direction"], u.get("rule"), u["offset"]) for u in exp["unjudged"]]
    if result.unjudged != theirs:
        diffs.append(f"unjudged: {result.unjudged} != expected {theirs}")
    for side, receives in (("client", exp["server_receives"]), ("server", exp["client_receives"])):
        first = [f for f in result.findings if f.side == side and f.rule not in JUDGE_6 | REFUSED][:1]
        diffs += compare_error(f"{side}'s first error", first, receives["error"])
        refused = [(f.rule, f.offset) for f in result.findings if f.side == side and f.rule in REFUSED]
        theirs = [(e["rejected"]["rule"], e["rejected"]["offset"]) for e in receives["envelopes"] if "rejected" in e]
        if refused != theirs:
            diffs.append(f"{side}'s refused envelopes: {refused} != expected {theirs}")
        if result.switch[side] != case[f"{side}_switch_offset"]:
            diffs.append(f"{side} switch: {result.switch[side]} != expected {case[f'{side}_switch_offset']}")
    return diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true", help="print each case's findings and notes")
    ap.add_argument("--without-order", action="store_true", help="do not pass server_responds_after")
    ap.add_argument("--json", action="store_true", help="print each case's judgement as JSON")
    args = ap.parse_args()
    with open(os.path.join(VECTORS, "manifest.json")) as f:
        cases = [c for c in json.load(f)["cases"] if c["kind"] == "session"]
    passed = failed = 0
    for case in cases:
        order = None if args.without_order else case["server_responds_after"]
        result = judge(read(case["client_stream"]), read(case["server_stream"]), responds_after=order)
        diffs = compare(case, result)
        print(f"{'FAIL' if diffs else 'PASS'} {case['id']}")
        for d in diffs:
            print(f"    {d}")
        if args.json:
            print(json.dumps(result.as_dict()))
        if args.verbose:
            for e in result.entries():
                print(f"    {e['rule']} ({e['level']}) by the {e['side']}, behind it {e['sender_rule']}:"
                      f" {e['count']} time(s), first at byte {e['offset']}")
            for n in result.notes:
                print(f"    note: {n}")
        passed, failed = passed + (not diffs), failed + bool(diffs)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
