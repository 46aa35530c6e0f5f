#!/usr/bin/env python3
"""The bug corpus page, conformance/BUGS.md, generated from what it summarises, never typed.

Sources: conformance/bugs.toml (the bugs drivers and servers shipped), the `bugs` lists of the
cases of conformance/cases.toml and conformance/probe.toml (which case catches which bug) and
the reproductions, conformance/results/bugs/<bug id>/<version>/report.json: for a driver's
bug a real `cqlframe conformance` run of the citing cases with the driver pinned to that
version, for a server's a real `cqlframe probe` of the citing cases against that release of
the server (the version is a word of the name the probe gives the server, "Apache Cassandra
4.0.19"; cassandra/reproduce.sh makes one). The
page's table lies between the markers

    <!-- bugs:begin -->
    <!-- bugs:end -->

and everything between them is written by this script. Besides the page it checks the corpus:
every bug is cited by at least one case, every cited id is a bug, every field is there and of
its kind, every reproduction is of a listed bug, ran only cases that cite it (and the probe's
baseline cases, which it always runs), by the tool of
the bug's kind (conformance for a client's, probe for a server's), of the version its folder
names, and matches schemas/report.schema.json.

    python3 tools/bugs.py               rewrite the page
    python3 tools/bugs.py --check       exit 1 when the page differs from what its sources give
                                        or the corpus breaks one of the checks above
    python3 tools/bugs.py --self-test   a typed edit of the page, a bug no case cites and a
                                        case citing an unknown id are each caught
    python3 tools/bugs.py import BUG build/bugs/BUG/VERSION/report.json [VERSION]
                                        commit a reproduction run: its report, without the
                                        wire logs, as conformance/results/bugs/BUG/<the driver
                                        version its adapter reported, or the server release
                                        the probe named>/report.json, then rewrite (VERSION:
                                        when the adapter reports more than a version,
                                        "cdrs-tokio 9.0.1 with ...", or the probe's server
                                        name has more than one, one word of what it reported)

Last line of --check: bugs: N bugs, M cited by cases, R reproductions; the page matches (or
differs); P problems.
"""

import difflib
import json
import os
import re
import sys
import tomllib
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "spec"))
import results  # noqa: E402  (the report format and the schema check are results.py's)
import traceability  # noqa: E402  (the spec's rules as traceability.py reads them)

CORPUS = Path("conformance/bugs.toml")
CATALOGUES = (Path("conformance/cases.toml"), Path("conformance/probe.toml"))
REPRODUCTIONS = Path("conformance/results/bugs")
PAGE = Path("conformance/BUGS.md")
FIELDS = ("id", "url", "project", "affected", "fixed", "kind", "summary", "rules")
KINDS = ("client", "server")
# The command whose run reproduces a bug of each kind: a driver's is run by the conformance
# suite, a server's is probed.
TOOL_OF_KIND = {"client": "cqlframe conformance", "server": "cqlframe probe"}
# The cases `cqlframe probe` runs whatever cases it is given: what it learns there (the
# server's SUPPORTED, that it starts) is what the others build on.
PROBE_BASELINE = ("probe.options", "probe.startup")
RELEASE = re.compile(r"\d+\.\d+[\w.-]*")
BLOCK = re.compile(r"(?P<begin><!-- bugs:begin -->\n)(?P<body>.*?)(?P<end><!-- bugs:end -->)", re.S)


def read_toml(path):
    return tomllib.loads((ROOT / path).read_text(encoding="utf-8"))


def load():
    """(bugs, cases, reproductions): the corpus's records, every case of both catalogues, and
    each reproduction as (bug id, version, report path, report)."""
    bugs = read_toml(CORPUS).get("bug", [])
    cases = [case for path in CATALOGUES for case in read_toml(path)["case"]]
    found = []
    base = ROOT / REPRODUCTIONS
    if base.is_dir():
        for report in sorted(base.glob("*/*/report.json")):
            rel = report.relative_to(ROOT)
            data = json.loads(report.read_text(encoding="utf-8"))
            found.append((report.parent.parent.name, report.parent.name, rel, data))
    return bugs, cases, found


