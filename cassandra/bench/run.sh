#!/usr/bin/env bash
# JMH of the node's own client frame codecs, CRC32 against CRC32C (figures in cassandra/README.md):
# Cassandra 5.0's FrameEncoderCrc/FrameDecoderCrc and the LZ4 pair beside
# the kit's extension codecs with each checksum, at 2037, 16373 and 131071 payload bytes; with
# --checksum, ChecksumBench instead: the extension's CRC32 and CRC32C alone over 16 and 128 KiB
# (the ns per byte that cassandra/bench/e2e/run.sh needs).
#
#   cassandra/bench/run.sh [--checksum]          the full run (FramingBench about 10 minutes,
#                                                ChecksumBench 1; on a shared machine
#                                                `nice -n -10 cassandra/bench/run.sh`)
#   cassandra/bench/run.sh --smoke [--checksum]  one short iteration per cell, no fork (the
#                                                figures mean nothing; fails if a cell is missing)
#
# Prints the JMH results, then a table with the CPU and the load; JSON in
# build/cassandra-bench/framing.json (checksum.json).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
jmh=()
bench=FramingBench
json=framing.json
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) jmh=(-wi 0 -i 1 -r 100ms -f 0) ;;
        --checksum) bench=ChecksumBench json=checksum.json ;;
        *) echo "usage: cassandra/bench/run.sh [--smoke] [--checksum]" >&2; exit 2 ;;
    esac
    shift
done
m2="$root/.cache/m2"
out="$root/build/cassandra-bench"
mkdir -p "$out"

# The codecs measured are 5.0's (the extension's are built against it).
CASSANDRA_VERSION=5.0 cassandra/fetch.sh
# shellcheck source=cassandra/versions.sh
source cassandra/versions.sh
version_select 5.0
mvn -B -q -Dmaven.repo.local="$m2" -f cassandra/crc32c-extension/pom.xml install
mvn -B -q -Dmaven.repo.local="$m2" -f cassandra/bench/pom.xml package dependency:build-classpath \
    -Dmdep.includeScope=runtime -Dmdep.outputFile="$root/.cache/cassandra/bench/jmh.classpath"

# The node's JPMS exports and opens and its -D properties (not its heap and GC settings).
read -r -a jvm <<<"$(grep -hE '^(--add-|-D)' cassandra/jvm.options cassandra/jvm17.options | tr '\n' ' ')"
classpath="$root/.cache/cassandra/bench/classes"
classpath+=":$root/.cache/cassandra/crc32c-extension/crc32c-extension.jar"
classpath+=":$cassandra_lib/*"
classpath+=":$(cat "$root/.cache/cassandra/bench/jmh.classpath")"
java "${jvm[@]}" -cp "$classpath" org.openjdk.jmh.Main "$bench" \
    "${jmh[@]}" -rf json -rff "$out/$json"

python3 cassandra/bench/table.py "$out/$json"
