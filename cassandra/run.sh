#!/usr/bin/env bash
# The live-node test: Apache Cassandra from Maven Central on 127.0.0.1, probed and watched.
#
#   cassandra/run.sh [--extension crc32c | --auth]
#       CASSANDRA_VERSION=5.0|4.1|4.0   the release series (default 5.0; the release of each is
#                                       pinned in cassandra/versions.sh); the extension needs 5.0
#       CQL_PORT=9042 STORAGE_PORT=17000 CQLFRAME_BIN=...   to override
#
# --auth: only the node with PasswordAuthenticator (data under build/cassandra-auth/, or
# -4.0-auth, -4.1-auth) probed with probe.startup-auth, which must PASS: AUTHENTICATE unframed,
# the SASL exchange of the default superuser cassandra/cassandra framed, then a framed QUERY.
# Every other case needs a connection that STARTUP makes READY, so the other steps are left out.
#
# 1. fetches cassandra-all and its runtime dependencies (cassandra/fetch.sh; cached in .cache/)
#    and, for 4.0 and 4.1, Java 11 (cassandra/jdk.sh); with --extension crc32c also builds the
#    kit's CRC32C extension (cassandra/crc32c-extension/);
# 2. starts one node with cassandra/cassandra.yaml (4.0: cassandra-4.0.yaml), a 1 GiB heap and
#    the JPMS flags of its Java (cassandra/jvm.options, jvm11.options or jvm17.options), data and
#    logs under build/cassandra/ (4.0, 4.1: build/cassandra-4.0/, build/cassandra-4.1/;
#    build/cassandra-crc32c/ with the extension, loaded as a Java agent), no JMX;
# 3. runs `cqlframe probe` against it: every case passes or is a known deviation of the series,
#    listed in the files of `deviations` below (report in the output folder's probe/);
# 4. captures the loopback traffic (dumpcap) of a Python-driver workload and gocql's connection
#    (its conformance adapter), each with and without LZ4 (cassandra/workload.py) and runs
#    `cqlframe check` on it: no violation allowed, every connection CRC32 (the drivers do not opt
#    in); then tshark with wireshark/cqlframe.lua on the same capture: no Lua error, and the same
#    rules and notes as check, connection by connection (wireshark/tests/check_judge.py);
# 5. interoperability (cassandra/interop.py): the Python and Java drivers, released and with the
#    kit's CRC32C opt-in, captured; `cqlframe check` and the dissector must show, per session,
#    the row of the spec's negotiation table that this node and that driver make (CRC32 unless
#    both have the extension, then CRC32C), and the dissector the same rules as check;
# 6. (without the extension) `cqlframe proxy` between the drivers and the node
#    (cassandra/proxy_test.py): the Python workload and the Python and Java drivers unchanged
#    through it, no MUST violation, check's verdict on its capture equal to its own; with
#    --fault chop=1 the Python driver's header-split bug as a failed connect and a RECV-4
#    reaction, the Java driver clean; every frame fault of the catalogue on the node's real
#    frames, judged under its rule, the driver's reaction (--expect-fault) as the suite found;
# 7. stops the node. Nothing is left running, whatever happens (trap on exit).
# Prints the time of each step. Exit status non-zero if any step fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
extension=""
auth=""
while [ $# -gt 0 ]; do
    case "$1" in
        --extension)
            [ "${2:-}" = crc32c ] || { echo "cassandra/run.sh: --extension takes crc32c" >&2; exit 2; }
            extension=crc32c
            shift 2
            ;;
        --auth)
            auth=auth
            shift
            ;;
        *)
            echo "usage: [CASSANDRA_VERSION=5.0|4.1|4.0] cassandra/run.sh [--extension crc32c | --auth]" >&2
            exit 2
            ;;
    esac
done
if [ -n "$extension" ] && [ -n "$auth" ]; then
    echo "cassandra/run.sh: --auth probes the node as shipped, without --extension" >&2
    exit 2
