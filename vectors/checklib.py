"""What the check scripts of vectors/ (and those of conformance/ and schemas/ that import it)
share: the cqlframe binary, the venv with jsonschema, a pass/fail tally with the `NAME: N passed,
M failed` last line, and the first differing byte of two byte strings. Python 3.11 standard
library only.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JSONSCHEMA_PYTHON = ROOT / ".cache/venv/vectors/bin/python"


def run_with_jsonschema(script):
    """Returns when jsonschema imports; otherwise builds the venv .cache/venv/vectors (jsonschema
    pinned in vectors/requirements.txt; vectors/setup.sh is idempotent and quiet when it is
    ready) and re-executes `script` (a path) with its Python and the same arguments."""
    try:
        import jsonschema  # noqa: F401
        return
    except ImportError:
        pass
    if os.environ.get("CQLFRAME_VECTORS_VENV") == "1":
        sys.exit("%s: jsonschema missing even in %s" % (Path(script).name, JSONSCHEMA_PYTHON))
    subprocess.run([str(ROOT / "vectors/setup.sh")], check=True)
    os.environ["CQLFRAME_VECTORS_VENV"] = "1"
    script = str(Path(script).resolve())
    os.execv(str(JSONSCHEMA_PYTHON), [str(JSONSCHEMA_PYTHON), script] + sys.argv[1:])


def cqlframe_binary(script):
    """CQLFRAME_BIN (relative paths from the repository root; default target/release/cqlframe),
    built with cargo when missing; exits with a message naming `script` when it still is not
    there."""
    binary = Path(os.environ.get("CQLFRAME_BIN", "target/release/cqlframe"))
    if not binary.is_absolute():
        binary = ROOT / binary
    if not binary.exists():
        print("building %s (cargo build --release -p cqlframe-cli)" % binary, flush=True)
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "cqlframe-cli"], cwd=ROOT, check=True)
    if not binary.exists():
        sys.exit("%s: %s not found after the build; set CQLFRAME_BIN" % (script, binary))
    return binary


def first_difference(a, b):
    """The index of the first byte at which `a` and `b` differ; the shorter length when one
    is a prefix of the other."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


class Tally:
    """Counts checks: report() prints each failure with its details (at most `max_details`),
    and each pass too when `verbose`; summary() prints the last line."""

    def __init__(self, verbose=False, max_details=None):
        self.verbose = verbose
        self.max_details = max_details
        self.passed = self.failed = 0

    def report(self, ok, label, details=()):
        if ok:
            self.passed += 1
            if self.verbose:
                print("ok   %s" % label)
        else:
            self.failed += 1
            print("FAIL %s" % label)
            for d in list(details)[:self.max_details]:
                print("     %s" % d)

    def summary(self, name):
        """Prints `name: N passed, M failed`; returns the exit status (0 when none failed)."""
        print("%s: %d passed, %d failed" % (name, self.passed, self.failed))
        return 0 if self.failed == 0 else 1
