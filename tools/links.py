#!/usr/bin/env python3
"""Every relative link of the kit's documents points at something that exists.

Checked, in every Markdown file git tracks:
* each inline link or image `[text](target)` and each reference definition `[id]: target`
  whose target is not a URL (http, https, mailto): the file or folder, relative to the
  document, must exist; a `#fragment` must name a heading of the target Markdown file (GitHub's
  slug: lower case, punctuation dropped, spaces to hyphens, `-1`, `-2` for repeats) or an
  `<a id="...">` / `<a name="...">` in it; a bare `#fragment` names one in the same file.
  Links inside fenced code blocks and code spans are text, not links, and are skipped.

In the spec (`spec/*.adoc`):
* each `link:TARGET[...]` and `include::TARGET[...]` that is not a URL resolves from the spec's
  folder (an include of `generated/` is left to spec/build.sh, which generates and checks it);
* each code span naming a file of the repository (`cassandra/run.sh`, `reference/.../x.rs`: a
  first segment that is a top-level folder of the repository, no wildcard or placeholder)
  exists, so the spec's pointers into the repository do not go stale when files move.

Usage: python3 tools/links.py [--self-test]
Last line: links: N checked, M broken (exit 1 when M > 0).
"""

import re
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.I)
ADOC_MACRO = re.compile(r"\b(link|include)::?([^\[\s]+)\[")
URL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def slug(heading):
    """GitHub's anchor for a Markdown heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(text, spans=False):
    """(line number, line) outside fenced code blocks, code spans blanked unless `spans`."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line if spans else CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def anchors(path, cache={}):
    """Every fragment a Markdown file answers to."""
    if path not in cache:
        found, seen = set(), {}
        for _, line in prose_lines(path.read_text(encoding="utf-8"), spans=True):
            found.update(HTML_ANCHOR.findall(line))
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else "%s-%d" % (base, n))
        cache[path] = found
    return cache[path]


def check_target(document, target, root):
    """None when `target` (relative to `document`) resolves, else why not."""
    path, _, fragment = target.partition("#")
    path = urllib.parse.unquote(path)
    resolved = (document.parent / path).resolve() if path else document
    try:
        resolved.relative_to(root)
    except ValueError:
        return "leaves the repository"
    if not resolved.exists():
        return "no such file"
    if fragment and resolved.suffix == ".md" and fragment.lower() not in anchors(resolved):
        return "no heading #%s in %s" % (fragment, resolved.relative_to(root))
    return None


def markdown_links(text):
    for number, line in prose_lines(text):
        for m in INLINE.finditer(line):
            yield number, m.group(1)
        m = REFERENCE.match(line)
        if m:
            yield number, m.group(1)


def adoc_links(text, top_folders):
    for number, line in enumerate(text.splitlines(), 1):
        for m in ADOC_MACRO.finditer(line):
            target = m.group(2)
            if m.group(1) == "include" and target.startswith("generated/"):
                continue
            yield number, target, False
        for m in CODE_SPAN.finditer(line):
            span = m.group(2).strip()
            first = span.split("/", 1)[0]
            if (
                "/" in span
                and first in top_folders
                and re.fullmatch(r"[\w./-]+", span)
                and "*" not in span
                and "..." not in span
            ):
                yield number, span, True


def check(root, files):
    """(checked, broken lines) over `files` (paths relative to `root`)."""
    top_folders = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")}
    checked, broken = 0, []
    for name in files:
        document = root / name
        text = document.read_text(encoding="utf-8")
        if name.endswith(".md"):
            links = ((n, t, False) for n, t in markdown_links(text))
        else:
            links = adoc_links(text, top_folders)
        for number, target, from_root in links:
            if URL.match(target) or target.startswith("//"):
                continue
            checked += 1
            base = root / "_" if from_root else document
            why = check_target(base, target.rstrip("/"), root)
            if why:
                broken.append("%s:%d: %s: %s" % (name, number, target, why))
    return checked, broken


def tracked(root):
    out = subprocess.run(
        ["git", "ls-files", "*.md", "spec/*.adoc"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return [f for f in out if (root / f).is_file()]


def self_test():
    """A broken link of each kind is caught; the good ones pass."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "docs").mkdir()
        (root / "spec").mkdir()
        (root / "docs/a.md").write_text(
            "# Title\n## The `cqlframe` command, again\n## Title\n<a id=\"here\"></a>\n"
            "[ok](b.md#second-part) [ok](#the-cqlframe-command-again) [ok](#title-1) [ok](#here)\n"
            "[ok](../docs/) [ok](https://example.org/x) `[not a link](nowhere.md)`\n"
            "```\n[not a link](nowhere.md)\n```\n"
            "[bad](missing.md) [bad](b.md#no-such) [bad](#nothing) [bad](../../outside.md)\n"
            "[ref]: gone.md\n",
            encoding="utf-8",
        )
        (root / "docs/b.md").write_text("# B\n## Second part\n", encoding="utf-8")
        (root / "spec/s.adoc").write_text(
            "`docs/a.md` `docs/b.md` `docs/*.md` `cqlframe check` include::generated/x.adoc[]\n"
            "`docs/moved.md` link:../docs/gone.md[gone]\n",
            encoding="utf-8",
        )
        checked, broken = check(root, ["docs/a.md", "docs/b.md", "spec/s.adoc"])
        want = [
            "docs/a.md:10: missing.md",
            "docs/a.md:10: b.md#no-such",
            "docs/a.md:10: #nothing",
            "docs/a.md:10: ../../outside.md",
            "docs/a.md:11: gone.md",
            "spec/s.adoc:2: ../docs/gone.md",
            "spec/s.adoc:2: docs/moved.md",
        ]
        got = [b.rsplit(":", 1)[0] for b in broken]
        if sorted(got) != sorted(want) or checked != 14:
            sys.exit("links self-test failed: %d checked, broken %s" % (checked, broken))
    print("links self-test: every broken link caught, every good one passed")


def main():
    if "--self-test" in sys.argv[1:]:
        self_test()
        return
    checked, broken = check(ROOT, tracked(ROOT))
    for line in broken:
        print(line)
    print("links: %d checked, %d broken" % (checked, len(broken)))
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
