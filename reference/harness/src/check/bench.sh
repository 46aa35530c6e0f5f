#!/usr/bin/env bash
# Throughput of `cqlframe check` on a multi-GB capture, beside tshark on the same file.
#
#   reference/harness/src/check/bench.sh [MEGABYTES]     (default 2048)
#
# The capture is generated (hidden `cqlframe check --generate`): the session captures of
# vectors/pcap/ repeated as new connections with shifted ports, sequence numbers and times,
# into build/check-bench.pcap, deleted at the end. Three timings, each the best of two runs
# (the file is in the page cache after the first):
#   cqlframe check            every connection reassembled and checked;
#   tshark -r FILE -q         Debian tshark reading the file (with nothing to print or filter,
#                             tshark skips dissection: a floor, not a competitor);
#   tshark -r FILE -q -Y cql  tshark dissecting every packet (TCP reassembly, its CQL dissector).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)"
cd "$root"
mb="${1:-2048}"
bin="${CQLFRAME_BIN:-$root/target/release/cqlframe}"
[ -n "${CQLFRAME_BIN:-}" ] || cargo build --release -q -p cqlframe-cli
file="$root/build/check-bench.pcap"
mkdir -p build
trap 'rm -f "$file"' EXIT
sources=$(ls vectors/pcap/session.v5*.pcap vectors/pcap/session.v6-beta.pcap | grep -v 'refused\|error' | paste -sd,)
"$bin" check --generate "$file" --from "$sources" --megabytes "$mb"
size=$(stat -c %s "$file")
best() {
    local best=""
    for _ in 1 2; do
        local s e t
        s=$(date +%s.%N)
        "$@" >/dev/null 2>&1 || true
        e=$(date +%s.%N)
        t=$(echo "$e - $s" | bc -l)
        if [ -z "$best" ] || (( $(echo "$t < $best" | bc -l) )); then best=$t; fi
    done
    echo "$best"
}
check=$(best "$bin" check --quiet --no-progress "$file")
read_only=$(best tshark -r "$file" -q)
dissect=$(best tshark -r "$file" -q -Y cql)
rate() { echo "scale=0; $size / 1000000 / $1" | bc -l; }
printf '%-28s %8.2f s %6s MB/s\n' "cqlframe check" "$check" "$(rate "$check")"
printf '%-28s %8.2f s %6s MB/s  (ratio check/tshark: %.2fx)\n' "tshark -r FILE -q" "$read_only" "$(rate "$read_only")" "$(echo "$read_only / $check" | bc -l)"
printf '%-28s %8.2f s %6s MB/s  (ratio check/tshark: %.1fx)\n' "tshark -r FILE -q -Y cql" "$dissect" "$(rate "$dissect")" "$(echo "$dissect / $check" | bc -l)"