def problems(bugs, cases, reproductions):
    """What is wrong with the corpus, one sentence each."""
    out = []
    rules = traceability.parse_spec(ROOT / "spec/framing_v6.adoc").by_id()
    ids = [b.get("id") for b in bugs]
    for bug in bugs:
        name = bug.get("id", "?")
        missing = [f for f in FIELDS if f not in bug]
        extra = sorted(set(bug) - set(FIELDS))
        if missing or extra:
            out.append("%s: %s" % (name, "; ".join(
                (["fields missing: " + ", ".join(missing)] if missing else [])
                + (["unknown fields: " + ", ".join(extra)] if extra else []))))
            continue
        if ids.count(name) > 1:
            out.append("%s: listed %d times" % (name, ids.count(name)))
        if not bug["url"].startswith("https://"):
            out.append("%s: url %r is not a public https link" % (name, bug["url"]))
        if bug["kind"] not in KINDS:
            out.append("%s: kind %r is not one of %s" % (name, bug["kind"], ", ".join(KINDS)))
        if not bug["affected"] or not bug["summary"].strip() or not bug["rules"]:
            out.append("%s: affected, summary and rules must not be empty" % name)
        for rule in bug["rules"]:
            if rule not in rules:
                out.append("%s: rule %s is not in spec/framing_v6.adoc" % (name, rule))
    cited = {}
    kinds = {b.get("id"): b.get("kind") for b in bugs}
    for case in cases:
        for bug_id in case.get("bugs", []):
            cited.setdefault(bug_id, []).append(case["id"])
            if bug_id not in ids:
                out.append("case %s cites %s, which conformance/bugs.toml does not list"
                           % (case["id"], bug_id))
            elif (kinds[bug_id] == "server") != case["id"].startswith("probe."):
                out.append("case %s cites %s, a %s bug: a driver's bug is caught by a case of "
                           "cases.toml, a server's by one of probe.toml"
                           % (case["id"], bug_id, kinds[bug_id]))
    for name in ids:
        if name not in cited:
            out.append("%s: no case of %s cites it" % (name, " or ".join(map(str, CATALOGUES))))
    for bug_id, version, path, report in reproductions:
        if bug_id not in ids:
            out.append("%s: a reproduction of %s, which conformance/bugs.toml does not list"
                       % (path, bug_id))
            continue
        tool = TOOL_OF_KIND.get(kinds[bug_id], "?")
        if report.get("tool") != tool or report.get("format") != results.REPORT_FORMAT:
            out.append("%s: not a report.json of %s in format %d, as a %s bug's reproduction is"
                       % (path, tool, results.REPORT_FORMAT, kinds[bug_id]))
            continue
        ran = [c["id"] for c in report["cases"]]
        allowed = cited.get(bug_id, []) + list(PROBE_BASELINE if tool == "cqlframe probe" else ())
        strays = [c for c in ran if c not in allowed]
        if not ran or strays:
            out.append("%s: runs %s, not only cases that cite %s"
                       % (path, ", ".join(strays) or "no case", bug_id))
        tested = [d for d in report["drivers"] if d["name"] != "reference"]
        if len(tested) != 1:
            out.append("%s: a reproduction runs one driver, this one %d" % (path, len(tested)))
        elif not names_version(reported_versions(report, tested[0]["name"]), version):
            out.append("%s: its folder says %s, its %s reported %s" % (
                path, version, "probe" if report["tool"] == "cqlframe probe" else "adapter",
                ", ".join(reported_versions(report, tested[0]["name"])) or "none"))
    return out


def reported_versions(report, tested):
    """What a run says the tested version is: for a probe the name it gave the server
    ("Apache Cassandra 4.0.19"), for a conformance run the versions its adapter reported."""
    if report.get("tool") == "cqlframe probe":
        return [tested]
    return driver_versions(report, tested)


def driver_versions(report, driver):
    """The versions the adapter of `driver` reported, in the report's order."""
    seen = []
    for r in report["results"]:
        v = (r["adapter"].get("report") or {}).get("driver_version")
        if r["driver"] == driver and v and v not in seen:
            seen.append(v)
    return seen


