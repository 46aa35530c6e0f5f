#!/usr/bin/env bash
# Runs the full suite N times in a row (default 10) and checks that every run gives the same
# outcome for every (driver, case): the reproducibility that conformance/README.md ("Read
# boundaries", Measured) reports. Each run's reports go to build/repeat/runK/; the outcome tables
# to build/repeat/tableK.txt; a summary line per run (exit status, seconds, load average) to
# build/repeat/summary.txt. Exits 1 when a table differs from the first.
#
#   conformance/repeat.sh [N] [-- extra cqlframe conformance options]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
runs="${1:-10}"
shift $(( $# > 0 ? 1 : 0 ))
[ "${1:-}" = "--" ] && shift
bin="${CQLFRAME_BIN:-$root/target/release/cqlframe}"
out="$root/build/repeat"
rm -rf "$out"
mkdir -p "$out"
for i in $(seq 1 "$runs"); do
    start=$(date +%s)
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$bin" conformance --report-dir "$out/run$i" "$@" >"$out/run$i.out" 2>"$out/run$i.err"
    status=$?
    python3 - "$out/run$i/report.json" >"$out/table$i.txt" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for r in sorted(report["results"], key=lambda r: (r["driver"], r["case"])):
    print(r["driver"], r["case"], r["outcome"])
PY
    echo "run $i: exit $status, $(( $(date +%s) - start )) s, load $load at the start" | tee -a "$out/summary.txt"
done
differ=0
for i in $(seq 2 "$runs"); do
    if ! diff -q "$out/table1.txt" "$out/table$i.txt" >/dev/null; then
        echo "run $i differs from run 1:"
        diff "$out/table1.txt" "$out/table$i.txt" | grep '^[<>]'
        differ=$((differ + 1))
    fi
done
echo "repeat: $runs runs, $differ differ from the first"
[ "$differ" = 0 ]
