#!/usr/bin/env bash
# Framing benchmarks, ours against the drivers, in one run, judged against the speed targets of
# report.py:
#
#   reference/cqlframe/benches/run.sh [--rounds N]  # set up, measure everything N times (default 3,
#                                                   # ~7 min each), print the table
#   reference/cqlframe/benches/run.sh --report      # reprint the table of the last run
#   reference/cqlframe/benches/run.sh --smoke       # every implementation briefly, two rounds (~3 min),
#                                                   # into build/bench-smoke; fails if any round lacks a
#                                                   # cell of the table (test.sh runs this)
#
# Frame encode and decode (header CRC24, payload checksum, LZ4, envelope extraction) of
# 64 / 2037 / 16373 / 131071-byte payloads, uncompressed and LZ4, CRC32 and CRC32C, for:
#   ours                 criterion, reference/cqlframe/benches/framing.rs
#   cassandra-protocol   the Rust crate (=4.0.1), same criterion run
#   java                 the Java driver's SegmentCodec (native-protocol 1.5.2, driver 4.19.3), JMH
#   python               cassandra-driver 3.30.1 SegmentCodec + Connection, timeit
#   go                   gocql v2.1.2 segment functions, testing.Benchmark
# plus the baselines the targets are stated against (raw CRC32C, lz4_flex alone, memcpy with
# the 4 KiB aliasing placement) and the peak RSS of decoding a 1 GiB stream in 64 KiB reads.
# Every implementation reads the same input files (gen_data.py -> build/bench/data/).
# A round measures every implementation once, in turn; the table gives each time as the median
# of the rounds and each ratio as the median of the ratios within a round, with the lowest and
# highest: on a VM whose speed drifts from minute to minute, one round can move a ratio by 20%.
# Output: build/bench/results.md (the table) and build/bench/results.json; each round's files
# (criterion's reports, java.json, python.json, go.json) under build/bench/round-N.
#
# It installs what it needs from a fresh machine: /usr/bin/time (Debian `time`), the Python
# peer's venv (peers/python/setup.sh), Maven artifacts into .cache/m2, Go modules, crates.
# Environment: CARGO_TARGET_DIR (default <repo>/target), M2_REPO (default <repo>/.cache/m2).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cd "$root"
mode="${1:-}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
m2="${M2_REPO:-$root/.cache/m2}"
# Full measurement, or a smoke run that only proves every implementation still produces its cells.
out="$root/build/bench"
crit_args=()
jmh_args=(-f 1 -wi 4 -w 1s -i 5 -r 1s)
py_args=()
go_args=()
rss_bytes=$((1 << 30))
rounds=3
case "$mode" in
    "" | --smoke | --report) ;;
    --rounds) rounds="${2:-}"; mode="" ;;
    *) echo "usage: $0 [--rounds N | --smoke | --report]" >&2; exit 2 ;;
esac
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "--rounds: a positive number, not '$rounds'" >&2; exit 2; }
if [[ "$mode" == "--smoke" ]]; then
    rounds=2
    out="$root/build/bench-smoke"
    crit_args=(--warm-up-time 0.05 --measurement-time 0.1 --sample-size 10)
    jmh_args=(-f 1 -wi 0 -i 1 -r 100ms)
    py_args=(--runs 1 --min-seconds 0.01)
    go_args=(-runs 1 -benchtime 10ms)
    rss_bytes=$((64 << 20))
fi

if [[ "$mode" == "--report" ]]; then
    python3 "$here/report.py" "$out"
    exit 0
fi

step() { printf '\n== %s\n' "$*" >&2; }
started=$(date +%s)
mkdir -p "$out"
uptime > "$out/uptime-start.txt"

step "setup: /usr/bin/time, Python peer venv, Java JMH jar, Go peer"
if [[ ! -x /usr/bin/time ]]; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends time >&2
fi
peers/python/setup.sh
jar=peers/java/bench/target/benchmarks.jar
if [[ ! -f "$jar" || -n "$(find peers/java/bench/pom.xml peers/java/bench/src -newer "$jar" -print -quit)" ]]; then
    mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$m2" -f peers/java/bench/pom.xml package >&2
fi
(cd peers/go && go build -o "$out/go-bench" .)

step "inputs: ${out#"$root"/}/data (cqlframe encode)"
cargo build --release -q -p cqlframe-cli --bin cqlframe
python3 "$here/gen_data.py" "$CARGO_TARGET_DIR/release/cqlframe" "$out/data"

rm -rf "$out"/round-* "$out"/criterion "$out"/{java,python,go}.json  # the last four: where runs before rounds put them
for ((k = 1; k <= rounds; k++)); do
    r="$out/round-$k"
    mkdir -p "$r"
    step "round $k of $rounds: ours and cassandra-protocol: criterion (reference/cqlframe/benches/framing.rs)"
    CRITERION_HOME="$r/criterion" CQLFRAME_BENCH_DATA="$out/data" \
        cargo bench -p cqlframe --bench framing -- --noplot "${crit_args[@]}" >&2

    step "round $k of $rounds: java: JMH (peers/java/bench)"
    java -jar "$jar" -p dataDir="$out/data" "${jmh_args[@]}" -rf json -rff "$r/java.json" >&2

    step "round $k of $rounds: python: timeit (peers/python/bench_segment.py)"
    .cache/venv/python-peer/bin/python peers/python/bench_segment.py --data "$out/data" --out "$r/python.json" "${py_args[@]}"

    step "round $k of $rounds: go: testing.Benchmark (peers/go)"
    "$out/go-bench" -data "$out/data" -out "$r/go.json" "${go_args[@]}"
done

step "memory: peak RSS decoding a $((rss_bytes >> 20)) MiB stream in 64 KiB reads (reference/cqlframe/benches/stream_rss.rs)"
exe=$(cargo bench -p cqlframe --bench stream_rss --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "stream_rss" and m.get("executable"):
        print(m["executable"])')
: > "$out/memory.jsonl"
for args in "--format lz4 --checksum crc32c" "--format uncompressed --checksum crc32c" \
            "--format lz4 --checksum crc32c --generate-only"; do
    # shellcheck disable=SC2086
    /usr/bin/time -v -o "$out/time.txt" "$exe" $args --bytes "$rss_bytes" > "$out/rss-run.json"
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/time.txt")
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["max_rss_kib"]=int(sys.argv[2]); print(json.dumps(d))' \
        "$out/rss-run.json" "$rss" >> "$out/memory.jsonl"
    tail -1 "$out/memory.jsonl" >&2
done

uptime > "$out/uptime-end.txt"
echo $(( $(date +%s) - started )) > "$out/elapsed-seconds.txt"
step "report"
check=()
[[ "$mode" == "--smoke" ]] && check=(--check)
python3 "$here/report.py" "$out" "${check[@]}"