def names_version(reported, version):
    """Whether the versions a run reported name `version`: as the whole version, or as one
    word of it ("cdrs-tokio 9.0.1 with cassandra-protocol 4.0.0" names 9.0.1, "Apache
    Cassandra 4.0-beta4" names 4.0-beta4). A run that reported none names no version."""
    return any(version == v or version in v.split() for v in reported)


def version_key(version):
    """Oldest first: by the release's numbers, a pre-release of it (v2.0.0-rc1, 4.0-beta4, a Go
    pseudo-version's timestamp) before the release itself."""
    core, _, pre = version.lstrip("v").partition("-")
    numbers = [int(p) if p.isdigit() else 0 for p in re.split(r"[.+]", core)]
    return numbers, 0 if pre else 1, pre


def reproduced(bug, reproductions):
    """A bug's reproductions in Markdown, oldest version first: each the outcome of every case
    it ran on that version, linked to its report."""
    runs = sorted(
        ((v, p, r) for b, v, p, r in reproductions if b == bug["id"]),
        key=lambda run: version_key(run[0]),
    )
    parts = []
    for version, path, report in runs:
        outcomes = [
            "`%s` %s" % (r["case"], results.cell(r))
            for r in report["results"]
            if r["driver"] != "reference"
        ]
        # Quoted: a bug id may hold '#' ("gocql#1960"), which would start a link's fragment.
        link = urllib.parse.quote(os.path.relpath(ROOT / path, (ROOT / PAGE).parent))
        parts.append("[%s](%s): %s" % (version, link, "; ".join(outcomes)))
    return "<br>".join(parts) if parts else "not yet"


def caught(bug, report):
    """Whether a reproduction caught the bug: a failed check of one of the bug's rules in a case
    the tested driver ran (another rule failing on the same case is another matter)."""
    return any(
        check["status"] == "fail" and check["rule"] in bug["rules"]
        for r in report["results"]
        if r["driver"] != "reference"
        for check in r["checks"]
    )


def shown_fixed(bug, reproductions):
    """Whether the bug's reproductions show it fixed: caught on a release before the fix, and
    not on the release that has it."""
    runs = [(v, r) for b, v, _, r in reproductions if b == bug["id"]]
    return bool(
        bug["fixed"]
        and any(v != bug["fixed"] and caught(bug, r) for v, r in runs)
        and any(v == bug["fixed"] and not caught(bug, r) for v, r in runs)
    )


def render(bugs, cases, reproductions):
    """The page's generated part: a table per project, the bugs in the corpus's order."""
    cited = {}
    for case in cases:
        for bug_id in case.get("bugs", []):
            cited.setdefault(bug_id, []).append(case["id"])
    lines = [
        "Generated by `tools/bugs.py` from [`bugs.toml`](bugs.toml), the `bugs` lists of "
        "[`cases.toml`](cases.toml) and [`probe.toml`](probe.toml), and the reproductions "
        "under [`results/bugs/`](results/bugs/): %d bugs, %d cited by a case, %d reproduced, "
        "%d of them shown fixed (a check of the bug's rules failing on an affected release and "
        "none on the fixed one)."
        % (len(bugs), len([b for b in bugs if b["id"] in cited]),
           len({b for b, _, _, _ in reproductions}),
           len([b for b in bugs if shown_fixed(b, reproductions)])),
    ]
    projects = []
    for bug in bugs:
        if bug["project"] not in projects:
            projects.append(bug["project"])
    for project in projects:
        lines += ["", "### %s" % project, "",
                  "| bug | affected | fixed | kind | rules | caught by | reproduced | what broke |",
                  "|---|---|---|---|---|---|---|---|"]
        for bug in (b for b in bugs if b["project"] == project):
            lines.append("| [%s](%s) | %s | %s | %s | %s | %s | %s | %s |" % (
                bug["id"], bug["url"], bug["affected"], bug["fixed"] or "unfixed", bug["kind"],
                ", ".join(bug["rules"]),
                ", ".join("`%s`" % c for c in cited.get(bug["id"], [])),
                reproduced(bug, reproductions),
                bug["summary"].replace("|", "\\|").replace("\n", " "),
            ))
    return "\n".join(lines) + "\n"


