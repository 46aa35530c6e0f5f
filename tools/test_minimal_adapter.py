#!/usr/bin/env python3
"""The minimal adapter of conformance/README.md ("A complete minimal adapter") works as the page
says: taken from the page as it stands, run with `cqlframe conformance --adapter` on the Python
driver of the bundled adapter's venv, it passes the handshake and corruption cases it can do and
is UNSUPPORTED for an action it does not do; and it keeps the adapter contract (a report that
breaks it would make a case ADAPTER-BROKEN and the run exit 1).

Usage: python3 tools/test_minimal_adapter.py
Environment: CQLFRAME_BIN (default target/release/cqlframe).
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "conformance/README.md"
PYTHON = ROOT / ".cache/venv/conformance-python/bin/python"
EXPECTED = {
    "handshake.uncompressed": "PASS",
    "handshake.lz4": "PASS",
    "handshake.authenticate": "PASS",
    "fault.header-bitflip": "PASS",
    "fault.payload-bitflip": "PASS",
    "send.large-request": "UNSUPPORTED",
}


def adapter_source():
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("### A complete minimal adapter", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    if not match:
        sys.exit("test_minimal_adapter: no python block under 'A complete minimal adapter'")
    return match.group(1)


def main():
    binary = Path(os.environ.get("CQLFRAME_BIN", "target/release/cqlframe"))
    binary = binary if binary.is_absolute() else ROOT / binary
    # The bundled Python adapter's venv has the pinned driver the page asks for.
    subprocess.run([str(ROOT / "conformance/drivers/python/setup.sh")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "adapter.py").write_text(adapter_source(), encoding="utf-8")
        run = tmp / "run"
        run.write_text('#!/bin/sh\nexec "%s" "%s/adapter.py" "$@"\n' % (PYTHON, tmp))
        run.chmod(0o755)
        command = [str(binary), "conformance", "--adapter", "minimal=%s" % run,
                   "--cases", ",".join(EXPECTED), "--report-dir", str(tmp / "report")]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit("test_minimal_adapter: the run exited %d:\n%s"
                     % (done.returncode, done.stdout[-3000:] + done.stderr[-3000:]))
        report = json.loads((tmp / "report/report.json").read_text(encoding="utf-8"))
    got = {r["case"]: r["outcome"] for r in report["results"]}
    wrong = {c: (got.get(c), want) for c, want in EXPECTED.items() if got.get(c) != want}
    for case, (outcome, want) in sorted(wrong.items()):
        print("test_minimal_adapter: %s is %s, expected %s" % (case, outcome, want))
    print("test_minimal_adapter: %d cases as the page says, %d not"
          % (len(EXPECTED) - len(wrong), len(wrong)))
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
