#!/usr/bin/env python3
"""Validates vectors/manifest.json against vectors/manifest.schema.json (JSON Schema 2020-12).

Checks, each counted once in the last line:

* the schema is itself a valid 2020-12 schema;
* the manifest's top level (everything but the cases' contents) is valid;
* every case is valid on its own (one check per case, so a failure names the case);
* negative self-checks: deliberately broken copies of real cases (a field missing, a wrong
  type, an unknown field, a blob with both hex and sha256, an unknown error kind, ...) must each
  be rejected, so a schema that accepts everything fails here.

Runs in the venv .cache/venv/vectors (jsonschema pinned in vectors/requirements.txt): when the
current Python lacks jsonschema, the script runs vectors/setup.sh (idempotent, quiet when the
venv is ready) and re-executes itself with the venv's Python.

Usage: python3 vectors/validate_manifest.py [--manifest FILE] [--verbose]
Last line: schema: N passed, M failed
"""

import argparse
import copy
import json
import sys
from pathlib import Path

from checklib import Tally, run_with_jsonschema

run_with_jsonschema(__file__)
import jsonschema  # noqa: E402

HERE = Path(__file__).resolve().parent


def first_case(manifest, predicate):
    return next(c for c in manifest["cases"] if predicate(c))


def broken_copies(manifest):
    """(label, broken case) pairs: each must fail validation."""
    frames_ok = first_case(manifest, lambda c: c["kind"] == "frames" and c["valid"] and c["expected"]["frames"])
    frames_err = first_case(manifest, lambda c: c["kind"] == "frames" and c["expected"]["error"])
    session = first_case(manifest, lambda c: c["kind"] == "session" and c["expected"]["client_receives"]["switch"])
    out = []

    def broken(label, case, edit):
        c = copy.deepcopy(case)
        edit(c)
        out.append(("%s (%s)" % (label, case["id"]), c))

    broken("missing field 'valid'", frames_ok, lambda c: c.pop("valid"))
    broken("missing field 'server_responds_after'", session, lambda c: c.pop("server_responds_after"))
    broken("wrong type: frame offset as a string", frames_ok,
           lambda c: c["expected"]["frames"][0].__setitem__("offset", "0"))
    broken("wrong type: valid as a string", frames_ok, lambda c: c.__setitem__("valid", "true"))
    broken("wrong type: switch offset negative", session,
           lambda c: c["expected"]["client_receives"]["switch"].__setitem__("offset", -1))
    broken("unknown field in a case", frames_ok, lambda c: c.__setitem__("comment", "x"))
    broken("unknown field in a frame", frames_ok, lambda c: c["expected"]["frames"][0].__setitem__("crc", 1))
    broken("frames field in a session case", session, lambda c: c.__setitem__("format", "lz4"))
    broken("unknown kind", frames_ok, lambda c: c.__setitem__("kind", "frame"))
    broken("unknown format", frames_ok, lambda c: c.__setitem__("format", "snappy"))
    broken("blob with hex and sha256", frames_ok,
           lambda c: c["input"].__setitem__("sha256", "0" * 64))
    broken("short blob given as sha256", frames_ok,
           lambda c: c["input"].update({"sha256": "0" * 64}) or c["input"].pop("hex"))
    broken("uppercase hex", frames_ok, lambda c: c["expected"]["frames"][0].__setitem__("header_crc24", "ABCDEF"))
    broken("input blob without file", frames_ok, lambda c: c["input"].pop("file"))
    broken("unknown error kind", frames_err, lambda c: c["expected"]["error"].__setitem__("kind", "oops"))
    broken("error detail of another kind", frames_err,
           lambda c: c["expected"]["error"].__setitem__("detail", {"bogus": 1}))
    broken("bad rule ID", frames_err, lambda c: c["expected"]["error"].__setitem__("rule", "RECV7"))
    broken("session envelope without framed", session,
           lambda c: c["expected"]["server_receives"]["envelopes"][0].pop("framed"))
    broken("session side missing switch", session, lambda c: c["expected"]["server_receives"].pop("switch"))
    broken("session without server_receives_alternatives", session,
           lambda c: c["expected"].pop("server_receives_alternatives"))
    broken("session without judged", session, lambda c: c["expected"].pop("judged"))
    broken("judged finding at an unknown level", session,
           lambda c: c["expected"]["judged"].append({"direction": "server-to-client", "rule": "NEG-2",
                                                     "level": "MAY", "offset": 0}))
    broken("session without charged", session, lambda c: c["expected"].pop("charged"))
    broken("charged finding without its sender's rule", session,
           lambda c: c["expected"]["charged"].append({"direction": "client-to-server", "rule": "RECV-1",
                                                      "offset": 0}))
    broken("session without unjudged", session, lambda c: c["expected"].pop("unjudged"))
    broken("checksum note without its rule", session,
           lambda c: c["expected"]["unjudged"].append({"what": "checksum", "direction": "client-to-server",
                                                       "offset": 0}))
    broken("server without protocol_versions", session, lambda c: c["server_options"].pop("protocol_versions"))
    broken("protocol version not as SUPPORTED writes it", session,
           lambda c: c["server_options"].__setitem__("protocol_versions", ["v5"]))
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.json")
    parser.add_argument("--schema", type=Path, default=HERE / "manifest.schema.json")
    parser.add_argument("--verbose", action="store_true", help="print passing checks too")
    args = parser.parse_args(argv)

    schema = json.loads(args.schema.read_text())
    manifest = json.loads(args.manifest.read_text())
    tally = Tally(args.verbose, max_details=5)
    report = tally.report

    def errors_of(validator, instance):
        return ["%s: %s" % ("/".join(map(str, e.absolute_path)) or "(top)", e.message[:300])
                for e in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))]

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        report(True, "schema is a valid JSON Schema 2020-12")
    except jsonschema.SchemaError as e:
        report(False, "schema is a valid JSON Schema 2020-12", [e.message])
        return tally.summary("schema")
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    # A validator for one case: the same schema, rooted at $defs/case.
    case_validator = jsonschema.Draft202012Validator(
        {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/case"},
        format_checker=jsonschema.FormatChecker())

    # The top level alone (errors inside a case are reported per case below).
    top_errors = [e for e in errors_of(validator, manifest) if not e.startswith("cases/")]
    report(not top_errors, "manifest top level", top_errors)

    ids = set()
    for i, case in enumerate(manifest.get("cases", [])):
        label = "case %s" % case.get("id", "#%d" % i)
        problems = errors_of(case_validator, case)
        if case.get("id") in ids:
            problems.append("id repeats an earlier case")
        ids.add(case.get("id"))
        report(not problems, label, problems)

    for label, case in broken_copies(manifest):
        rejected = bool(errors_of(case_validator, case))
        whole = copy.deepcopy(manifest)
        whole["cases"][0] = case
        rejected_in_manifest = not validator.is_valid(whole)
        report(rejected and rejected_in_manifest, "broken copy rejected: %s" % label,
               [] if rejected else ["the schema accepts it"])

    return tally.summary("schema")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