def rewrite(text, generated):
    """The page with its generated part replaced; an error when the markers are not one pair."""
    if text.count("<!-- bugs:begin -->") != 1 or len(BLOCK.findall(text)) != 1:
        raise SystemExit("%s: needs exactly one <!-- bugs:begin --> ... <!-- bugs:end --> pair" % PAGE)
    return BLOCK.sub(lambda m: m.group("begin") + generated + m.group("end"), text)


def self_test():
    """The checks catch what they are for, on the committed corpus."""
    bugs, cases, reproductions = load()
    assert bugs and not problems(bugs, cases, reproductions), "the committed corpus has problems"
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    good = rewrite(text, render(bugs, cases, reproductions))
    assert rewrite(good, render(bugs, cases, reproductions)) == good, "the page is not stable"
    row = next(line for line in good.splitlines() if line.startswith("| [%s]" % bugs[0]["id"]))
    typed = good.replace(row, row.replace("| %s |" % bugs[0]["affected"], "| 0.0.1 |", 1))
    assert typed != good and rewrite(typed, render(bugs, cases, reproductions)) == good, \
        "a typed edit of the page is not caught"
    uncited = bugs + [dict(bugs[0], id="NOBODY-1")]
    assert any("NOBODY-1: no case" in p for p in problems(uncited, cases, reproductions)), \
        "a bug no case cites is not caught"
    unknown = cases + [{"id": "x.case", "bugs": ["NOBODY-2"]}]
    assert any("cites NOBODY-2" in p for p in problems(bugs, unknown, reproductions)), \
        "a case citing an unknown bug is not caught"
    bug = {"id": "X-1", "fixed": "2.0", "rules": ["RECV-4"]}

    def run(*failed):
        checks = [{"status": "fail", "rule": rule} for rule in failed]
        return {"results": [{"driver": "d", "checks": checks}]}

    assert shown_fixed(bug, [("X-1", "1.0", "", run("RECV-4")), ("X-1", "2.0", "", run())])
    assert shown_fixed(bug, [("X-1", "1.0", "", run("RECV-4")), ("X-1", "2.0", "", run("LZ4-3"))]), \
        "another rule failing on the fixed release hides the fix"
    assert not shown_fixed(bug, [("X-1", "1.0", "", run("RECV-4")), ("X-1", "2.0", "", run("RECV-4"))])
    assert not shown_fixed(bug, [("X-1", "1.0", "", run("LZ4-3")), ("X-1", "2.0", "", run())]), \
        "a failure of another rule counted as the bug"
    assert sorted(["4.0.19", "4.0-rc1", "4.0-beta4", "4.0-beta3", "v2.0.0", "v2.0.0-rc1"],
                  key=version_key) == ["v2.0.0-rc1", "v2.0.0", "4.0-beta3", "4.0-beta4",
                                       "4.0-rc1", "4.0.19"], "releases out of order"
    assert names_version(["cdrs-tokio 9.0.1 with cassandra-protocol 4.0.0"], "9.0.1")
    assert not names_version(["cdrs-tokio 9.0.1 with cassandra-protocol 4.0.0"], "9.0.2")
    assert not names_version([], "5.0.2") and names_version(["v2.1.0"], "v2.1.0")
    probed = json.loads((ROOT / "conformance/results/probe-cassandra-4.0.json").read_text(encoding="utf-8"))
    case = probed["results"][0]["case"]
    probed = dict(probed, cases=[c for c in probed["cases"] if c["id"] == case],
                  results=[r for r in probed["results"] if r["case"] == case])
    server_bug = {"id": "SERVER-1", "url": "https://example.org/SERVER-1", "project": "cassandra",
                  "affected": "4.0.19", "fixed": "", "kind": "server", "summary": "s",
                  "rules": ["LIFE-1"]}
    citing = cases + [{"id": case, "bugs": ["SERVER-1"]}]

    def probe_problems(folder, bug=server_bug):
        run = ("SERVER-1", folder, Path("x/%s/report.json" % folder), probed)
        return problems(bugs + [bug], citing, reproductions + [run])

    assert not probe_problems("4.0.19"), "a probe of the release its folder names is refused"
    assert any("its folder says 4.1.10, its probe reported Apache Cassandra 4.0.19" in p
               for p in probe_problems("4.1.10")), "a probe of another release is taken"
    assert any("not a report.json of cqlframe conformance" in p
               for p in probe_problems("4.0.19", dict(server_bug, kind="client"))), \
        "a probe taken for a driver's reproduction"
    wrong_side = cases + [{"id": "probe.x", "bugs": [bugs[0]["id"]]}]
    assert any("probe.x cites" in p for p in problems(bugs, wrong_side, reproductions)) == (
        bugs[0]["kind"] == "client"), "a driver's bug cited by a probe case is not caught"
    server = next((b for b in bugs if b["kind"] == "server"), None)
    client = next((b for b in bugs if b["kind"] == "client"), None)
    for bug, extra, flagged in ((server, "probe.startup", False), (client, "probe.startup", True),
                                (server, "probe.pack", True)):
        if bug is None:
            continue
        citing = next(c["id"] for c in cases if bug["id"] in c.get("bugs", []))
        run_ = {"tool": TOOL_OF_KIND[bug["kind"]], "format": results.REPORT_FORMAT,
                "cases": [{"id": extra}, {"id": citing}],
                "drivers": [{"name": "x"}], "results": []}
        found = problems(bugs, cases, [(bug["id"], "1.0", "r.json", run_)])
        assert any("not only cases that cite" in p for p in found) == flagged, \
            "%s beside %s in a reproduction of %s" % (extra, citing, bug["id"])
    try:
        rewrite(text.replace("<!-- bugs:end -->", ""), render(bugs, cases, reproductions))
        raise AssertionError("a begin marker without its end is not caught")
    except SystemExit:
        pass
    print("bugs self-test: a typed edit, an uncited bug, an unknown citation, a bug cited from "
          "the wrong catalogue and a lone marker are caught; a fix is shown only by a failing and a "
          "passing run of the bug's rules; a server's reproduction is a probe of the release its "
          "folder names")


