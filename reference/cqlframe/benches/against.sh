#!/usr/bin/env bash
# Our framing and checksums in the work tree against an earlier commit, on this machine, in rounds:
# the check that a change aimed at some CPUs (a wider checksum path, say) leaves nothing slower on
# the others, AVX2-only ones with --avx2.
#
#   reference/cqlframe/benches/against.sh BASE [--avx2] [--rounds N]
#
# Builds the framing benchmark (framing.rs) of commit BASE, exported with `git archive` into
# target/against/, beside the work tree's, and runs our cells of both on the same inputs
# (gen_data.py): decode and encode of every format, checksum and size, and the raw CRC32 and
# CRC32C of the payloads. A round runs the two builds on each group of cells in turn, the order
# alternating from group to group (default 3 rounds, about 3 minutes each). Each ratio is base
# time / work-tree time within a round (above 1: the work tree is faster); the report gives the
# median with the lowest and highest round's.
#
# --avx2 forces, in the work tree, the checksum paths an AVX2-only CPU chooses (CRC32
# `vpclmul`, CRC32C `vpclmul-fused`) through CQLFRAME_CRC_PATH; the base runs its own choice.
# On an AVX-512 machine this measures the code an AVX2-only CPU runs, on this CPU: a proxy for
# that CPU's speed, not that speed.
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

# A slot is one criterion group's cells of one checksum; each round runs every slot of both
# builds back to back, in an order that alternates from slot to slot, so that the two
# measurements of a cell lie seconds apart, not minutes (the VM's speed drifts in between).
declare -A avx2_path=([crc32]=vpclmul [crc32c]=vpclmul-fused)
# The criterion filter (a regular expression on "group/function/size") of a slot.
filter() {
    if [[ "$1" == raw ]]; then echo "^raw/$2/"; else echo "^$1/ours-(uncompressed|lz4)-$2/"; fi
}
# One build's (base or head) cells of one slot (GROUP CHECKSUM) into the round's directory; the
# checksum paths in use, as the benchmark prints them where it does, appended to paths.txt.
measure() {
    local dest="$1/$2" tree="$src" target="$base_target" path=""
    if [[ "$2" == head ]]; then
        tree="$root" target="$CARGO_TARGET_DIR"
        ((avx2)) && path="${avx2_path[$4]}"
    fi
    mkdir -p "$dest"
    (cd "$tree" && CARGO_TARGET_DIR="$target" CRITERION_HOME="$dest/criterion" \
        CQLFRAME_BENCH_DATA="$out/data" CQLFRAME_CRC_PATH="$path" \
        cargo bench -q -p cqlframe --bench framing -- --noplot "$(filter "$3" "$4")" >&2)
    if [[ -f "$dest/criterion/checksum-paths.txt" ]]; then
        echo "$4 cells: $(cat "$dest/criterion/checksum-paths.txt")" >> "$dest/paths.txt"
    fi
}
slot=0
for ((k = 1; k <= rounds; k++)); do
    step "round $k of $rounds"
    for group in decode encode raw; do
        for checksum in crc32 crc32c; do
            sides=(base head)
            ((slot++ % 2)) && sides=(head base)
            for side in "${sides[@]}"; do
                measure "$out/round-$k" "$side" "$group" "$checksum"
            done
        done
    done
done
uptime > "$out/uptime-end.txt"
step "report"
python3 "$here/against.py" "$out"
