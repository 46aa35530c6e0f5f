#!/usr/bin/env bash
# Fuzzes every cqlframe target for SECONDS each (default 20), then replays regressions/<target>/.
# Usage: reference/fuzz/run.sh [SECONDS] [TARGET...]     (from any directory)
# SECONDS=0 only replays the corpora and regressions (libFuzzer -runs=0), a quick smoke test.
# Exits non-zero if any target crashes; crash inputs land in reference/fuzz/artifacts/<target>/.
set -euo pipefail

FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$FUZZ_DIR/../.." && pwd)"
SECONDS_PER_TARGET="${1:-20}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(decode_whole decode_chunked lz4_frames handshake capture_read judge server_input)
fi
CARGO_FUZZ_VERSION=0.13.2
TOOLS="$REPO_ROOT/.cache/tools"
export PATH="$TOOLS/bin:$PATH"

if ! cargo-fuzz --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
    cargo install --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION" --root "$TOOLS"
fi

cd "$FUZZ_DIR"
# Own target dir even under test.sh (which exports CARGO_TARGET_DIR for the main workspace):
# sanitizer builds are kept apart from the main ones.
export CARGO_TARGET_DIR="$FUZZ_DIR/target"
start=$(date +%s)
# --fuzz-dir: cargo-fuzz would otherwise look for ./fuzz beside the nearest non-fuzz Cargo.toml
# above, the repository root's.
FUZZ=(cargo +nightly fuzz)
for t in "${TARGETS[@]}"; do "${FUZZ[@]}" build --fuzz-dir "$FUZZ_DIR" "$t"; done
echo "run.sh: built ${#TARGETS[@]} targets in $(( $(date +%s) - start ))s"

if [ "$SECONDS_PER_TARGET" -eq 0 ]; then
    LIMIT=(-runs=0)
else
    LIMIT=(-max_total_time="$SECONDS_PER_TARGET")
fi

status=0
for t in "${TARGETS[@]}"; do
    mkdir -p "corpus/$t" "corpus/seed/$t"
    echo "=== $t: fuzzing ${SECONDS_PER_TARGET}s"
    if ! "${FUZZ[@]}" run --fuzz-dir "$FUZZ_DIR" "$t" "corpus/$t" "corpus/seed/$t" -- \
        "${LIMIT[@]}" -rss_limit_mb=2048 -print_final_stats=1; then
        echo "run.sh: $t CRASHED (input in $FUZZ_DIR/artifacts/$t/)" >&2
        status=1
    fi
    shopt -s nullglob
    regressions=("regressions/$t"/*)
    shopt -u nullglob
    if [ ${#regressions[@]} -gt 0 ]; then
        echo "=== $t: replaying ${#regressions[@]} regression file(s)"
        if ! "${FUZZ[@]}" run --fuzz-dir "$FUZZ_DIR" "$t" "${regressions[@]}" -- -rss_limit_mb=2048; then
            echo "run.sh: $t fails on a regression file" >&2
            status=1
        fi
    fi
done
exit $status