fi
port="${CQL_PORT:-9042}"
storage="${STORAGE_PORT:-17000}"
bin="${CQLFRAME_BIN:-$root/target/release/cqlframe}"
# shellcheck source=cassandra/node.sh
source cassandra/node.sh
version_select "${CASSANDRA_VERSION:-5.0}"
series=$cassandra_series
out="$root/build/cassandra"
[ "$series" = 5.0 ] || out+="-$series"
out+="${extension:+-$extension}${auth:+-$auth}"
# The series' known deviations: those of every series, then its own. The extension replaces
# 5.0's LZ4 frame decoder, which four of 5.0's are of.
deviations=(--deviations cassandra/deviations.toml)
case "$series" in
    5.0)
        deviations+=(--deviations cassandra/deviations-4.1-5.0.toml --deviations cassandra/deviations-5.0.toml)
        [ -n "$extension" ] || deviations+=(--deviations cassandra/deviations-lz4-decoder.toml)
        ;;
    4.1) deviations+=(--deviations cassandra/deviations-4.1-5.0.toml --deviations cassandra/deviations-4.x.toml) ;;
    4.0) deviations+=(--deviations cassandra/deviations-4.0.toml --deviations cassandra/deviations-4.x.toml) ;;
esac
name="Apache Cassandra $cassandra_release${extension:+ with the CRC32C extension}"
started=$(date +%s)
last=$started

step() {
    local now
    now=$(date +%s)
    printf '\n== [%4ss, +%ss] %s\n' "$((now - started))" "$((now - last))" "$*"
    last=$now
}

finish() {
    local status=$?
    node_cleanup
    printf 'cassandra/run.sh: %s after %ss\n' "$([ $status -eq 0 ] && echo passed || echo FAILED)" "$(( $(date +%s) - started ))"
    exit $status
}
trap finish EXIT
trap 'exit 130' INT TERM

if [ -n "$auth" ]; then
    step "fetch Apache Cassandra $cassandra_release (Maven Central) and its Java $cassandra_java, cached in .cache/"
    node_prepare
    if [ -z "${CQLFRAME_BIN:-}" ]; then
        cargo build --release -q -p cqlframe-cli
    fi
    step "start Apache Cassandra $cassandra_release on 127.0.0.1:$port with PasswordAuthenticator"
    node_authenticator=PasswordAuthenticator
    node_start "$out" "$port" "$storage"
    step "cqlframe probe 127.0.0.1:$port --cases probe.startup-auth"
    "$bin" probe "127.0.0.1:$port" --cases probe.startup-auth \
        --name "$name with PasswordAuthenticator" --report-dir "$out/probe"
    python3 - "$out/probe/report.json" <<'PY'
import json, sys
outcomes = {r["case"]: r["outcome"] for r in json.load(open(sys.argv[1]))["results"]}
assert outcomes.get("probe.startup-auth") == "PASS", f"--auth: probe.startup-auth {outcomes}"
print("auth: probe.startup-auth PASS")
PY
    step "stop the node"
    exit 0
fi

step "fetch Apache Cassandra $cassandra_release (Maven Central) and its Java $cassandra_java, cached in .cache/"
node_prepare "$extension"
conformance/drivers/python/setup.sh </dev/null >/dev/null
conformance/drivers/java/setup.sh </dev/null
python="$root/.cache/venv/conformance-python/bin/python"
if [ -z "${CQLFRAME_BIN:-}" ]; then
    cargo build --release -q -p cqlframe-cli
fi

step "start Apache Cassandra $cassandra_release on 127.0.0.1:$port${extension:+ with the $extension extension}"
node_start "$out" "$port" "$storage"

step "cqlframe probe 127.0.0.1:$port"
"$bin" probe "127.0.0.1:$port" "${deviations[@]}" --name "$name" --report-dir "$out/probe"
if [ -n "$extension" ]; then
    # The probe lets a case that finds nothing to test be INFORMATIONAL; here the extension
    # must have given it something: every negotiation and CRC32C case passes.
    python3 - "$out/probe/report.json" <<'PY'
import json, sys
outcomes = {r["case"]: r["outcome"] for r in json.load(open(sys.argv[1]))["results"]}
cases = ["probe.options", "probe.frame-checksums", "probe.frame-checksums-lz4", "probe.frame-checksum-unknown",
         "probe.frame-checksum-crc32", "probe.fault-checksum-bit", "probe.fault-checksum-bit-crc32c"]
