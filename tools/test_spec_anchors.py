#!/usr/bin/env python3
"""Every rule a tool names links to where the rendered spec states it, and the link resolves.

The spec as spec/build.sh renders it (build/spec/framing_v6.html) keeps each rule's `[[ID]]`
anchor as an element id; the tools give a rule's place as `framing_v6.html#ID`, each from one
function (the Rust `rules::spec_anchor`, the dissector's `framing.spec_anchor`). Checked here,
on what the tools write for real:

- the rendered page has an id for every rule the spec states;
- `cqlframe check` (text) follows every violation line with a `spec:` line giving the anchors of
  its rule and sender rule, on every vector session capture and regression capture;
- the Lua dissector's expert info on those captures ends each finding in `[spec ...]` with the
  anchors of the rule and sender rule it names;
- a conformance run's index.html links every rule of its report.json, with the rendered spec
  copied beside it; the rules of its report.json and of `check --json` are anchors of the page.

Usage: python3 tools/test_spec_anchors.py REPORT_DIR   (after spec/build.sh and a conformance run)
Environment: CQLFRAME_BIN (default target/release/cqlframe).
"""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "wireshark/tests"))
from check_judge import KEY_PREFIX, NOT_COMPARED, PLUGIN  # noqa: E402
from expert import named  # noqa: E402

PAGE = "framing_v6.html"
RENDERED = ROOT / "build/spec" / PAGE
CAPTURES = sorted((ROOT / "vectors/pcap").glob("*.pcap")) \
    + sorted((ROOT / "wireshark/tests/regressions").glob("*.pcap*"))
RULE = r"[A-Z][A-Z0-9]*-\d+"


def anchor(rule):
    return "%s#%s" % (PAGE, rule)


class Tally:
    def __init__(self, ids):
        self.ids = ids
        self.problems = []
        self.seen = {}

    def anchors(self, source, where, got, rules=None):
        """`got` anchors from `source`: each on the page, and those of `rules` when given."""
        self.seen[source] = self.seen.get(source, 0) + len(got)
        for a in got:
            page, _, name = a.partition("#")
            if page != PAGE or name not in self.ids:
                self.problems.append("%s, %s: %s is no anchor of %s" % (source, where, a, PAGE))
        if rules is not None and list(got) != [anchor(r) for r in rules]:
            self.problems.append("%s, %s: anchors %s for rules %s" % (source, where, got, rules))


def page_ids():
    if not RENDERED.is_file():
        sys.exit("test_spec_anchors: %s missing: run spec/build.sh first" % RENDERED)
    ids = set(re.findall(r'\bid="([^"]+)"', RENDERED.read_text(encoding="utf-8")))
    stated = re.findall(r"^\[\[(%s)\]\]$" % RULE, (ROOT / "spec/framing_v6.adoc").read_text(), re.M)
    missing = [r for r in stated if r not in ids]
    if not stated or missing:
        sys.exit("test_spec_anchors: %d rules stated, without an id in the page: %s"
                 % (len(stated), missing))
    return ids


def check_text(tally, binary):
    for pcap in CAPTURES:
        out = subprocess.run([binary, "check", "--no-progress", str(pcap)],
                             capture_output=True, text=True).stdout.splitlines()
        for i, line in enumerate(out):
            m = re.match(r"  (%s) \(\w+\) .*?(?: \[sender rule (%s)\])?(?:; checking .*)?$"
                         % (RULE, RULE), line)
            if not m or line.startswith("   "):
                continue
            spec = out[i + 1] if i + 1 < len(out) else ""
            if not spec.startswith("    spec: "):
                tally.problems.append("check %s: no spec line after %r" % (pcap.name, line))
                continue
            rules = [r for r in m.groups() if r]
            tally.anchors("check text", pcap.name, spec[len("    spec: "):].split(", "), rules)


