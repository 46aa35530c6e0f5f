#!/usr/bin/env python3
"""One judge: `cqlframe check` on each per-case capture of a conformance run reports, for the
driver's bytes, exactly what the conformance server recorded for the same connection (the
rules engine's tally: rule, sender rule, level, count and first offset).

Both ask the same rules engine; this test holds that the capture (written by the server, read
back through pcap parsing and TCP reassembly) carries the same bytes in the same order, and
that no tool re-judges on its own.

    python3 conformance/test_one_judge.py [REPORT_DIR]     (default build/conformance)

Environment: CQLFRAME_BIN (default target/release/cqlframe). Python 3.11 standard library.
Last line: one-judge: N passed, M failed (one check per connection of each captured case).
"""

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "vectors"))
from checklib import ROOT, Tally, cqlframe_binary  # noqa: E402

DRIVER_TO_SERVER = "client-to-server"


def key(entry):
    """What both tools must agree on for one rule broken in the driver's bytes."""
    return (entry["rule"], entry.get("sender_rule"), entry["level"], entry["count"], entry["offset"])


def main():
    report_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "conformance"
    report = json.loads((report_dir / "report.json").read_text())
    binary = cqlframe_binary("test_one_judge.py")
    tally = Tally()
    cases = 0
    for result in report["results"]:
        if not result.get("pcap"):
            continue
        cases += 1
        pcap = report_dir / result["pcap"]
        run = subprocess.run([str(binary), "check", "--json", str(pcap)], capture_output=True, text=True)
        label = "%s %s" % (result["driver"], result["case"])
        if run.returncode not in (0, 1):
            tally.report(False, label, ["check exited %d: %s" % (run.returncode, run.stderr.strip())])
            continue
        checked = {}
        for conn in json.loads(run.stdout)["connections"]:
            port = int(conn["client"].rsplit(":", 1)[1])
            checked[port] = sorted(key(r) for r in conn["rules"] if r["direction"] == DRIVER_TO_SERVER)
        for conn in result["server"]["connections"]:
            recorded = sorted(key(r) for r in conn["findings"])
            seen = checked.get(conn["client_port"])
            where = "%s connection %d (port %d)" % (label, conn["id"], conn["client_port"])
            if seen is None:
                tally.report(False, where, ["not in the capture %s" % pcap])
                continue
            tally.report(seen == recorded, where, ["server recorded: %s" % recorded, "check reports:   %s" % seen])
    if cases == 0:
        print("one-judge: no captured case in %s (run cqlframe conformance first)" % report_dir)
        return 1
    return tally.summary("one-judge")


if __name__ == "__main__":
    sys.exit(main())
