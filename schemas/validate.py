#!/usr/bin/env python3
"""Validates every JSON document the cqlframe command writes against its schema in schemas/
(JSON Schema 2020-12), on documents the command produces here for real.

Checks, each counted once in the last line:

* every schema (and the two it refers to, vectors/manifest.schema.json and
  conformance/adapter-report.schema.json) is a valid 2020-12 schema, and schemas/CHANGELOG.md
  lists every document at the format version its schema states;
* `cqlframe check --json` and every line of `--json-lines` (and of `--json-lines --follow`,
  with its `found` lines) on every capture of vectors/pcap/,
  on a capture cut short (capture_error), and on the per-case captures of each REPORT_DIR;
* `cqlframe decode --json` on every frames case of vectors/manifest.json (valid and failing);
* `cqlframe conformance server` probed by `cqlframe probe`: the server's printed observations
  and the probe's report.json;
* report.json of `cqlframe conformance` with the reference adapter on every case, and the
  report.json of each REPORT_DIR (test.sh passes the quick run of every bundled driver);
* negative checks: copies of those real documents with a field renamed (`rules` to `listed`, as
  happened once to `check --json`) or removed, a value outside its enum, another format version:
  each must be rejected, so a schema that accepts everything fails here. The outcomes the runner
  is about to write (NOT-EXERCISED, ADAPTER-BROKEN) must be accepted.

Runs in the venv .cache/venv/vectors (jsonschema pinned in vectors/requirements.txt), as
vectors/validate_manifest.py does.

Usage: python3 schemas/validate.py [--verbose] [REPORT_DIR ...]
Environment: CQLFRAME_BIN (default target/release/cqlframe).
Last line: schemas: N passed, M failed
"""

import argparse
import copy
import json
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "vectors"))
from checklib import ROOT, Tally, cqlframe_binary, run_with_jsonschema  # noqa: E402

run_with_jsonschema(__file__)
import jsonschema  # noqa: E402
from referencing import Registry, Resource  # noqa: E402

HERE = Path(__file__).resolve().parent
REFERRED = [ROOT / "vectors/manifest.schema.json", ROOT / "conformance/adapter-report.schema.json"]
# The document schemas: each states a `format` version and has a CHANGELOG.md section.
DOCUMENTS = ["catalogue", "check", "check-line", "decode", "observations", "proxy-report", "report"]
# The conformance server case `cqlframe probe` runs against.
PROBED_CASE = "handshake.uncompressed"


class Schemas:
    """Every schema of the kit, registered by its $id, and a validator per document."""

    def __init__(self, report):
        contents = {}
        for path in sorted(HERE.glob("*.schema.json")) + REFERRED:
            schema = json.loads(path.read_text())
            label = "%s is a valid JSON Schema 2020-12" % path.relative_to(ROOT)
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
                report(True, label)
            except jsonschema.SchemaError as e:
                report(False, label, [e.message])
            contents[path] = schema
        registry = Registry().with_resources(
            (schema["$id"], Resource.from_contents(schema)) for schema in contents.values())
        self.schemas = {name: contents[HERE / ("%s.schema.json" % name)] for name in DOCUMENTS}
        self.validators = {name: jsonschema.Draft202012Validator(schema, registry=registry)
                           for name, schema in self.schemas.items()}

    def errors(self, name, document):
        return ["%s: %s" % ("/".join(map(str, e.absolute_path)) or "(top)", e.message[:300])
                for e in self.validators[name].iter_errors(document)]


class Documents:
    """Validates real documents and keeps them, by schema, for the negative checks."""

    def __init__(self, schemas, report):
        self.schemas = schemas
        self.report = report
        self.kept = {name: [] for name in DOCUMENTS}

    def validate(self, name, label, text):
        try:
            document = json.loads(text)
        except ValueError as e:
            self.report(False, "%s: %s" % (name, label), ["not JSON: %s" % e])
            return
        errors = self.schemas.errors(name, document)
        self.report(not errors, "%s: %s" % (name, label), errors)
        self.kept[name].append(document)


