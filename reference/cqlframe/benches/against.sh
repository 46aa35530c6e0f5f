#!/usr/bin/env bash
# Our framing and checksums in the work tree against an earlier commit, on this machine, in rounds:
# the regression check behind issue 14's "nothing slower than today on AVX2-only CPUs".
#
#   reference/cqlframe/benches/against.sh BASE [--avx2] [--rounds N]
#
# Builds the framing benchmark (framing.rs) of commit BASE, exported with `git archive` into
# target/against/, beside the work tree's, and runs our cells of both on the same inputs
# (gen_data.py): decode and encode of every format, checksum and size, and the raw CRC32 and
# CRC32C of the payloads. A round runs the two builds in turn, the order alternating from round
# to round (default 3 rounds, about 3 minutes each). Each ratio is base time / work-tree time
# within a round (above 1: the work tree is faster); the report gives the median with the
# lowest and highest round's.
#
# --avx2 forces, in the work tree, the checksum paths an AVX2-only CPU chooses (CRC32
# `vpclmul`, CRC32C `vpclmul-fused`) through CQLFRAME_CRC_PATH, one checksum's cells at a time;
# the base runs its own choice. On an AVX-512 machine this measures the code an AVX2-only CPU
# runs, on this CPU: a proxy for that CPU's speed, not that speed.
#
# Output: build/against/results.md and results.json (against.py); each round's criterion
# reports under build/against/round-K/{base,head}. CARGO_TARGET_DIR as for run.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cd "$root"
usage() { echo "usage: $0 BASE [--avx2] [--rounds N]" >&2; exit 2; }
[[ $# -ge 1 && "$1" != -* ]] || usage
base=$(git rev-parse --verify --quiet "$1^{commit}") || { echo "not a commit: $1" >&2; exit 2; }
shift
avx2=0
rounds=3
while [[ $# -gt 0 ]]; do
    case "$1" in
        --avx2) avx2=1; shift ;;
        --rounds) rounds="${2:-}"; shift 2 || usage ;;
        *) usage ;;
    esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "--rounds: a positive number, not '$rounds'" >&2; exit 2; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
out="$root/build/against"
src="$root/target/against/src-${base:0:12}"
base_target="$root/target/against/target-${base:0:12}"
step() { printf '\n== %s\n' "$*" >&2; }

step "base ${base:0:12}: git archive into ${src#"$root"/}, then build"
if [[ ! -f "$src/Cargo.toml" ]]; then
    rm -rf "$src"
    mkdir -p "$src"
    git archive --format=tar "$base" | tar -x -C "$src"
fi
(cd "$src" && CARGO_TARGET_DIR="$base_target" cargo bench -q -p cqlframe --bench framing --no-run)
step "work tree: build"
cargo bench -q -p cqlframe --bench framing --no-run
cargo build --release -q -p cqlframe-cli --bin cqlframe

step "inputs: ${out#"$root"/}/data (gen_data.py)"
rm -rf "$out"
mkdir -p "$out"
python3 "$here/gen_data.py" "$CARGO_TARGET_DIR/release/cqlframe" "$out/data"
{
    echo "base=$base"
    echo "subject=$(git log -1 --format=%s "$base" | cut -c1-120)"
    echo "head=$(git rev-parse HEAD)$(git diff --quiet HEAD -- reference || echo ' (with uncommitted changes under reference/)')"
    echo "avx2=$avx2"
} > "$out/against.txt"
uptime > "$out/uptime-start.txt"

# Criterion filters (regular expressions on "group/function/size"): our whole-frame cells and
# the raw checksums, of one checksum.
cells() { echo "^(decode|encode)/ours-(uncompressed|lz4)-$1/|^raw/$1/"; }
# One build's cells into $1, from its tree ($2) and target dir ($3); each criterion run's
# checksum paths (as the benchmark prints them, where it does) appended to $1/paths.txt.
measure() {
    local dest="$1" tree="$2" target="$3" runs=("crc32c?:")
    [[ "$tree" == "$root" && $avx2 == 1 ]] && runs=(crc32:vpclmul crc32c:vpclmul-fused)
    mkdir -p "$dest"
    for run in "${runs[@]}"; do
        (cd "$tree" && CARGO_TARGET_DIR="$target" CRITERION_HOME="$dest/criterion" \
            CQLFRAME_BENCH_DATA="$out/data" CQLFRAME_CRC_PATH="${run#*:}" \
            cargo bench -q -p cqlframe --bench framing -- --noplot "$(cells "${run%%:*}")" >&2)
        echo "${run%%:*} cells: $(cat "$dest/criterion/checksum-paths.txt" 2>/dev/null || echo '?')" >> "$dest/paths.txt"
    done
}
for ((k = 1; k <= rounds; k++)); do
    sides=(base head)
    ((k % 2 == 0)) && sides=(head base)
    for side in "${sides[@]}"; do
        step "round $k of $rounds: $side"
        if [[ "$side" == base ]]; then
            measure "$out/round-$k/base" "$src" "$base_target"
        else
            measure "$out/round-$k/head" "$root" "$CARGO_TARGET_DIR"
        fi
    done
done
uptime > "$out/uptime-end.txt"
step "report"
python3 "$here/against.py" "$out"
