#!/usr/bin/env python3
"""Tests of module_graph.py on small crates written for each case."""

import contextlib
import io
import tempfile
import unittest
from pathlib import Path

import module_graph


def crate(files):
    """A crate directory holding `files` ({path under src/: text})."""
    root = Path(tempfile.mkdtemp())
    for path, text in files.items():
        (root / "src" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "src" / path).write_text(text)
    return root


def circles(files):
    """The cycles module_graph finds, and what it prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        n = module_graph.check(crate(files))
    return n, out.getvalue()


class ModuleGraph(unittest.TestCase):
    def test_grouped_use_closes_a_circle(self):
        n, out = circles(
            {
                "lib.rs": "mod a; mod b; mod c;",
                "a.rs": "use crate::{c::X, b::{self, Y}};",
                "b.rs": "pub fn f() { crate::a::g() }",
                "c.rs": "",
            }
        )
        self.assertEqual(n, 1)
        self.assertIn("a -> b   (src/a.rs:1)", out)
        self.assertIn("b -> a   (src/b.rs:1)", out)

    def test_super_from_a_nested_file_and_a_serde_string(self):
        n, out = circles(
            {
                "lib.rs": "mod d; mod e;",
                "d/mod.rs": 'mod f;\n#[serde(with = "crate::e::by_name")]\nstruct S;',
                "d/f.rs": "use super::S;",
                "e.rs": "fn g() { crate::d::f::h() }",
            }
        )
        self.assertEqual(n, 1)
        self.assertIn("d -> e   (src/d/mod.rs:2)", out)
        self.assertIn("e -> d::f", out)
        self.assertIn("d::f -> d", out)

    def test_comments_tests_and_the_root_are_no_edges(self):
        n, _ = circles(
            {
                "lib.rs": "pub use a::X; mod a; mod b; pub struct R;",
                "a.rs": "use crate::R;\n/// [`crate::b::Y`]\n// crate::b::f()\n"
                "/* crate::b::f() */ mod tests { use super::*; fn t() { let _ = '{'; } }",
                "b.rs": "use crate::a::X; use crate::R;",
            }
        )
        self.assertEqual(n, 0)


if __name__ == "__main__":
    unittest.main()
