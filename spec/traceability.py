#!/usr/bin/env python3
"""Rule extraction, rule summary and test traceability for spec/framing_v6.adoc.

The specification is the single source of rule identifiers. This script:

* extracts every rule (ID, level, statement, section) from the AsciiDoc source,
  using the marking format defined in the spec's "Conventions" section, and fails
  on duplicate IDs, malformed rule paragraphs, capitalised BCP 14 keywords outside
  rule paragraphs and cross-references to anchors that do not exist;
* writes (--write-summary) or checks (default) spec/generated/rules.adoc, the
  AsciiDoc table of all rules included as the spec's last appendix;
* collects citations of rule IDs from test material and code, and fails when a
  MUST / MUST NOT rule has no test citation or when a scanned file cites an ID the
  spec does not define.

Sources of citations (paths relative to the repository root; missing ones are skipped):

  vectors          vectors/manifest.json: the "rules" array of every case
  reference-tests  every file under any directory named "tests" inside reference/, and every
                   unit-test module "tests.rs" inside a "src" directory there
  kaitai-tests     kaitai/tests/
  wireshark-tests  wireshark/tests/
  conformance      conformance/ (the driver cases, conformance/cases.toml, and the adapters)
  probe            conformance/probe.toml: the probe's server cases
  code             every other file under a directory named "src" inside reference/ (not
                   counted as tests)

Exit status: 0 when every check passes, 1 otherwise, 2 on usage errors.
--report-only prints the same report but does not fail on coverage problems
(untested MUST rules, unknown IDs cited); problems in the spec itself and an
outdated summary still fail.

Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

AREAS = ("LIFE", "NEG", "FMT", "CRC", "LZ4", "SEND", "RECV", "ENV", "ERR", "JUDGE")
LEVELS = ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY")
TESTED_LEVELS = ("MUST", "MUST NOT")

# A citation of a rule ID anywhere in test material or code.
CITATION_RE = re.compile(r"\b(?:" + "|".join(AREAS) + r")-[0-9]+\b")
# Names of CRC algorithms that look like IDs of the CRC area. The spec never assigns
# these numbers in that area (see its "Stable identifiers" section).
ALGORITHM_NAMES = frozenset({"CRC-8", "CRC-16", "CRC-24", "CRC-32", "CRC-64"})

# BCP 14 keywords, longest alternatives first so that "MUST NOT" is one token.
KEYWORD_RE = re.compile(
    r"\b(MUST NOT|SHALL NOT|SHOULD NOT|NOT RECOMMENDED|MUST|SHALL|SHOULD|REQUIRED|"
    r"RECOMMENDED|MAY|OPTIONAL)\b"
)
CODE_SPAN_RE = re.compile(r"`[^`\n]*`")

ANCHOR_LINE_RE = re.compile(r"^\[\[([^\],\]]+)(?:,[^\]]*)?\]\]\s*$")
BLOCK_ID_RE = re.compile(r"^\[#([A-Za-z0-9_.:-]+)[^\]]*\]\s*$")
INLINE_ANCHOR_RE = re.compile(r"\[\[([A-Za-z0-9_.:-]+)(?:,[^\]]*)?\]\]|\[#([A-Za-z0-9_.:-]+)\]#")
RULE_ID_SHAPE_RE = re.compile(r"^[A-Z][A-Z0-9]*-[0-9]+$")
RULE_ID_RE = re.compile(r"^(?:" + "|".join(AREAS) + r")-[1-9][0-9]*$")
RULE_HEAD_RE = re.compile(r"^\*(?P<id>[A-Z][A-Z0-9]*-[0-9]+)\*")
RULE_LINE_RE = re.compile(
    r"^\*(?P<id>[A-Z][A-Z0-9]*-[0-9]+)\* \((?P<level>[A-Z][A-Z ]*[A-Z])\) — (?P<text>\S.*)$"
)
HEADING_RE = re.compile(r"^(={1,6})\s+(\S.*?)\s*$")
XREF_RE = re.compile(r"<<([^,>\s]+)(?:,[^>]*)?>>")
ATTRIBUTE_RE = re.compile(r"^:[A-Za-z0-9_][A-Za-z0-9_-]*!?:")
# Delimited blocks whose content is not prose (literal, listing, passthrough, comment).
VERBATIM_DELIMITERS = ("....", "----", "++++", "////")

SOURCES = ("vectors", "reference-tests", "kaitai-tests", "wireshark-tests", "conformance", "probe", "code")
TEST_SOURCES = tuple(s for s in SOURCES if s != "code")
SKIP_DIRS = frozenset({".git", "target", "node_modules", "__pycache__", ".venv", "venv", "build", "dist", ".cache"})
MAX_SCAN_BYTES = 16 * 1024 * 1024
# A Rust module of unit tests (`#[cfg(test)] mod tests;`) inside a src directory: tests, not code.
UNIT_TEST_FILE = "tests.rs"


@dataclass
class Rule:
    id: str
    level: str
    statement: str
    section_title: str
    section_id: str
    line: int


@dataclass
class Spec:
    rules: list[Rule] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # Anchors of the top-level ("== ") sections, which case catalogues group by.
    sections: set[str] = field(default_factory=set)

    def by_id(self) -> dict[str, Rule]:
        return {r.id: r for r in self.rules}


def _strip_code(text: str) -> str:
    return CODE_SPAN_RE.sub(" ", text)


def _sort_key(rule_id: str) -> tuple[int, int]:
    area, num = rule_id.rsplit("-", 1)
    return (AREAS.index(area) if area in AREAS else len(AREAS), int(num))


def parse_spec(path: Path) -> Spec:
    """Extract rules from the AsciiDoc source and check the marking format."""
    spec = Spec()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        spec.errors.append(f"{path}: cannot read: {exc}")
        return spec

    def err(lineno: int, msg: str) -> None:
        spec.errors.append(f"{path.name}:{lineno}: {msg}")

    anchors: set[str] = set()
    xrefs: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    verbatim: str | None = None
    pending_id: str | None = None  # block id waiting for the next heading
    section_title, section_id = "", ""
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        lineno = i + 1
        stripped = line.strip()

        if verbatim is not None:
            if stripped == verbatim:
                verbatim = None
            i += 1
            continue
        if stripped in VERBATIM_DELIMITERS:
            verbatim = stripped
            i += 1
            continue
        if line.startswith("//"):
            i += 1
            continue
        if ATTRIBUTE_RE.match(line):
            i += 1
            continue

        m = ANCHOR_LINE_RE.match(stripped)
        if m and RULE_ID_SHAPE_RE.match(m.group(1)):
            rule_id = m.group(1)
            anchors.add(rule_id)
            i = _parse_rule(lines, i, rule_id, spec, err, seen, xrefs, section_title, section_id)
            pending_id = None
            continue
        # Any other [[anchor]] line, like a [#id] line, names the next heading.
        m = m or BLOCK_ID_RE.match(stripped)
        if m:
            anchors.add(m.group(1))
            pending_id = m.group(1)
            i += 1
            continue

        m = HEADING_RE.match(line)
        if m:
            section_title = m.group(2)
            section_id = pending_id or ""
            if m.group(1) == "==" and section_id:
                spec.sections.add(section_id)
            pending_id = None
            for km in KEYWORD_RE.finditer(_strip_code(section_title)):
                err(lineno, f"BCP 14 keyword {km.group(1)!r} outside a rule paragraph (in a heading)")
            i += 1
            continue

        if stripped and not stripped.startswith("["):
            pending_id = None

        if RULE_HEAD_RE.match(stripped):
            err(lineno, f"rule paragraph {RULE_HEAD_RE.match(stripped).group('id')} has no [[ID]] anchor line before it")

        for am in INLINE_ANCHOR_RE.finditer(line):
            anchors.add(am.group(1) or am.group(2))
        for xm in XREF_RE.finditer(line):
            xrefs.append((lineno, xm.group(1)))
        for km in KEYWORD_RE.finditer(_strip_code(line)):
            err(lineno, f"BCP 14 keyword {km.group(1)!r} outside a rule paragraph")
        i += 1

    if verbatim is not None:
        spec.errors.append(f"{path.name}: unterminated delimited block {verbatim!r}")

    for lineno, target in xrefs:
        if target not in anchors:
            err(lineno, f"cross-reference <<{target}>> has no matching anchor")

    spec.rules.sort(key=lambda r: _sort_key(r.id))
    return spec


def _parse_rule(lines, i, rule_id, spec, err, seen, xrefs, section_title, section_id) -> int:
    """Parse the rule paragraph whose anchor is at lines[i]; return the next line index."""
    lineno = i + 1
    if not RULE_ID_RE.match(rule_id):
        err(lineno, f"anchor [[{rule_id}]] is not a valid rule ID (areas: {', '.join(AREAS)}; numbers from 1)")
    if rule_id in seen:
        err(lineno, f"duplicate rule ID {rule_id} (first defined on line {seen[rule_id]})")
    else:
        seen[rule_id] = lineno

    j = i + 1
    if j >= len(lines) or not lines[j].strip():
        err(lineno, f"rule anchor [[{rule_id}]] is not followed by its rule paragraph")
        return j
    head = lines[j]
    m = RULE_LINE_RE.match(head)
    if not m:
        err(j + 1, f"malformed rule paragraph for {rule_id}: expected '*{rule_id}* (LEVEL) — statement'")
        # skip the paragraph
        while j < len(lines) and lines[j].strip():
            j += 1
        return j
    if m.group("id") != rule_id:
        err(j + 1, f"rule paragraph names {m.group('id')} but its anchor is [[{rule_id}]]")
    level = m.group("level")
    if level not in LEVELS:
        err(j + 1, f"rule {rule_id}: level {level!r} is not one of {', '.join(LEVELS)}")

    parts = [m.group("text").strip()]
    k = j + 1
    while k < len(lines):
        nxt = lines[k]
        s = nxt.strip()
        if not s or s in VERBATIM_DELIMITERS or HEADING_RE.match(nxt) or ANCHOR_LINE_RE.match(s):
            break
        if RULE_HEAD_RE.match(s):
            err(k + 1, f"rule {rule_id}: another rule starts inside its paragraph (missing blank line and anchor)")
            break
        parts.append(s)
        k += 1
    statement = " ".join(parts)

    for off, text in enumerate([head] + lines[j + 1:k]):
        for xm in XREF_RE.finditer(text):
            xrefs.append((j + 1 + off, xm.group(1)))

    found = [km.group(1) for km in KEYWORD_RE.finditer(_strip_code(statement))]
    if level in LEVELS:
        if level not in found:
            err(j + 1, f"rule {rule_id} ({level}): its statement does not use the keyword {level}")
        others = sorted(set(found) - {level})
        if others:
            err(j + 1, f"rule {rule_id} ({level}): its statement also uses {', '.join(others)}; "
                       f"a rule uses only the keyword of its level")
    if not section_id:
        err(j + 1, f"rule {rule_id}: the section '{section_title}' containing it needs an explicit id ([#id] line)")

    spec.rules.append(Rule(rule_id, level, statement, section_title, section_id, j + 1))
    return k


# ---------------------------------------------------------------------------------------
# Summary


def render_summary(spec: Spec) -> str:
    out = [
        "// Generated by spec/traceability.py --write-summary from spec/framing_v6.adoc.",
        "// Do not edit: change the rule paragraphs and regenerate.",
        '[cols="2,2,4,10",options="header"]',
        ".All rules",
        "|===",
        "| ID | Level | Section | Statement",
        "",
    ]
    for r in spec.rules:
        statement = r.statement.replace("|", "\\|")
        title = r.section_title.replace("|", "\\|")
        section = f"<<{r.section_id},{title}>>" if r.section_id else title
        out += [f"| <<{r.id},{r.id}>>", f"| {r.level}", f"| {section}", f"| {statement}", ""]
    out.append("|===")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------
# Citations


@dataclass
class Citation:
    rule_id: str
    source: str
    location: str


def _iter_files(base: Path):
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            yield Path(dirpath) / name


def _read_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_SCAN_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _scan_text(text: str, source: str, rel: str, into: list[Citation]) -> None:
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in CITATION_RE.finditer(line):
            if m.group(0) in ALGORITHM_NAMES:
                continue
            into.append(Citation(m.group(0), source, f"{rel}:{lineno}"))


def _dirs_named(base: Path, name: str) -> list[Path]:
    found = []
    if not base.is_dir():
        return found
    for dirpath, dirnames, _ in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for d in list(dirnames):
            if d == name:
                found.append(Path(dirpath) / d)
                dirnames.remove(d)  # scanned as a whole below
    return found


def collect_citations(root: Path) -> tuple[list[Citation], list[str]]:
    """Return (citations, problems). Problems are malformed citation entries."""
    cites: list[Citation] = []
    problems: list[str] = []

    manifest = root / "vectors" / "manifest.json"
    if manifest.is_file():
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"vectors/manifest.json: cannot parse: {exc}")
        else:
            _walk_manifest(data, "", cites, problems)

    probe = root / "conformance" / "probe.toml"

    def scan_tree(base: Path, source: str, unit_tests: str | None = None) -> None:
        if not base.is_dir():
            return
        for f in _iter_files(base):
            if f == probe:
                continue
            text = _read_text(f)
            if text is not None:
                kind = unit_tests if unit_tests and f.name == UNIT_TEST_FILE else source
                _scan_text(text, kind, f.relative_to(root).as_posix(), cites)

    for d in _dirs_named(root / "reference", "tests"):
        scan_tree(d, "reference-tests")
    scan_tree(root / "kaitai" / "tests", "kaitai-tests")
    scan_tree(root / "wireshark" / "tests", "wireshark-tests")
    scan_tree(root / "conformance", "conformance")
    text = _read_text(probe) if probe.is_file() else None
    if text is not None:
        _scan_text(text, "probe", probe.relative_to(root).as_posix(), cites)
    for d in _dirs_named(root / "reference", "src"):
        scan_tree(d, "code", unit_tests="reference-tests")
    return cites, problems


def _walk_manifest(node, path: str, cites: list[Citation], problems: list[str]) -> None:
    if isinstance(node, dict):
        rules = node.get("rules")
        if rules is not None:
            label = node.get("id") or node.get("name") or path or "/"
            where = f"vectors/manifest.json#{label}"
            if not isinstance(rules, list):
                problems.append(f"{where}: 'rules' is not an array")
            else:
                for entry in rules:
                    if isinstance(entry, str) and CITATION_RE.fullmatch(entry.strip()):
                        cites.append(Citation(entry.strip(), "vectors", where))
                    else:
                        problems.append(f"{where}: rules entry {entry!r} is not a rule ID")
        for key, value in node.items():
            if key != "rules":
                _walk_manifest(value, f"{path}/{key}", cites, problems)
    elif isinstance(node, list):
        for idx, value in enumerate(node):
            _walk_manifest(value, f"{path}/{idx}", cites, problems)


# ---------------------------------------------------------------------------------------
# Report


CATALOGUES = ("conformance/cases.toml", "conformance/probe.toml")


def catalogue_problems(root: Path, spec: Spec) -> list[str]:
    """Every case of the case catalogues is listed under a section of the spec: its `section`
    must be the anchor of a top-level section."""
    problems = []
    for rel in CATALOGUES:
        path = root / rel
        if not path.is_file():
            continue
        try:
            cases = tomllib.loads(path.read_text(encoding="utf-8")).get("case", [])
        except (OSError, tomllib.TOMLDecodeError) as exc:
            problems.append(f"{rel}: cannot parse: {exc}")
            continue
        for case in cases:
            section = case.get("section")
            if section not in spec.sections:
                problems.append(f"{rel}: case {case.get('id')}: section {section!r} is not a section anchor of the spec")
    return problems


def build_report(spec: Spec, cites: list[Citation], problems: list[str]) -> dict:
    rules = spec.by_id()
    per_rule: dict[str, dict] = {
        rid: {"level": r.level, "section": r.section_title, "section_id": r.section_id,
              "statement": r.statement, "counts": {s: 0 for s in SOURCES}, "locations": []}
        for rid, r in rules.items()
    }
    unknown: dict[str, list[str]] = {}
    for c in cites:
        if c.rule_id in per_rule:
            entry = per_rule[c.rule_id]
            entry["counts"][c.source] += 1
            entry["locations"].append({"source": c.source, "location": c.location})
        else:
            unknown.setdefault(c.rule_id, []).append(c.location)
    for entry in per_rule.values():
        entry["tests"] = sum(entry["counts"][s] for s in TEST_SOURCES)
        entry["tested"] = entry["tests"] > 0

    by_level = {lvl: sum(1 for r in spec.rules if r.level == lvl) for lvl in LEVELS}
    ordered = [r.id for r in spec.rules]
    untested_must = [rid for rid in ordered if per_rule[rid]["level"] in TESTED_LEVELS and not per_rule[rid]["tested"]]
    untested_other = [rid for rid in ordered if per_rule[rid]["level"] not in TESTED_LEVELS and not per_rule[rid]["tested"]]
    return {
        "spec_errors": spec.errors,
        "rule_count": len(spec.rules),
        "by_level": by_level,
        "tested": sum(1 for e in per_rule.values() if e["tested"]),
        "untested_must": untested_must,
        "untested_should_may": untested_other,
        "unknown_citations": {k: unknown[k] for k in sorted(unknown)},
        "citation_problems": problems,
        "sources": list(SOURCES),
        "rules": {rid: per_rule[rid] for rid in ordered},
    }


def print_report(report: dict, out=None) -> None:
    out = out if out is not None else sys.stdout
    p = lambda *a: print(*a, file=out)
    lv = report["by_level"]
    p(f"Rules: {report['rule_count']} (" + ", ".join(f"{k} {v}" for k, v in lv.items() if v) + ")")
    must_total = lv.get("MUST", 0) + lv.get("MUST NOT", 0)
    p(f"Tested: {report['tested']}/{report['rule_count']}; "
      f"MUST/MUST NOT tested: {must_total - len(report['untested_must'])}/{must_total}")
    for e in report["spec_errors"]:
        p(f"FAIL spec: {e}")
    if report["untested_must"]:
        p(f"FAIL untested MUST/MUST NOT ({len(report['untested_must'])}): " + ", ".join(report["untested_must"]))
    if report["untested_should_may"]:
        p(f"info untested SHOULD/MAY ({len(report['untested_should_may'])}): " + ", ".join(report["untested_should_may"]))
    for rid, locs in report["unknown_citations"].items():
        shown = ", ".join(locs[:5]) + (f", ... ({len(locs)} in all)" if len(locs) > 5 else "")
        p(f"FAIL cites {rid}, which the spec does not define: {shown}")
    for prob in report["citation_problems"]:
        p(f"FAIL citation: {prob}")
    p("")
    p("Per rule (test citations by source; code citations are not tests):")
    width = max((len(r) for r in report["rules"]), default=6)
    for rid, e in report["rules"].items():
        counts = " ".join(f"{s}:{n}" for s, n in e["counts"].items() if n)
        status = "tested" if e["tested"] else ("UNTESTED" if e["level"] in TESTED_LEVELS else "untested")
        p(f"  {rid:<{width}}  {e['level']:<10}  {status:<8}  {counts or '-'}")


# ---------------------------------------------------------------------------------------
# Main


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=here.parent, help="repository root (default: parent of spec/)")
    ap.add_argument("--spec", type=Path, help="spec source (default: ROOT/spec/framing_v6.adoc)")
    ap.add_argument("--summary", type=Path, help="rule summary (default: ROOT/spec/generated/rules.adoc)")
    ap.add_argument("--write-summary", action="store_true", help="write the rule summary and exit")
    ap.add_argument("--report-only", action="store_true",
                    help="print the coverage report without failing on coverage problems")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)

    root = args.root.resolve()
    spec_path = args.spec or root / "spec" / "framing_v6.adoc"
    summary_path = args.summary or root / "spec" / "generated" / "rules.adoc"

    spec = parse_spec(spec_path)
    if not spec.rules and not spec.errors:
        spec.errors.append(f"{spec_path}: no rules found")

    if args.write_summary:
        if spec.errors:
            for e in spec.errors:
                print(f"FAIL spec: {e}", file=sys.stderr)
            return 1
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        summary_path.write_text(render_summary(spec), encoding="utf-8")
        print(f"wrote {summary_path} ({len(spec.rules)} rules)")
        return 0

    failed = bool(spec.errors)
    expected = render_summary(spec)
    try:
        current = summary_path.read_text(encoding="utf-8")
    except OSError:
        current = None
    summary_problem = None
    if current is None:
        summary_problem = f"{summary_path} is missing; run spec/traceability.py --write-summary"
    elif current != expected:
        summary_problem = f"{summary_path} is out of date; run spec/traceability.py --write-summary"
    if summary_problem:
        spec.errors.append(summary_problem)
        failed = True

    cites, problems = collect_citations(root)
    problems += catalogue_problems(root, spec)
    report = build_report(spec, cites, problems)
    coverage_failed = bool(report["untested_must"] or report["unknown_citations"] or report["citation_problems"])
    if not args.report_only:
        failed = failed or coverage_failed

    if args.json:
        report["ok"] = not failed
        report["report_only"] = args.report_only
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_report(report)
        print()
        if failed:
            print("traceability: FAILED")
        elif coverage_failed:
            print("traceability: coverage problems reported (--report-only, not failing)")
        else:
            print("traceability: OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