def changelog_lists_every_version(schemas, report):
    """schemas/CHANGELOG.md has a section per document schema with an entry for its format."""
    text = (HERE / "CHANGELOG.md").read_text()
    sections = dict(re.findall(r"^## `?(\S+?\.schema\.json)`?\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    for name, schema in schemas.schemas.items():
        file = "%s.schema.json" % name
        version = schema["properties"]["format"]["const"]
        entry = re.search(r"^- format %d\b" % version, sections.get(file, ""), re.M)
        report(entry is not None, "CHANGELOG.md lists %s at format %d" % (file, version),
               ["no `- format %d` entry under `## %s`" % (version, file)])


def cqlframe(binary, *args, codes=(0, 1)):
    """(stdout, None) of `cqlframe ARGS` run from the repository root, or (None, why) when it
    exits with a status outside `codes`."""
    proc = subprocess.run([str(binary), *map(str, args)], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode not in codes:
        return None, "exit %d: %s" % (proc.returncode, proc.stderr.strip()[-500:])
    return proc.stdout, None


def check_captures(binary, docs, captures):
    """check --json and check --json-lines on each (label, capture)."""
    for label, pcap in captures:
        for name, flags in [("check", ["--json"]), ("check-line", ["--json-lines"]),
                            ("check-line", ["--json-lines", "--follow"])]:
            out, problem = cqlframe(binary, "check", *flags, "--no-progress", pcap, codes=(0, 1, 3))
            if problem:
                docs.report(False, "%s: %s" % (name, label), [problem])
                continue
            if name == "check":
                docs.validate(name, label, out)
                continue
            lines = out.splitlines()
            last = json.loads(lines[-1]) if lines else {}
            docs.report(last.get("type") == "totals", "check-line: %s ends with its totals line" % label,
                        lines[-1:])
            for i, line in enumerate(lines):
                docs.validate(name, "%s line %d" % (label, i + 1), line)


def decode_vectors(binary, docs):
    """decode --json on every frames case of the manifest, with its settings."""
    manifest = json.loads((ROOT / "vectors/manifest.json").read_text())
    for case in manifest["cases"]:
        if case["kind"] != "frames":
            continue
        out, problem = cqlframe(binary, "decode", "--json", "--format", case["format"],
                                "--checksum", case["checksum"],
                                "--max-envelope-body", case["max_envelope_body"],
                                ROOT / "vectors" / case["input"]["file"])
        if problem:
            docs.report(False, "decode: %s" % case["id"], [problem])
        else:
            docs.validate("decode", case["id"], out)


def probe_the_conformance_server(binary, docs, workdir):
    """`cqlframe probe` against `cqlframe conformance server` through `cqlframe proxy`: the probe's
    report.json, the observations the server prints when stopped (every connection the probe
    made), and the proxy's report.json."""
    server = subprocess.Popen([str(binary), "conformance", "server", "--case", PROBED_CASE],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proxy_dir = workdir / "proxy"
    proxy = None
    try:
        first = server.stdout.readline()
        port = first.strip().rsplit(":", 1)[-1]
        proxy = subprocess.Popen([str(binary), "proxy", "--listen", "127.0.0.1:0", "--upstream",
                                  "127.0.0.1:%s" % port, "--report-dir", proxy_dir, "--quiet"],
                                 cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        listening = proxy.stderr.readline()
        proxy_port = listening.split(",")[0].rsplit(":", 1)[-1]
        report_dir = workdir / "probe"
        _, problem = cqlframe(binary, "probe", "127.0.0.1:%s" % proxy_port, "--report-dir",
                              report_dir, "--fault-wait", "1")
        if problem:
            docs.report(False, "report: probe of the conformance server", [problem])
        else:
            docs.validate("report", "cqlframe probe of the conformance server",
                          (report_dir / "report.json").read_text())
    finally:
        if proxy is not None:
            proxy.send_signal(signal.SIGTERM)
            _, proxy_err = proxy.communicate(timeout=60)
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=60)
    # The probe's faults break rules: exit 1, and a report all the same.
    if proxy is None or proxy.returncode not in (0, 1) or not (proxy_dir / "report.json").exists():
        docs.report(False, "proxy-report: cqlframe proxy in front of the conformance server",
                    ["exit %s: %s" % (proxy and proxy.returncode, proxy and proxy_err.strip()[-500:])])
    else:
        docs.validate("proxy-report", "cqlframe proxy between the probe and the conformance server",
                      (proxy_dir / "report.json").read_text())
    # The document is what follows the text lines (some of them already read above).
    start = re.search(r"^\{", out, re.M)
    if server.returncode != 0 or start is None:
        docs.report(False, "observations: conformance server --case %s" % PROBED_CASE,
                    ["exit %s, no JSON document: %s" % (server.returncode, err.strip()[-500:])])
        return
    docs.validate("observations", "conformance server --case %s, probed" % PROBED_CASE,
                  out[start.start():])


def conformance_run(binary, docs, workdir):
    """The suite with the reference adapter on every case; its report.json and its captures."""
    report_dir = workdir / "conformance"
    _, problem = cqlframe(binary, "conformance", "--drivers", "reference", "--report-dir", report_dir)
    if problem:
        docs.report(False, "report: cqlframe conformance --drivers reference", [problem])
        return None
    return report_dir


def report_dir_documents(binary, docs, report_dir):
    """A run's report.json and check on each of its per-case captures."""
    docs.validate("report", str(report_dir / "report.json"), (report_dir / "report.json").read_text())
    captures = sorted((report_dir / "pcap").glob("*/*.pcap"))
    docs.report(bool(captures), "%s has per-case captures" % report_dir)
    check_captures(binary, docs, [(str(p.relative_to(report_dir)), p) for p in captures])


def first(documents, predicate, what):
    found = next((d for d in documents if predicate(d)), None)
    if found is None:
        raise LookupError("no real document %s to break" % what)
    return found


def rename(obj, old, new):
    obj[new] = obj.pop(old)


def broken_copies(kept):
    """(schema, label, document) triples, copies of real documents broken one way each: every
    one must be rejected."""
    check = first(kept["check"], lambda d: any(c["rules"] for c in d["connections"]), "with a finding")
    conn = next(i for i, c in enumerate(check["connections"]) if c["rules"])
    lines = kept["check-line"]
    finding = first(lines, lambda d: d["type"] == "finding", "of type finding")
    connection = first(lines, lambda d: d["type"] == "connection", "of type connection")
    totals = first(lines, lambda d: d["type"] == "totals", "of type totals")
    decode = first(kept["decode"], lambda d: d["frames"], "with frames")
    decode_error = first(kept["decode"], lambda d: d["error"], "with an error")
    observations = first(kept["observations"], lambda d: d["connections"], "with connections")
    report = first(kept["report"], lambda d: d["results"], "with results")
    found = first(kept["observations"], lambda d: any(c["findings"] for c in d["connections"]),
                  "with a finding")
    judged = next(i for i, c in enumerate(found["connections"]) if c["findings"])
    out = []

    def broken(name, label, document, edit):
        d = copy.deepcopy(document)
        edit(d)
        out.append((name, label, d))

    broken("check", "connection's rules renamed listed", check,
           lambda d: rename(d["connections"][conn], "rules", "listed"))
    broken("check", "a finding's rule renamed rule_id", check,
           lambda d: rename(d["connections"][conn]["rules"][0], "rule", "rule_id"))
    broken("check", "totals without violations", check, lambda d: d["totals"].pop("violations"))
    broken("check", "a direction's frames renamed frame_count", check,
           lambda d: rename(d["connections"][conn]["client_to_server"], "frames", "frame_count"))
    broken("check", "no format", check, lambda d: d.pop("format"))
    broken("check", "format 2", check, lambda d: d.__setitem__("format", 2))
    broken("check", "a finding at level MAY", check,
           lambda d: d["connections"][conn]["rules"][0].__setitem__("level", "MAY"))
    broken("check-line", "finding line's offset renamed at", finding, lambda d: rename(d, "offset", "at"))
    broken("check-line", "finding line without type", finding, lambda d: d.pop("type"))
    broken("check-line", "connection line with the --json rules", connection,
           lambda d: d.__setitem__("rules", []))
    broken("check-line", "connection line's notes renamed remarks", connection,
           lambda d: rename(d, "notes", "remarks"))
    broken("check-line", "totals line without capture", totals, lambda d: d.pop("capture"))
    broken("check-line", "line of an unknown type", totals, lambda d: d.__setitem__("type", "summary"))
    broken("check-line", "format 2", finding, lambda d: d.__setitem__("format", 2))
    broken("decode", "a frame's payload renamed payload_hex", decode,
           lambda d: rename(d["frames"][0], "payload", "payload_hex"))
    broken("decode", "payload in uppercase hex", decode,
           lambda d: d["frames"][0].__setitem__("payload", "AB"))
    broken("decode", "error without offset", decode_error, lambda d: d["error"].pop("offset"))
    broken("decode", "unknown error kind", decode_error, lambda d: d["error"].__setitem__("kind", "oops"))
    broken("decode", "error detail field renamed", decode_error,
           lambda d: d["error"].__setitem__("detail", {"x" + k: v for k, v in d["error"]["detail"].items()}
                                            or {"extra": 1}))
    broken("decode", "error without its rule", decode_error, lambda d: d["error"].pop("rule"))
    broken("decode", "no format", decode, lambda d: d.pop("format"))
    broken("observations", "a connection's log renamed wire_log", observations,
           lambda d: rename(d["connections"][0], "log", "wire_log"))
    broken("observations", "no format", observations, lambda d: d.pop("format"))
    broken("observations", "a finding's count renamed times", found,
           lambda d: rename(d["connections"][judged]["findings"][0], "count", "times"))
    broken("report", "a result's server with a format of its own", report,
           lambda d: d["results"][0]["server"].__setitem__("format", 1))
    broken("observations", "log line in an unknown direction", observations,
           lambda d: d["connections"][0]["log"][0].__setitem__("dir", "both"))
    broken("report", "a result's outcome renamed verdict", report,
           lambda d: rename(d["results"][0], "outcome", "verdict"))
    broken("report", "outcome PASSED", report, lambda d: d["results"][0].__setitem__("outcome", "PASSED"))
    broken("report", "summary's driver renamed name", report,
           lambda d: rename(d["summary"][0], "driver", "name"))
    broken("report", "driver without self_check", report, lambda d: d["drivers"][0].pop("self_check"))
    broken("report", "self_check as the old exit status", report, lambda d: d["drivers"][0].update(self_check=127))
    broken("report", "a case's rules renamed rule_ids", report,
           lambda d: rename(d["cases"][0], "rules", "rule_ids"))
    broken("report", "a case's bugs renamed known_bugs", report,
           lambda d: d["cases"][0].update(known_bugs=d["cases"][0].pop("bugs", ["X-1"])))
    broken("report", "a case's bugs as one string", report,
           lambda d: d["cases"][0].__setitem__("bugs", "PYTHON-1337"))
    broken("report", "format 2", report, lambda d: d.__setitem__("format", 2))
    proxy = first(kept["proxy-report"], lambda d: any(c["rules"] for c in d["connections"]),
                  "with a finding")
    broken("proxy-report", "verdict PASSED", proxy, lambda d: d.__setitem__("verdict", "PASSED"))
    broken("proxy-report", "a connection's rules renamed listed", proxy,
           lambda d: rename(next(c for c in d["connections"] if c["rules"]), "rules", "listed"))
    broken("proxy-report", "limits without idle_seconds", proxy, lambda d: d["limits"].pop("idle_seconds"))
    broken("proxy-report", "format 2", proxy, lambda d: d.__setitem__("format", 2))
    return out


def accepted_copies(kept):
    """(schema, label, document): copies of real documents changed in ways the schema must
    accept (values the runner is about to write)."""
    report = first(kept["report"], lambda d: d["results"], "with results")
    out = []
    for outcome in ["NOT-EXERCISED", "ADAPTER-BROKEN"]:
        d = copy.deepcopy(report)
        d["results"][0]["outcome"] = outcome
        d["summary"][0][outcome] = 1
        out.append(("report", "outcome %s" % outcome, d))
    d = copy.deepcopy(report)
    for case in d["cases"]:
        case.pop("bugs", None)
    out.append(("report", "cases without bugs (written before the field)", d))
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report_dirs", nargs="*", type=Path, metavar="REPORT_DIR",
                        help="a conformance run's --report-dir: its report.json and captures")
    parser.add_argument("--verbose", action="store_true", help="print passing checks too")
    args = parser.parse_args(argv)
    tally = Tally(args.verbose, max_details=5)
    binary = cqlframe_binary("validate.py")

    schemas = Schemas(tally.report)
    changelog_lists_every_version(schemas, tally.report)
    docs = Documents(schemas, tally.report)

    vectors = [(p.name, p) for p in sorted((ROOT / "vectors/pcap").glob("*.pcap"))]
    tally.report(bool(vectors), "vectors/pcap has captures")
    with tempfile.TemporaryDirectory(prefix="cqlframe-schemas-") as tmp:
        workdir = Path(tmp)
        cut = workdir / "cut-short.pcap"
        cut.write_bytes((ROOT / "vectors/pcap/session.v5-lz4.pcap").read_bytes()[:200])
        check_captures(binary, docs, vectors + [("a capture cut short", cut)])
        decode_vectors(binary, docs)
        for flag in [[], ["--quick"]]:
            out, problem = cqlframe(binary, "conformance", "list", "--json", *flag)
            if problem:
                docs.report(False, "catalogue: conformance list --json %s" % " ".join(flag), [problem])
            else:
                docs.validate("catalogue", "conformance list --json %s" % " ".join(flag), out)
        probe_the_conformance_server(binary, docs, workdir)
        own = conformance_run(binary, docs, workdir)
        for report_dir in ([own] if own else []) + args.report_dirs:
            report_dir_documents(binary, docs, report_dir)

    errors_of = schemas.errors
    try:
        for name, label, document in broken_copies(docs.kept):
            tally.report(bool(errors_of(name, document)), "%s: broken copy rejected: %s" % (name, label),
                         ["the schema accepts it"])
        for name, label, document in accepted_copies(docs.kept):
            tally.report(not errors_of(name, document), "%s: accepted: %s" % (name, label),
                         errors_of(name, document))
    except LookupError as e:
        tally.report(False, "negative checks", [str(e)])
    return tally.summary("schemas")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
