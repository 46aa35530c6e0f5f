#!/usr/bin/env python3
"""No import circles between the modules of a crate: builds each crate's module graph and fails
on a cycle, printing it with the lines that close it.

    python3 tools/module_graph.py              the crates of ACYCLIC_CRATES
    python3 tools/module_graph.py DIR...       the crates at DIR (each holding src/)

An edge A -> B is a path in A's file that names B: `use crate::b::X`, `use super::X`, a
`crate::b::f()` call, a `crate::b::x` in a string (serde's `with = "crate::format::..."`), each
resolved to the longest module path it begins with. Comments, doc links included, are not edges:
a doc link to a module is no dependency. The crate root (lib.rs, main.rs) is only ever a target:
it declares and re-exports the modules through relative paths, which are not read, so what it
defines for its modules (the CLI's `Failure`) is a leaf to them. A file's inline modules (its
tests) belong to the file; their `super::` is resolved from where they sit.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The crates held free of import circles. A crate joins the list once it has none; there is no
# allowance for particular cycles.
ACYCLIC_CRATES = ["reference/cqlframe", "reference/checksum", "reference/harness", "reference/cli"]

PATH_START = re.compile(r"\b(crate|(?:super::)*super|self)::")
IDENT = re.compile(r"r#\w+|[A-Za-z_]\w*")
INLINE_MOD = re.compile(r"\bmod\s+(\w+)\s*\{")


def strip_comments(text):
    """`text` with comments blanked (newlines kept, so line numbers hold) and strings kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text[i] == "'" and re.match(r"'(\\.|[^\\'])'", text[i : i + 4]):
            # A char literal: '{' or '"' must not open anything.
            j = text.index("'", i + 1 if text[i + 1] != "\\" else i + 3)
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def use_tree(text, i):
    """The paths of the use tree (or plain path) at `text[i:]`: `a::b::{c, d::e}` gives
    [[a, b, c], [a, b, d, e]]."""
    prefix = []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if text.startswith("{", i):
            paths, depth, start = [], 0, i + 1
            j = i
            while j < len(text):
                c = text[j]
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif c == "," and depth == 1:
                    paths += [prefix + p for p in use_tree(text[start:j], 0)]
                    start = j + 1
                j += 1
            paths += [prefix + p for p in use_tree(text[start:j], 0)]
            return paths
        m = IDENT.match(text, i)
        if not m:
            return [prefix]
        prefix.append(m.group(0))
        i = m.end()
        if not text.startswith("::", i):
            return [prefix]
        i += 2


def module_of(src, file):
    """The module path of `file` under `src`: lib.rs is [], a/mod.rs and a.rs are [a]."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] == "mod" or parts == ["lib"] or parts == ["main"]:
        parts = parts[:-1]
    return tuple(parts)


def edges(crate_dir):
    """{(from, to): [(file, line), ...]} between the modules of the crate at `crate_dir`."""
    src = crate_dir / "src"
    files = sorted(src.rglob("*.rs"))
    modules = {module_of(src, f) for f in files}
    found = {}
    for file in files:
        here = module_of(src, file)
        text = strip_comments(file.read_text())
        # Inline modules, by the brace depth at which each opens.
        opens = {m.end() - 1: m.group(1) for m in INLINE_MOD.finditer(text)}
        inline, depth, marks = [], 0, {}
        for i, c in enumerate(text):
            if c == "{":
                depth += 1
                if i in opens:
                    inline.append((opens[i], depth))
            elif c == "}":
                if inline and inline[-1][1] == depth:
                    inline.pop()
                depth -= 1
            elif c == ":" and text.startswith("::", i):
                marks[i] = [name for name, _ in inline]
        for m in PATH_START.finditer(text):
            head = m.group(1)
            if head == "self":
                continue
            if head == "crate":
                base = ()
            else:
                scope = here + tuple(marks.get(m.end() - 2, []))
                base = scope[: len(scope) - head.count("super")]
            line = text.count("\n", 0, m.start()) + 1
            for path in use_tree(text, m.end()):
                full = base + tuple(path)
                target = next(
                    (full[:k] for k in range(len(full), -1, -1) if full[:k] in modules), ()
                )
                # The file's own inline modules and the root are no edge.
                if target[: len(here)] == here or target == ():
                    continue
                found.setdefault((here, target), []).append((file, line))
    return found


def cycles(found):
    """The strongly connected components of more than one module, each as a cycle through it
    (a list of modules, the first repeated at the end)."""
    graph = {}
    for a, b in found:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on_stack, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(set(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    result = []
    for scc in sccs:
        # A shortest way back to the start, by breadth-first search inside the component.
        start = min(scc)
        previous, queue = {start: None}, [start]
        while queue and start not in [w for v in queue for w in graph[v]]:
            nxt = []
            for v in queue:
                for w in sorted(graph[v] & scc):
                    if w not in previous:
                        previous[w] = v
                        nxt.append(w)
            queue = nxt
        last = next(v for v in queue if start in graph[v])
        path = [start]
        while last is not None:
            path.insert(1, last)
            last = previous[last]
        result.append((sorted(scc), path[:1] + path[2:] + [start]))
    return result


def name(module):
    return "::".join(module) or "crate"


def check(crate_dir):
    """Prints the cycles of the crate at `crate_dir`; returns how many there are."""
    found = edges(crate_dir)
    found_cycles = cycles(found)
    label = crate_dir.relative_to(ROOT) if ROOT in crate_dir.parents else crate_dir
    for scc, path in found_cycles:
        print(f"{label}: import circle among {', '.join(name(m) for m in scc)}:")
        for a, b in zip(path, path[1:]):
            file, line = found[(a, b)][0]
            print(f"  {name(a)} -> {name(b)}   ({file.relative_to(crate_dir)}:{line})")
    return len(found_cycles)


def main(argv):
    crates = [Path(a).resolve() for a in argv] or [ROOT / c for c in ACYCLIC_CRATES]
    failed = sum(check(c) for c in crates)
    if failed:
        print(f"module_graph: {failed} import circle(s)")
        return 1
    print(f"module_graph: no import circle in {len(crates)} crate(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
