#!/usr/bin/env python3
"""Self-test of spec/traceability.py: a tiny fake spec and fake citations.

Run from anywhere: python3 spec/test_traceability.py
"""

import contextlib
import io
import json
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import traceability as t  # noqa: E402

GOOD_SPEC = textwrap.dedent("""\
    = Fake spec
    :toc:

    [#conv]
    == Conventions

    The key words `MUST` and `MAY` are used only in rules.

    ....
    [[RECV-7]]
    *RECV-7* (MUST) — An example inside a literal block is not a rule.
    ....

    [#recv]
    == Receiving

    [[RECV-1]]
    *RECV-1* (MUST) — A receiver MUST verify the header CRC24 before
    using any field; see <<RECV-2>> and <<conv>>.

    [[RECV-2]]
    *RECV-2* (MUST NOT) — A receiver MUST NOT deliver a frame that failed `CRC-32`.

    [[SEND-4]]
    *SEND-4* (MAY) — A sender MAY split early.

    [#errs]
    === Errors

    [[ERR-3]]
    *ERR-3* (SHOULD) — A report SHOULD name the rule.

    Prose mentions CRC-24 and CRC-32 and <<ERR-3>> freely, in lowercase: a receiver must not worry.
    """)


class Repo:
    """A temporary repository layout with a spec and optional citation sources."""

    def __init__(self, spec_text=GOOD_SPEC):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        (self.root / "spec").mkdir()
        self.spec = self.root / "spec" / "framing_v6.adoc"
        self.spec.write_text(spec_text, encoding="utf-8")

    def write(self, rel, text):
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        return p

    def run(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = t.main(["--root", str(self.root), *args])
        return code, out.getvalue()

    def close(self):
        self.tmp.cleanup()


class ParseTests(unittest.TestCase):
    def parse(self, text):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "s.adoc"
            p.write_text(text, encoding="utf-8")
            return t.parse_spec(p)

    def test_good_spec(self):
        spec = self.parse(GOOD_SPEC)
        self.assertEqual(spec.errors, [])
        self.assertEqual([r.id for r in spec.rules], ["SEND-4", "RECV-1", "RECV-2", "ERR-3"])
        r1 = spec.by_id()["RECV-1"]
        self.assertEqual(r1.level, "MUST")
        self.assertEqual(r1.section_title, "Receiving")
        self.assertEqual(r1.section_id, "recv")
        self.assertIn("before using any field", r1.statement)
        self.assertEqual(spec.by_id()["ERR-3"].section_id, "errs")
        self.assertEqual(spec.by_id()["RECV-2"].level, "MUST NOT")

    def test_duplicate_id(self):
        text = GOOD_SPEC + "\n[[RECV-1]]\n*RECV-1* (MUST) — Again a receiver MUST do it.\n"
        spec = self.parse(text)
        self.assertTrue(any("duplicate rule ID RECV-1" in e for e in spec.errors), spec.errors)

    def test_anchor_without_paragraph(self):
        spec = self.parse(GOOD_SPEC + "\n[[RECV-5]]\n\nA receiver does things.\n")
        self.assertTrue(any("not followed by its rule paragraph" in e for e in spec.errors), spec.errors)

    def test_malformed_rule_line(self):
        spec = self.parse(GOOD_SPEC + "\n[[RECV-5]]\nRECV-5 (MUST) - A receiver MUST x.\n")
        self.assertTrue(any("malformed rule paragraph for RECV-5" in e for e in spec.errors), spec.errors)

    def test_mismatched_id(self):
        spec = self.parse(GOOD_SPEC + "\n[[RECV-5]]\n*RECV-6* (MUST) — A receiver MUST x.\n")
        self.assertTrue(any("names RECV-6 but its anchor is [[RECV-5]]" in e for e in spec.errors), spec.errors)

    def test_bad_level(self):
        spec = self.parse(GOOD_SPEC + "\n[[RECV-5]]\n*RECV-5* (SHALL) — A receiver SHALL x.\n")
        self.assertTrue(any("level 'SHALL' is not one of" in e for e in spec.errors), spec.errors)

    def test_unknown_area(self):
        spec = self.parse(GOOD_SPEC + "\n[[FOO-1]]\n*FOO-1* (MUST) — A receiver MUST x.\n")
        self.assertTrue(any("[[FOO-1]] is not a valid rule ID" in e for e in spec.errors), spec.errors)

    def test_statement_lacks_its_keyword(self):
        spec = self.parse(GOOD_SPEC + "\n[[RECV-5]]\n*RECV-5* (MUST) — A receiver rejects it.\n")
        self.assertTrue(any("does not use the keyword MUST" in e for e in spec.errors), spec.errors)

    def test_statement_uses_another_keyword(self):
        spec = self.parse(GOOD_SPEC + "\n[[RECV-5]]\n*RECV-5* (MUST) — A receiver MUST x and SHOULD y.\n")
        self.assertTrue(any("also uses SHOULD" in e for e in spec.errors), spec.errors)

    def test_must_rule_using_must_not(self):
        spec = self.parse(GOOD_SPEC + "\n[[RECV-5]]\n*RECV-5* (MUST) — A receiver MUST x and MUST NOT y.\n")
        self.assertTrue(any("also uses MUST NOT" in e for e in spec.errors), spec.errors)

    def test_keyword_outside_rule(self):
        spec = self.parse(GOOD_SPEC + "\nA sender MUST do this in prose.\n")
        self.assertTrue(any("keyword 'MUST' outside a rule paragraph" in e for e in spec.errors), spec.errors)

    def test_keyword_in_code_span_or_literal_is_fine(self):
        spec = self.parse(GOOD_SPEC + "\nThe word `SHOULD` is named here.\n\n----\nMUST in a listing\n----\n")
        self.assertEqual(spec.errors, [])

    def test_rule_head_without_anchor(self):
        spec = self.parse(GOOD_SPEC + "\n*RECV-9* (MUST) — A receiver MUST x.\n")
        self.assertTrue(any("has no [[ID]] anchor" in e for e in spec.errors), spec.errors)

    def test_broken_xref(self):
        spec = self.parse(GOOD_SPEC + "\nSee <<RECV-99>>.\n")
        self.assertTrue(any("<<RECV-99>> has no matching anchor" in e for e in spec.errors), spec.errors)

    def test_rule_in_section_without_id(self):
        text = GOOD_SPEC + "\n== No id here\n\n[[RECV-5]]\n*RECV-5* (MUST) — A receiver MUST x.\n"
        spec = self.parse(text)
        self.assertTrue(any("needs an explicit id" in e for e in spec.errors), spec.errors)


class SummaryAndCoverageTests(unittest.TestCase):
    def setUp(self):
        self.repo = Repo()

    def tearDown(self):
        self.repo.close()

    def cite_all_must(self):
        self.repo.write("reference/tests/frames.rs", "// RECV-1\n#[test] fn x() {} // RECV-2, also CRC-32 and CRC-24\n")

    def test_write_then_check_summary(self):
        code, out = self.repo.run("--write-summary")
        self.assertEqual(code, 0, out)
        summary = (self.repo.root / "spec" / "generated" / "rules.adoc").read_text()
        self.assertIn("| <<RECV-1,RECV-1>>", summary)
        self.assertIn("| <<recv,Receiving>>", summary)
        self.cite_all_must()
        code, out = self.repo.run()
        self.assertEqual(code, 0, out)
        self.assertIn("traceability: OK", out)

    def test_missing_summary_fails(self):
        self.cite_all_must()
        code, out = self.repo.run()
        self.assertEqual(code, 1)
        self.assertIn("is missing", out)

    def test_outdated_summary_fails_even_report_only(self):
        self.repo.run("--write-summary")
        self.cite_all_must()
        self.repo.spec.write_text(GOOD_SPEC.replace("split early", "split late"), encoding="utf-8")
        code, out = self.repo.run("--report-only")
        self.assertEqual(code, 1)
        self.assertIn("out of date", out)

    def test_probe_catalogue_counts_and_sections_are_checked(self):
        self.repo.run("--write-summary")
        self.repo.write("reference/tests/a.rs", "// RECV-1 only\n")
        self.repo.write("conformance/probe.toml",
                        '[[case]]\nid = "probe.x"\nsection = "recv"\nrules = ["RECV-2"]\n')
        code, out = self.repo.run()
        self.assertEqual(code, 0, out)
        self.assertIn("probe:1", out)
        self.repo.write("conformance/cases.toml",
                        '[[case]]\nid = "x"\nsection = "nowhere"\nrules = ["RECV-1"]\n')
        code, out = self.repo.run()
        self.assertEqual(code, 1, out)
        self.assertIn("section 'nowhere' is not a section anchor", out)

    def test_untested_must_fails_and_should_is_info(self):
        self.repo.run("--write-summary")
        self.repo.write("reference/tests/a.rs", "// RECV-1 only\n")
        code, out = self.repo.run()
        self.assertEqual(code, 1)
        self.assertIn("FAIL untested MUST/MUST NOT (1): RECV-2", out)
        self.assertIn("info untested SHOULD/MAY (2): SEND-4, ERR-3", out)

    def test_report_only_does_not_fail_on_coverage(self):
        self.repo.run("--write-summary")
        code, out = self.repo.run("--report-only")
        self.assertEqual(code, 0, out)
        self.assertIn("FAIL untested MUST/MUST NOT (2)", out)

    def test_code_citations_are_not_tests(self):
        self.repo.run("--write-summary")
        self.repo.write("reference/src/lib.rs", "// RECV-1 RECV-2\n")
        code, out = self.repo.run()
        self.assertEqual(code, 1)
        self.assertIn("FAIL untested MUST/MUST NOT (2)", out)

    def test_unit_test_modules_in_src_are_tests(self):
        self.repo.run("--write-summary")
        self.repo.write("reference/harness/src/rules/tests.rs", "// RECV-1\n")
        self.repo.write("reference/harness/src/rules/judge.rs", "// RECV-2\n")
        code, out = self.repo.run("--json")
        report = json.loads(out)
        self.assertEqual(code, 1, out)
        self.assertEqual(report["rules"]["RECV-1"]["counts"]["reference-tests"], 1)
        self.assertEqual(report["rules"]["RECV-1"]["counts"]["code"], 0)
        self.assertEqual(report["rules"]["RECV-2"]["counts"]["code"], 1)
        self.assertEqual(report["untested_must"], ["RECV-2"])

    def test_every_area_is_cited(self):
        for area in t.AREAS:
            self.assertTrue(t.CITATION_RE.fullmatch(f"{area}-3"), area)
        self.assertIsNone(t.CITATION_RE.fullmatch("JUDGES-3"))

    def test_unknown_id_in_tests_or_code_fails(self):
        self.repo.run("--write-summary")
        self.cite_all_must()
        self.repo.write("reference/src/err.rs", "Err(\"violates RECV-42\")\n")
        code, out = self.repo.run()
        self.assertEqual(code, 1)
        self.assertIn("FAIL cites RECV-42", out)
        self.assertIn("reference/src/err.rs:1", out)

    def test_algorithm_names_are_not_citations(self):
        self.repo.run("--write-summary")
        self.cite_all_must()
        self.repo.write("kaitai/tests/t.py", "# CRC-32 and CRC-24 and CRC-32C are algorithms\n")
        code, out = self.repo.run()
        self.assertEqual(code, 0, out)

    def test_manifest_rules_arrays(self):
        self.repo.run("--write-summary")
        manifest = {"cases": [
            {"id": "hello", "rules": ["RECV-1", "RECV-2"], "note": "RECV-77 in prose is not read"},
            {"id": "bad", "rules": ["RECV-1", "NOPE"]},
        ]}
        self.repo.write("vectors/manifest.json", json.dumps(manifest))
        code, out = self.repo.run("--json")
        report = json.loads(out)
        self.assertEqual(report["rules"]["RECV-1"]["counts"]["vectors"], 2)
        self.assertEqual(report["rules"]["RECV-2"]["counts"]["vectors"], 1)
        self.assertNotIn("RECV-77", report["unknown_citations"])
        self.assertTrue(any("'NOPE' is not a rule ID" in p for p in report["citation_problems"]))
        self.assertEqual(code, 1)
        self.assertFalse(report["ok"])

    def test_unknown_id_in_manifest_fails(self):
        self.repo.run("--write-summary")
        self.cite_all_must()
        self.repo.write("vectors/manifest.json", json.dumps([{"id": "x", "rules": ["ERR-9"]}]))
        code, out = self.repo.run()
        self.assertEqual(code, 1)
        self.assertIn("FAIL cites ERR-9", out)

    def test_all_test_sources_count(self):
        self.repo.run("--write-summary")
        self.repo.write("reference/checksum/tests/crc.rs", "// RECV-1\n")
        self.repo.write("wireshark/tests/t.lua", "-- RECV-2\n")
        self.repo.write("conformance/cases/x.toml", "rules = ['ERR-3']\n")
        code, out = self.repo.run("--json")
        report = json.loads(out)
        self.assertEqual(code, 0, out)
        self.assertEqual(report["rules"]["RECV-1"]["counts"]["reference-tests"], 1)
        self.assertEqual(report["rules"]["RECV-2"]["counts"]["wireshark-tests"], 1)
        self.assertEqual(report["rules"]["ERR-3"]["counts"]["conformance"], 1)
        self.assertEqual(report["untested_should_may"], ["SEND-4"])

    def test_spec_error_fails_write_summary(self):
        self.repo.spec.write_text(GOOD_SPEC + "\nProse that MUST fail.\n", encoding="utf-8")
        code, out = self.repo.run("--write-summary")
        self.assertEqual(code, 1)
        self.assertIn("outside a rule paragraph", out)


if __name__ == "__main__":
    unittest.main(verbosity=1)
