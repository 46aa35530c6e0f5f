#!/usr/bin/env bash
# Tests the CI recipe of conformance/README.md ("The kit in a driver's CI") the way a driver
# repository runs it: a fresh clone of this repository as `kit/` in a scratch folder, the kit
# built there, the quick subset run against an adapter that lives outside the kit (a copy of the
# reference adapter, given by --adapter), the reports kept, and `conformance diff` against the
# previous run (no regression: exit 0; a regression: exit 1).
#
# To keep CI time small the clone's build reuses a persistent target folder in this checkout's
# git-ignored .cache/ (the recipe itself builds in kit/target); the binary then sits outside the
# clone, so the steps name the clone's catalogue with --catalogue (the recipe does too).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"

# The driver's repository: its own adapter, outside the kit.
mkdir -p driver/conformance
cp "$repo/conformance/drivers/reference/run" driver/conformance/adapter
# Step 1: the kit, a fresh clone (of this checkout's HEAD).
git clone --quiet "$repo" kit
# Step 2: build it.
export CARGO_TARGET_DIR="$repo/.cache/ci-recipe/target"
nice -n 10 cargo build --quiet --release --locked -p cqlframe-cli --manifest-path kit/Cargo.toml
cqlframe="$CARGO_TARGET_DIR/release/cqlframe"
# Step 3: run the suite against the driver, from the driver's repository.
cd driver
run_suite() {
    "$cqlframe" conformance --adapter mydriver=conformance/adapter \
        --catalogue ../kit/conformance/cases.toml --quick --report-dir "$1"
}
run_suite reports/previous >/dev/null 2>"$scratch/first.log"
run_suite reports/new >/dev/null 2>"$scratch/second.log"
for f in report.json junit.xml index.html; do
    test -s "reports/new/$f" || { echo "test-recipe: reports/new/$f missing" >&2; exit 1; }
done
grep -q '"driver": "mydriver"' reports/new/report.json \
    || { echo "test-recipe: the external adapter did not run" >&2; exit 1; }
# Step 4: compare with the previous run: no regression, exit 0.
"$cqlframe" conformance diff reports/previous/report.json reports/new/report.json
# A regression (one outcome made worse by hand) must fail the job.
python3 - reports/new/report.json reports/regressed.json <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report["results"][0]["outcome"] = "FAIL"
json.dump(report, open(sys.argv[2], "w"))
PY
if "$cqlframe" conformance diff reports/previous/report.json reports/regressed.json >"$scratch/diff.txt"; then
    echo "test-recipe: diff missed a regression" >&2
    exit 1
fi
grep -q '^REGRESSED mydriver' "$scratch/diff.txt" || { cat "$scratch/diff.txt" >&2; exit 1; }
# The recipe in the README names the same commands.
for word in "conformance --adapter" "--catalogue kit/conformance/cases.toml" "conformance diff" "upload-artifact"; do
    grep -qF -- "$word" "$repo/conformance/README.md" \
        || { echo "test-recipe: conformance/README.md's recipe lacks '$word'" >&2; exit 1; }
done
echo "test-recipe: fresh clone built, external adapter run twice (quick subset), reports kept, diff clean, regression caught"
