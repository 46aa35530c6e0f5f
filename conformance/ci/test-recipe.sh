#!/usr/bin/env bash
# Tests the CI recipe of conformance/README.md ("The kit in a driver's CI") the way a driver
# repository runs it: a fresh clone of this repository as `kit/` in a scratch folder, the kit
# built there, the quick subset run against an adapter that lives outside the kit (the
# reference adapter behind a wrapper that misreports the rows of the cases named in $BREAK,
# so that the driver has known failures), its expectations file made by `conformance
# baseline`, and the gate: passed as is, failed by one more broken case, passed and "better
# than expected" when the known failure is fixed; `conformance diff` of like and unlike runs.
#
# To keep CI time small the clone's build reuses a persistent target folder in this checkout's
# git-ignored .cache/ (the recipe itself builds in kit/target); the binary then sits outside the
# clone, so the steps name the clone's catalogue with --catalogue (the recipe does too).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
fail() { echo "test-recipe: $*" >&2; exit 1; }

# The driver's repository: its own adapter, outside the kit.
mkdir -p driver/conformance
cat > driver/conformance/adapter <<'ADAPTER'
#!/usr/bin/env bash
# The reference adapter, except that the rows of the cases named in $BREAK come back wrong.
set -uo pipefail
case_id=""
prev=""
for arg in "$@"; do
    [ "$prev" = "--case" ] && case_id="$arg"
    prev="$arg"
done
out="$("$CQLFRAME_BIN" conformance client "$@")"
code=$?
case " ${BREAK:-} " in
    *" $case_id "*) out="$(printf '%s' "$out" | sed -E 's/"digest":"[0-9a-f]{64}"/"digest":"'"$(printf '0%.0s' $(seq 64))"'"/g')" ;;
esac
printf '%s\n' "$out"
exit "$code"
ADAPTER
chmod +x driver/conformance/adapter
# Step 1: the kit, a fresh clone (of this checkout's HEAD).
git clone --quiet "$repo" kit
# Step 2: build it.
export CARGO_TARGET_DIR="$repo/.cache/ci-recipe/target"
nice -n 10 cargo build --quiet --release --locked -p cqlframe-cli --manifest-path kit/Cargo.toml
cqlframe="$CARGO_TARGET_DIR/release/cqlframe"
# Step 3: run the suite against the driver, from the driver's repository.
cd driver
run_suite() {  # REPORT_DIR [more options]
    local dir="$1"
    shift
    "$cqlframe" conformance --adapter mydriver=conformance/adapter \
        --catalogue ../kit/conformance/cases.toml --quick --report-dir "$dir" "$@" \
        >"$scratch/$(basename "$dir").out" 2>"$scratch/$(basename "$dir").err"
}
known=handshake.uncompressed
other=handshake.lz4
BREAK="$known" run_suite reports/first || fail "a driver's FAIL failed the run without expectations"
for f in report.json junit.xml index.html; do
    test -s "reports/first/$f" || fail "reports/first/$f missing"
done
grep -q '"driver": "mydriver"' reports/first/report.json || fail "the external adapter did not run"
# The first baseline: exactly the known failure.
"$cqlframe" conformance baseline reports/first/report.json -o conformance/expectations.toml
grep -q "case = \"$known\"" conformance/expectations.toml || fail "baseline lacks $known"
test "$(grep -c '^\[\[known\]\]' conformance/expectations.toml)" = 1 \
    || { cat conformance/expectations.toml >&2; fail "baseline lists more than the known failure"; }
# The gate: the same driver passes it.
BREAK="$known" run_suite reports/new --expectations conformance/expectations.toml \
    || { cat "$scratch/new.out" "$scratch/new.err" >&2; fail "the gate failed a run as good as its expectations"; }
# One more broken case fails it.
if BREAK="$known $other" run_suite reports/worse --expectations conformance/expectations.toml; then
    fail "the gate passed a run worse than its expectations"
fi
grep -q "WORSE THAN EXPECTED mydriver *$other" "$scratch/worse.out" || { cat "$scratch/worse.out" >&2; fail "no WORSE THAN EXPECTED line"; }
# The known failure fixed: passes, and says so.
BREAK="" run_suite reports/fixed --expectations conformance/expectations.toml \
    || fail "the gate failed a run better than its expectations"
grep -q "better than expected mydriver *$known" "$scratch/fixed.out" || { cat "$scratch/fixed.out" >&2; fail "the fix is not reported"; }
# Step 4: diff of two like runs passes; a regression, a run missing a case, a full run against a quick one fail.
"$cqlframe" conformance diff reports/first/report.json reports/new/report.json >/dev/null \
    || fail "diff of two like runs failed"
expect_diff_fails() {  # LABEL OLD NEW PATTERN
    if "$cqlframe" conformance diff "$2" "$3" >"$scratch/diff.txt"; then
        fail "diff passed $1"
    fi
    grep -q "$4" "$scratch/diff.txt" || { cat "$scratch/diff.txt" >&2; fail "diff of $1 does not say '$4'"; }
}
expect_diff_fails "a regression" reports/first/report.json reports/worse/report.json "^REGRESSED mydriver"
python3 - reports/new/report.json reports/missing.json reports/full.json <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
missing = dict(report, results=report["results"][1:])
json.dump(missing, open(sys.argv[2], "w"))
full = dict(report, selection=dict(report["selection"], quick=False))
json.dump(full, open(sys.argv[3], "w"))
PY
expect_diff_fails "a report missing a case" reports/first/report.json reports/missing.json "^NOT COMPARABLE: 1 (driver, case) pairs"
expect_diff_fails "a full run against a quick one" reports/full.json reports/new/report.json "^NOT COMPARABLE: the baseline ran the full catalogue"
# The recipe in the README names the same commands.
for word in "conformance --adapter" "--catalogue kit/conformance/cases.toml" "conformance baseline" \
    "--expectations conformance/expectations.toml" "conformance diff" "upload-artifact"; do
    grep -qF -- "$word" "$repo/conformance/README.md" \
        || fail "conformance/README.md's recipe lacks '$word'"
done
echo "test-recipe: fresh clone built; external adapter with one known failure: baseline lists it, the gate passes, fails one more broken case, reports the fix; diff passes like runs, fails a regression, a missing case, quick against full"
