#!/usr/bin/env bash
# wireshark/bench.sh: throughput of the Lua dissector under tshark.
#
#   wireshark/bench.sh [REPS]      (default 20)
#
# For each setting (uncompressed/crc32, uncompressed/crc32c, lz4/crc32, lz4/crc32c) it builds
# one long connection from a session case: the unframed handshake once, then the framed part of
# both streams repeated REPS times (every repetition completes its sequences, so the stream stays
# valid), written by `cqlframe pcap` with the default MSS. It then times
#
#   base:  tshark -r FILE -T fields -e frame.number -e _ws.col.Info        (no Lua plugin,
#          Wireshark's own CQL dissector disabled: TCP reassembly off for this port)
#   with:  the same with -X lua_script:wireshark/cqlframe.lua
#   noverify: the same with -o cqlframe.verify:FALSE (payload CRC32/CRC32C not computed)
#
# and prints MB/s of framed traffic (bytes on the wire after the switch, both directions) for
# each, the content (decompressed) MB/s, and the ratio with/base. Each timing is the best of 3 runs (user+sys CPU seconds, so a
# busy shared machine does not skew it much).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
reps="${1:-20}"
bin="${CQLFRAME_BIN:-$root/target/release/cqlframe}"
if [ ! -x "$bin" ]; then (cd "$root" && cargo build --release -q -p cqlframe-cli); fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cpu_seconds() {  # best of 3: user+sys of the command
    local best=""
    for _ in 1 2 3; do
        local t
        t=$( { TIMEFORMAT='%U %S'; time "$@" >/dev/null 2>&1; } 2>&1 | tail -1 | awk '{print $1 + $2}')
        if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; then best="$t"; fi
    done
    echo "$best"
}

printf '%-22s %9s %9s %8s %8s %8s %8s %8s %8s %6s\n' setting "framed MB" "content MB" "base s" "with s" "noverify" "MB/s" "MB/s nv" "cont MB/s" ratio
for case in session.v5 session.v5-crc32c session.v5-lz4 session.v5-crc32c-lz4; do
    python3 - "$root" "$case" "$reps" "$tmp" <<'EOF'
import json, sys, pathlib
root, case, reps, tmp = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), pathlib.Path(sys.argv[4])
m = json.loads((root / "vectors/manifest.json").read_text())
c = next(x for x in m["cases"] if x["id"] == case)
cs = (root / "vectors" / c["client_stream"]["file"]).read_bytes()
ss = (root / "vectors" / c["server_stream"]["file"]).read_bytes()
ca, sa = c["client_switch_offset"], c["server_switch_offset"]
(tmp / "c.bin").write_bytes(cs[:ca] + cs[ca:] * reps)
(tmp / "s.bin").write_bytes(ss[:sa] + ss[sa:] * reps)
content = sum(f["content"]["length"] for k in ("client_receives", "server_receives") for f in c["expected"][k]["frames"])
(tmp / "args").write_text(f"{c['server_responds_after']} {sa} {(len(cs) - ca + len(ss) - sa) * reps} {content * reps}\n")
EOF
    read -r responds switch framed content < "$tmp/args"
    "$bin" pcap --client "$tmp/c.bin" --server "$tmp/s.bin" --server-responds-after "$responds" \
        --server-switch "$switch" -o "$tmp/bench.pcap" >/dev/null
    common=(-r "$tmp/bench.pcap" -T fields -e frame.number -e _ws.col.Info)
    base=$(cpu_seconds tshark --disable-protocol cql "${common[@]}")
    with=$(cpu_seconds tshark -X "lua_script:$here/cqlframe.lua" "${common[@]}")
    nover=$(cpu_seconds tshark -X "lua_script:$here/cqlframe.lua" -o cqlframe.verify:FALSE "${common[@]}")
    awk -v n="$case" -v b="$framed" -v c="$content" -v t0="$base" -v t1="$with" -v t2="$nover" 'BEGIN {
        mb = b / 1e6; cmb = c / 1e6
        printf "%-22s %9.2f %9.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %6.1f\n", n, mb, cmb, t0, t1, t2, mb / t1, mb / t2, cmb / t1, t1 / (t0 > 0 ? t0 : 0.01)
    }'
done
echo "(MB/s: framed megabytes (on the wire, after the switch) per CPU second of tshark with the dissector;"
echo " nv: payload verification off; cont: decompressed content per second; ratio: CPU with / CPU base)"
