#!/usr/bin/env bash
# Runs the checksum benchmarks (benches/checksums.rs) in rounds and prints Markdown tables of the
# criterion medians: GB/s for payloads (ratio ours/peer), ns per call for CRC-24 headers, and the
# targets against the fastest crates (TARGETS in benches/report.py).
#
#   reference/checksum/bench.sh [--rounds N] [ARGS]   # run N rounds (default 3), then print
#   reference/checksum/bench.sh --report              # print the last run's results only
#   reference/checksum/bench.sh --smoke               # two brief rounds: fails if a cell is missing
#
# Each round runs every benchmark once, ours and its peers seconds apart; a ratio is taken within
# a round and the median of the rounds reported with its range, so that a drift of the machine's
# speed between minutes shows instead of deciding a target. ARGS go to criterion (a filter, say).
# Also prints the CPU, the paths in use and the ceilings of its `crc32` unit and carry-less
# multiplier (benches/ceilings/mod.rs). CARGO_TARGET_DIR defaults to
# <workspace>/target/checksum-bench.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
workspace="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$workspace/target/checksum-bench}"
out="$CARGO_TARGET_DIR/criterion"
rounds=3
check=()
crit_args=()
case "${1:-}" in
    --report) exec python3 "$here/benches/report.py" "$out" ;;
    --smoke)
        rounds=2
        check=(--check)
        out="$CARGO_TARGET_DIR/criterion-smoke"
        crit_args=(--warm-up-time 0.01 --measurement-time 0.02 --sample-size 10)
        shift ;;
    --rounds)
        rounds="${2:?--rounds needs a number}"
        shift 2 ;;
esac
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "--rounds: a positive number, not '$rounds'" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out"
uptime > "$out/uptime-start.txt"
for ((k = 1; k <= rounds; k++)); do
    printf '\n== round %d of %d\n' "$k" "$rounds" >&2
    (cd "$workspace" && CRITERION_HOME="$out/round-$k" \
        cargo bench -p cqlframe-checksum --bench checksums -- --noplot "${crit_args[@]}" "$@" >&2)
done
uptime > "$out/uptime-end.txt"
python3 "$here/benches/report.py" "$out" "${check[@]}"
