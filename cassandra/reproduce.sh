#!/usr/bin/env bash
# Reproduces a server bug of conformance/bugs.toml on one Apache Cassandra release: starts
# that release (as cassandra/run.sh does, one node), runs `cqlframe probe` with the cases of
# conformance/probe.toml that cite the bug, and commits the run's report as
# conformance/results/bugs/BUG/RELEASE/report.json (tools/bugs.py import), where the bug
# corpus page counts it.
#
#   CASSANDRA_VERSION=4.0-beta4 cassandra/reproduce.sh CASSANDRA-16424
#
# CASSANDRA_VERSION names the release (cassandra/versions.sh: a series picks its pinned
# release); CQL_PORT and STORAGE_PORT as for run.sh. The probe runs without the series'
# known deviations: a reproduction shows what the release does, and a FAIL there is its
# purpose, so only an error of the probe itself (exit status other than 0 and 1) fails this
# script. Output: build/bugs/BUG/RELEASE/ (the node's files, the probe's full report).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ $# -ne 1 ]; then
    echo "usage: CASSANDRA_VERSION=RELEASE cassandra/reproduce.sh BUG" >&2
    exit 2
fi
bug=$1
cases=$(python3 - "$bug" <<'PY'
import sys, tomllib
cases = tomllib.load(open("conformance/probe.toml", "rb"))["case"]
print(",".join(c["id"] for c in cases if sys.argv[1] in c.get("bugs", [])))
PY
)
if [ -z "$cases" ]; then
    echo "cassandra/reproduce.sh: no case of conformance/probe.toml cites $bug" >&2
    exit 2
fi
port="${CQL_PORT:-9042}"
storage="${STORAGE_PORT:-17000}"
bin="${CQLFRAME_BIN:-$root/target/release/cqlframe}"
# shellcheck source=cassandra/node.sh
source cassandra/node.sh
trap node_cleanup EXIT
trap 'exit 130' INT TERM
version_select "${CASSANDRA_VERSION:-5.0}"
out="$root/build/bugs/$bug/$cassandra_release"
node_prepare
if [ -z "${CQLFRAME_BIN:-}" ]; then
    cargo build --release -q -p cqlframe-cli
fi
node_start "$out/node" "$port" "$storage"
status=0
"$bin" probe "127.0.0.1:$port" --cases "$cases" --name "Apache Cassandra $cassandra_release" \
    --report-dir "$out/probe" || status=$?
node_stop
if [ "$status" -gt 1 ]; then
    echo "cassandra/reproduce.sh: the probe failed to run (exit $status)" >&2
    exit "$status"
fi
python3 tools/bugs.py import "$bug" "$out/probe/report.json"
