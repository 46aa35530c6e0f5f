#!/usr/bin/env bash
# The latency `cqlframe proxy` adds and the throughput it keeps (a benchmark, not a test; figures
# in cassandra/bench/README.md): the node of cassandra/run.sh (Apache Cassandra 5.0, no
# extension) on 127.0.0.1, the Python and Java drivers of the end-to-end benchmark reading a
# 64-byte blob closed-loop at 1 and 8 requests in flight, uncompressed and LZ4, straight to the
# node, through socat, and through the proxy as it starts, with --spin 0 and with --spin 300,
# side by side in each client run; then a 128 KiB blob at 8 in flight, with the proxy's CPU time
# (cassandra/bench/e2e/proxy.py).
#
#   cassandra/bench/e2e/proxy.sh [--repeats N] [--seconds S]   defaults 3, 2 s (about 11 minutes)
#   cassandra/bench/e2e/proxy.sh --smoke   every cell once, 0.1 s windows (figures mean nothing)
#   cassandra/bench/e2e/proxy.sh --guest-halt-poll NS   in a KVM guest, as root: idle CPUs poll NS
#       nanoseconds before they halt, every time, for the run (cpuidle-haltpoll's
#       guest_halt_poll_ns, guest_halt_poll_allow_shrink N; restored after): a halted virtual CPU
#       costs an exit to the hypervisor to wake, and every hop a request makes wakes one
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
        --guest-halt-poll) halt_poll="${2:?$1 takes a value}"; shift 2 ;;
        *) echo "usage: cassandra/bench/e2e/proxy.sh [--smoke] [--repeats N] [--seconds S] [--guest-halt-poll NS]" >&2; exit 2 ;;
    esac
done
command -v socat >/dev/null || { echo "proxy.sh: socat not found (Debian: apt-get install socat)" >&2; exit 2; }
port="${CQL_PORT:-9042}"
storage="${STORAGE_PORT:-17000}"
out="$root/build/cassandra-proxy-bench"
knobs=/sys/module/haltpoll/parameters
saved_halt_poll=()
if [ -n "${halt_poll:-}" ]; then
    [ -w "$knobs/guest_halt_poll_ns" ] || { echo "proxy.sh: --guest-halt-poll needs root in a KVM guest with cpuidle-haltpoll ($knobs)" >&2; exit 2; }
    saved_halt_poll=("$(cat "$knobs/guest_halt_poll_ns")" "$(cat "$knobs/guest_halt_poll_allow_shrink")")
fi
set_halt_poll() { echo "$1" > "$knobs/guest_halt_poll_ns"; echo "$2" > "$knobs/guest_halt_poll_allow_shrink"; }
restore_halt_poll() { if [ ${#saved_halt_poll[@]} -gt 0 ]; then set_halt_poll "${saved_halt_poll[@]}"; fi; }
# shellcheck source=cassandra/node.sh
source cassandra/node.sh
trap 'node_cleanup; restore_halt_poll' EXIT
trap 'exit 130' INT TERM

node_prepare
conformance/drivers/python/setup.sh </dev/null >/dev/null
conformance/drivers/java/setup.sh </dev/null
if [ -z "${CQLFRAME_BIN:-}" ]; then
    cargo build --release -q -p cqlframe-cli
fi
node_start "$out/node" "$port" "$storage"
if [ ${#saved_halt_poll[@]} -gt 0 ]; then set_halt_poll "$halt_poll" N; fi
python3 cassandra/bench/e2e/proxy.py "$port" "$node_pid" "$out" "${args[@]}"
node_stop
