#!/usr/bin/env bash
# What CRC32C buys end to end (a benchmark, not a test; figures in cassandra/README.md): the
# extended node (cassandra/run.sh --extension crc32c's) on 127.0.0.1, the Python and Java drivers
# reading 16 KiB and 128 KiB blobs at 1, 4, 16 and 64 requests in flight, each as released
# (CRC32) and through the kit's opt-in asking CRC32 and CRC32C; the node's CPU time per request
# (/proc of its JVM) and the client's p50/p99 latency, repeated to show the noise, beside the
# checksum's own cost on the node (ChecksumBench, cassandra/bench/run.sh --checksum).
#
#   cassandra/bench/e2e/run.sh [--repeats N] [--seconds S] [--compression none|lz4|none,lz4]
#                                 defaults 3, 2 s per window, none (about 10 minutes; with
#                                 none,lz4 about 18);
#                                 on a shared machine run it as root under `nice -n -5`
#   cassandra/bench/e2e/run.sh --smoke   every cell once, 0.2 s windows (figures mean nothing)
#
# Prints and writes the table: build/cassandra-e2e/e2e.md and e2e.json (every measurement).
# CQL_PORT / STORAGE_PORT as for cassandra/run.sh (defaults 9042 / 17000).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$root"
args=()
smoke=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) smoke=(--smoke); args+=(--smoke); shift ;;
        --repeats|--seconds|--compression) args+=("$1" "${2:?$1 takes a value}"); shift 2 ;;
        *) echo "usage: cassandra/bench/e2e/run.sh [--smoke] [--repeats N] [--seconds S] [--compression LIST]" >&2; exit 2 ;;
    esac
done
port="${CQL_PORT:-9042}"
storage="${STORAGE_PORT:-17000}"
out="$root/build/cassandra-e2e"
# shellcheck source=cassandra/node.sh
source cassandra/node.sh
trap node_cleanup EXIT
trap 'exit 130' INT TERM

node_prepare crc32c
conformance/drivers/python/setup.sh </dev/null >/dev/null
conformance/drivers/java/setup.sh </dev/null
mkdir -p "$out"
# The checksum's own cost on the node's JVM, before the node runs.
cassandra/bench/run.sh "${smoke[@]}" --checksum
node_start "$out/node" "$port" "$storage"
python3 cassandra/bench/e2e/e2e.py "$port" "$node_pid" "$out" "${args[@]}"
node_stop