def main(argv):
    if argv == ["--self-test"]:
        self_test()
        return
    if argv[:1] == ["import"] and len(argv) in (3, 4):
        bug_id, run = argv[1], json.loads(Path(argv[2]).read_text(encoding="utf-8"))
        tested = [d["name"] for d in run["drivers"] if d["name"] != "reference"]
        versions = reported_versions(run, tested[0]) if len(tested) == 1 else []
        given = argv[3:]
        if given and names_version(versions, given[0]):
            versions = given
        elif run.get("tool") == "cqlframe probe" and len(versions) == 1:
            # The release is the word of the server's name that reads as one ("Apache
            # Cassandra 4.0-beta4"); an address ("127.0.0.1:9042 (5.0.9)") is none.
            versions = [w for w in versions[0].split() if RELEASE.fullmatch(w)] or versions
        if len(versions) != 1 or " " in versions[0] or (given and versions != given):
            sys.exit("%s: a reproduction is one driver at one version; this run has %s at %s"
                     % (argv[2], ", ".join(tested) or "no driver", ", ".join(versions) or "?"))
        path = REPRODUCTIONS / bug_id / versions[0] / "report.json"
        results.commit(run, path)
        print("bugs: %s written from %s" % (path, argv[2]))
        argv = []
    if argv not in ([], ["--check"]):
        sys.exit(__doc__)
    bugs, cases, reproductions = load()
    found = problems(bugs, cases, reproductions)
    for p in found:
        print("bugs: %s" % p)
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    new = rewrite(text, render(bugs, cases, reproductions))
    broken = results.validate({str(p) for _, _, p, _ in reproductions}) if reproductions else 0
    cited = {b for c in cases for b in c.get("bugs", [])}
    if argv == ["--check"]:
        if new != text:
            print("%s differs from what its sources give (python3 tools/bugs.py):" % PAGE)
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(True), new.splitlines(True), str(PAGE), "generated", n=0))
    elif new != text:
        (ROOT / PAGE).write_text(new, encoding="utf-8")
        print("bugs: rewrote %s" % PAGE)
    print("bugs: %d bugs, %d cited by cases, %d reproductions; the page %s; %d problems"
          % (len(bugs), len(cited), len(reproductions),
             "matches" if new == text else ("differs" if argv else "rewritten"),
             len(found) + broken))
    sys.exit(1 if found or broken or (argv == ["--check"] and new != text) else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
