"""What the report tests (test_report.py, test_against.py) share: known timings written into a
copy of a smoke run's criterion files, and checks that are counted and printed, not stopped at."""
import json
import os
import sys


def set_criterion_ns(criterion, op, function, size, ns):
    """Makes criterion's estimate of the cell op/function/size `ns` (the median the reports read)."""
    est = os.path.join(criterion, op, function, str(size), "new", "estimates.json")
    with open(est) as f:
        doc = json.load(f)
    doc["median"]["point_estimate"] = ns
    with open(est, "w") as f:
        json.dump(doc, f)


class Checks:
    """Each check printed as ok or FAIL; `finish` exits 1 if any failed."""

    def __init__(self, name):
        self.name = name
        self.failures = []

    def expect(self, what, ok):
        print("%s: %s" % ("ok" if ok else "FAIL", what))
        if not ok:
            self.failures.append(what)

    def finish(self):
        if self.failures:
            sys.exit("%s: %d failed" % (self.name, len(self.failures)))
        print("%s: all passed" % self.name)
