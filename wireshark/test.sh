#!/usr/bin/env bash
# wireshark/test.sh: every test of the Lua dissector. Last line: "wireshark: N passed, M failed".
#
#   wireshark/test.sh                  everything (4-6 minutes on 2 cores)
#   wireshark/test.sh --quick          no 1-byte segmentation, fewer mutated captures
#   wireshark/test.sh --update-golden  rewrite wireshark/tests/golden/ (review the diff)
#
# Needs tshark (Wireshark 4.0+), editcap, lua5.2, lua5.4 (Debian: apt-get install -y tshark
# lua5.2 lua5.4; installed here when missing and running as root) and the cqlframe binary
# ($CQLFRAME_BIN, default target/release/cqlframe, built when missing).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"

args=()
for a in "$@"; do
    case "$a" in
        --quick|--update-golden) args+=("$a") ;;
        *) echo "usage: wireshark/test.sh [--quick] [--update-golden]" >&2; exit 2 ;;
    esac
done

missing=()
for tool in tshark:tshark editcap:tshark lua5.2:lua5.2 luac5.2:lua5.2 lua5.4:lua5.4 luac5.4:lua5.4; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "wireshark/test.sh: missing packages: ${missing[*]}" >&2
        exit 2
    fi
fi
export CQLFRAME_BIN="${CQLFRAME_BIN:-$root/target/release/cqlframe}"
if [ ! -x "$CQLFRAME_BIN" ]; then
    cargo build --release -q -p cqlframe-cli || exit 2
fi

passed=0
failed=0
count() {  # adds the "X: N passed, M failed" line of a sub-test's output
    local line
    line=$(grep -E ': [0-9]+ passed, [0-9]+ failed$' <<<"$1" | tail -1)
    if [ -z "$line" ]; then
        failed=$((failed + 1))
        echo "FAIL (no summary line)"
        return
    fi
    passed=$((passed + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")))
    failed=$((failed + $(sed -E 's/.*, ([0-9]+) failed$/\1/' <<<"$line")))
}

echo "== syntax: luac5.2 -p and luac5.4 -p on every Lua file (one file per call: luac 5.4.4 aborts on several)"
n_ok=0
n_bad=0
while IFS= read -r f; do
    for luac in luac5.2 luac5.4; do
        if out=$("$luac" -p "$f" 2>&1); then n_ok=$((n_ok + 1)); else n_bad=$((n_bad + 1)); echo "FAIL $luac $f: $out"; fi
    done
done < <(find wireshark -name '*.lua' | sort)
echo "syntax: $n_ok passed, $n_bad failed"
passed=$((passed + n_ok))
failed=$((failed + n_bad))

for lua in lua5.2 lua5.4; do
    echo "== checksum and LZ4 modules against the vectors ($lua)"
    out=$("$lua" wireshark/tests/test_modules.lua "$root" 2>&1)
    echo "$out" | grep -E '^FAIL|passed' | head -40
    count "$out"
    echo "== framing state machine against every case and chunking ($lua)"
    out=$("$lua" wireshark/tests/test_framing.lua "$root" 2>&1)
    echo "$out" | grep -E '^FAIL|passed' | head -40
    count "$out"
    echo "== TCP reassembly and joins of the capture module ($lua)"
    out=$("$lua" wireshark/tests/test_capture.lua "$root" 2>&1)
    echo "$out" | grep -E '^FAIL|passed' | head -40
    count "$out"
done

echo "== tshark: golden outputs, envelopes, segmentation, negatives, mid-connection, mutations"
out=$(python3 wireshark/tests/check_tshark.py "${args[@]}" 2>&1)
echo "$out" | grep -E '^FAIL|passed|Traceback|Error' | head -60
count "$out"

echo "== the same rules as cqlframe check (the rules engine) on every vector session and regression capture"
out=$(python3 wireshark/tests/check_judge.py vectors/pcap wireshark/tests/regressions 2>&1)
echo "$out" | grep -E '^FAIL|^  |passed|Traceback|Error' | head -60
count "$out"

echo "== the same, every vector session written 7 bytes per segment (the dissector reassembles)"
segmented=build/wireshark/mss7
rm -rf "$segmented" && mkdir -p "$segmented"
for id in $(python3 -c 'import json; print(*(c["id"] for c in json.load(open("vectors/manifest.json"))["cases"] if c["kind"] == "session"))'); do
    "$CQLFRAME_BIN" pcap --case "$id" --mss 7 -o "$segmented/$id.pcap" || failed=$((failed + 1))
done
out=$(python3 wireshark/tests/check_judge.py "$segmented" 2>&1)
echo "$out" | grep -E '^FAIL|^  |passed|Traceback|Error' | head -60
count "$out"

echo "== the same on drawn connections: every rule broken and nearly broken, under every TCP artefact (seed 1; more: wireshark/tests/differential.py --seed N --rounds N --count N)"
out=$(python3 wireshark/tests/differential.py --rounds 1 --count 100 --seed 1 2>&1)
echo "$out" | grep -E '^FAIL|^  |^per |passed|Traceback|Error' | head -120
count "$out"

echo "wireshark: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