bad = {c: outcomes.get(c) for c in cases if outcomes.get(c) != "PASS"}
assert not bad, f"CRC32C extension: cases not passing: {bad}"
print(f"extension: {len(cases)} negotiation and CRC32C cases PASS")
PY
fi

step "capture the Python driver workload and gocql's connection on lo (dumpcap), with and without LZ4"
capture_start "$out/workload.pcapng" "$port"
"$python" cassandra/workload.py "$port" none
"$python" cassandra/workload.py "$port" lz4
# gocql through its conformance adapter: connect and read system.local (a third driver's framing).
for compression in none lz4; do
    conformance/drivers/gocql/run --host 127.0.0.1 --port "$port" --case live.gocql \
        --action connect --compression "$compression" --checksum default --protocol default \
        --timeout 10 >"$out/gocql-$compression.json"
done
capture_stop
ls -l "$out/workload.pcapng"

step "cqlframe check on the capture: no violation"
"$bin" check --port "$port" "$out/workload.pcapng"
"$bin" check --port "$port" --json "$out/workload.pcapng" >"$out/check.json"
python3 - "$out/check.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
conns = doc["connections"]
framed = [c for c in conns if c.get("negotiated")]
kinds = {c["negotiated"] for c in framed}
seqs = sum(c["server_to_client"]["sequences"] + c["client_to_server"]["sequences"] for c in framed)
print(f"check: {len(conns)} connections, framed as {sorted(kinds)}, {seqs} sequences")
assert any("lz4" in k for k in kinds) and any("uncompressed" in k for k in kinds), kinds
# The driver does not opt in: CRC32 on any node (the spec's "new server, old client" row).
assert all(k.endswith(" crc32") for k in kinds), kinds
assert seqs > 0, "no sequence in the capture"
PY

if [ -f wireshark/cqlframe.lua ]; then
    step "tshark with wireshark/cqlframe.lua on the capture: no Lua error"
    prefs=()
    [ "$port" = 9042 ] || prefs=(-o "cqlframe.port:$port")
    tshark -X lua_script:wireshark/cqlframe.lua "${prefs[@]}" -r "$out/workload.pcapng" \
        -Y cqlframe -T fields -e frame.number -e _ws.expert.message >"$out/tshark.txt" 2>"$out/tshark.err" || true
    if grep -qi "lua error\|lua_error" "$out/tshark.txt" "$out/tshark.err"; then
        echo "tshark: Lua errors:" >&2
        grep -i "lua error\|lua_error" "$out/tshark.txt" "$out/tshark.err" | head -20 >&2
        exit 1
    fi
    echo "tshark: $(wc -l <"$out/tshark.txt") packets with CQL frames or envelopes, no Lua error"
    step "the dissector names the same rules and notes as cqlframe check on the workload capture"
    CQLFRAME_BIN="$bin" python3 wireshark/tests/check_judge.py --port "$port" "$out/workload.pcapng"
fi

step "interoperability: the Python and Java drivers, released and opted in to CRC32C, captured"
capture_start "$out/interop.pcapng" "$port"
"$python" cassandra/interop.py drive "$port" "${extension:-plain}" "$out/interop-runs.json"
capture_stop

step "interoperability: each session negotiated what the spec's table says (cqlframe check, the Lua dissector)"
CQLFRAME_BIN="$bin" python3 cassandra/interop.py judge "$port" "$out/interop.pcapng" "$out/interop-runs.json"
step "the dissector names the same rules and notes as cqlframe check on the interoperability capture"
CQLFRAME_BIN="$bin" python3 wireshark/tests/check_judge.py --port "$port" "$out/interop.pcapng"

if [ -z "$extension" ]; then
    step "cqlframe proxy between the drivers and the node: clean runs, --fault chop=1, every frame fault"
    CQLFRAME_BIN="$bin" "$python" cassandra/proxy_test.py "$port" "$out/proxy"
fi

step "stop the node"
node_stop