def check_json(tally, binary):
    for pcap in CAPTURES:
        doc = json.loads(subprocess.run([binary, "check", "--json", "--no-progress", str(pcap)],
                                        capture_output=True, text=True).stdout)
        for c in doc["connections"]:
            for v in c["rules"]:
                names = [v["rule"]] + ([v["sender_rule"]] if v.get("sender_rule") else [])
                tally.anchors("check --json", pcap.name, [anchor(r) for r in names])


def dissector(tally):
    """The findings of the dissector's expert infos; the remarks check_judge.py does not compare
    with the judge (the course of the handshake, the notes in check's own words) are left out."""
    for pcap in CAPTURES:
        # as check_judge.py runs it: two passes, the first building the TCP fields
        out = subprocess.run(["tshark", "-X", "lua_script:%s" % PLUGIN, "-r", str(pcap), "-n",
                              "-2", "-R", "frame", "-Y", "_ws.expert", "-T", "pdml"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            tally.problems.append("tshark %s: exit %d: %s" % (pcap.name, out.returncode,
                                                              out.stderr[-500:]))
            continue
        for item in ET.fromstring(out.stdout).iter("field"):
            if item.get("name") != "_ws.expert":
                continue
            parts = {f.get("name"): f for f in item}
            keys = [k[len(KEY_PREFIX):] for k in parts if k.startswith(KEY_PREFIX)]
            if not keys or keys[0] in NOT_COMPARED:
                continue
            message = parts["_ws.expert.message"].get("show")
            n = named(message)
            if n is None:
                tally.problems.append("dissector %s: a finding names no rule: %s"
                                      % (pcap.name, message))
                continue
            rules = [n.rule] + ([n.sender] if n.sender else [])
            tally.anchors("dissector", "%s: %s" % (pcap.name, message[:80]), n.spec, rules)


def report(tally, folder):
    html = (folder / "index.html").read_text(encoding="utf-8")
    if not (folder / PAGE).is_file():
        tally.problems.append("%s: no %s beside index.html" % (folder, PAGE))
    links = re.findall(r'<a href="(%s#[^"]*)">(%s)</a>' % (re.escape(PAGE), RULE), html)
    for href, text in links:
        tally.anchors("index.html", folder.name, [href], [text])
    linked = {text for _, text in links}
    doc = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    # the harness's own checks (adapter-contract, read-boundaries) name no rule of the spec
    rules = {r for c in doc["cases"] for r in c["rules"]} \
        | {ch["rule"] for r in doc["results"] for ch in r["checks"] if re.fullmatch(RULE, ch["rule"])}
    for r in sorted(rules - linked):
        tally.problems.append("index.html: rule %s of report.json is not linked" % r)
    tally.anchors("report.json", folder.name, [anchor(r) for r in sorted(rules)])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = os.environ.get("CQLFRAME_BIN", str(ROOT / "target/release/cqlframe"))
    tally = Tally(page_ids())
    # The test itself: an anchor the page lacks, or one for another rule, is reported.
    probe = Tally(tally.ids)
    probe.anchors("self-test", "-", [anchor("NOPE-1"), anchor("FMT-3")], ["FMT-1", "FMT-3"])
    if len(probe.problems) != 2:
        sys.exit("test_spec_anchors: the self-test found %s" % probe.problems)
    check_text(tally, binary)
    check_json(tally, binary)
    dissector(tally)
    report(tally, Path(sys.argv[1]))
    for source in ("check text", "check --json", "dissector", "index.html", "report.json"):
        if not tally.seen.get(source):
            tally.problems.append("%s gave no anchor at all" % source)
    for p in tally.problems:
        print("FAIL " + p)
    print("test_spec_anchors: %s anchors checked against %d ids of %s; %d problems"
          % (", ".join("%d from %s" % (n, s) for s, n in tally.seen.items()), len(tally.ids),
             RENDERED.relative_to(ROOT), len(tally.problems)))
    sys.exit(1 if tally.problems else 0)


if __name__ == "__main__":
    main()
