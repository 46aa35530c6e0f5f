#!/usr/bin/env bash
# The latency `cqlframe proxy` adds and the throughput it keeps (a benchmark, not a test; figures
# in cassandra/bench/README.md): the node of cassandra/run.sh (Apache Cassandra 5.0, no
# extension) on 127.0.0.1, the Python and Java drivers of the end-to-end benchmark reading a
# 64-byte blob closed-loop at 1 and 8 requests in flight, uncompressed and LZ4, straight to the
# node, through socat, and through the proxy without and with --spin, side by side in each client
# run; then a 128 KiB blob at 8 in flight, with the proxy's CPU time (cassandra/bench/e2e/proxy.py).
#
#   cassandra/bench/e2e/proxy.sh [--repeats N] [--seconds S]   defaults 3, 2 s (about 9 minutes)
#   cassandra/bench/e2e/proxy.sh --smoke   every cell once, 0.1 s windows (figures mean nothing)
#
# Prints and writes the table: build/cassandra-proxy-bench/proxy.md and proxy.json.
# CQL_PORT / STORAGE_PORT as for cassandra/run.sh (defaults 9042 / 17000), CQLFRAME_BIN.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$root"
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) args+=(--smoke); shift ;;
        --repeats|--seconds) args+=("$1" "${2:?$1 takes a value}"); shift 2 ;;
        *) echo "usage: cassandra/bench/e2e/proxy.sh [--smoke] [--repeats N] [--seconds S]" >&2; exit 2 ;;
    esac
done
command -v socat >/dev/null || { echo "proxy.sh: socat not found (Debian: apt-get install socat)" >&2; exit 2; }
port="${CQL_PORT:-9042}"
storage="${STORAGE_PORT:-17000}"
out="$root/build/cassandra-proxy-bench"
# shellcheck source=cassandra/node.sh
source cassandra/node.sh
trap node_cleanup EXIT
trap 'exit 130' INT TERM

node_prepare
conformance/drivers/python/setup.sh </dev/null >/dev/null
conformance/drivers/java/setup.sh </dev/null
if [ -z "${CQLFRAME_BIN:-}" ]; then
    cargo build --release -q -p cqlframe-cli
fi
node_start "$out/node" "$port" "$storage"
python3 cassandra/bench/e2e/proxy.py "$port" "$node_pid" "$out" "${args[@]}"
node_stop
