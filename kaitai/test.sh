#!/usr/bin/env bash
# The Kaitai Struct grammar of the framing layer: compile and test.
#
# 1. Installs, idempotently and pinned, into the repo's ignored .cache/: the official Kaitai
#    Struct compiler (JVM command line, Maven artifact io.kaitai:kaitai-struct-compiler_2.13,
#    version in kaitai/tools/pom.xml) and the runtimes of the tested targets: Python
#    (kaitai/tests/requirements.txt), JavaScript (kaitai/tests/package.json), Java
#    (kaitai/tests/java/pom.xml, into .cache/m2), Go (kaitai/tests/go/go.mod and go.sum, into
#    .cache/go), and, only with KAITAI_RUST_RUNTIME, the Rust runner's crates
#    (kaitai/tests/rust/Cargo.lock, built into .cache/kaitai/rust-target).
# 2. Compiles every kaitai/*.ksy for every target of the compiler (-t all) into build/kaitai/;
#    fails on any error or warning.
# 3. Runs the generated Python, JavaScript, Java and Go parsers against the golden vectors
#    (kaitai/tests/). Each prints `kaitai-<lang>: N passed, M failed`.
# 4. Runs the generated Rust parsers the same way when KAITAI_RUST_RUNTIME names a checkout of
#    the official Rust runtime (kaitai-io/kaitai_struct_rust_runtime, tag v0.11.0). It is not
#    on crates.io, so without the variable the script prints why the Rust runner was not run
#    (kaitai/README.md, "Rust").
#
#   kaitai/test.sh
#   KAITAI_RUST_RUNTIME=/path/to/kaitai_struct_rust_runtime kaitai/test.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cache="$root/.cache"
tools="$cache/kaitai"
out="$root/build/kaitai"
mkdir -p "$tools"

say() { printf -- '-- kaitai: %s\n' "$*"; }

# --- the compiler (resolved by kaitai/ksc.sh on first use) ---------------------------------
ksc() { kaitai/ksc.sh "$@"; }
ksc --version >/dev/null

# --- the runtimes ----------------------------------------------------------------------------
venv="$cache/venv/kaitai"
tools/python-venv.sh --closed kaitai kaitai/tests/requirements.txt kaitaistruct yaml
node_dir="$tools/node"
if ! cmp -s kaitai/tests/package.json "$node_dir/package.json" 2>/dev/null ||
    [ ! -d "$node_dir/node_modules/kaitai-struct" ]; then
    say "installing the JavaScript runtime"
    rm -rf "$node_dir"
    mkdir -p "$node_dir"
    cp kaitai/tests/package.json "$node_dir/package.json"
    (cd "$node_dir" && npm install --no-package-lock --no-audit --no-fund --silent)
fi

# --- compile for every target ----------------------------------------------------------------
say "$(ksc --version) -t all"
rm -rf "$out"
mkdir -p "$out"
set +e
ksc -t all --ksc-json-output --go-package cqlframe -d "$out" kaitai/*.ksy \
    >"$tools/ksc-output.json" 2>"$tools/ksc-stderr.txt"
status=$?
set -e
python3 - "$tools/ksc-output.json" "$tools/ksc-stderr.txt" "$status" "$out" <<'EOF'
import json, pathlib, sys
report, stderr, status, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3]), pathlib.Path(sys.argv[4])
problems = []
if status != 0:
    problems.append(f"compiler exit status {status}")
if stderr.read_text().strip():
    problems.append("compiler stderr: " + stderr.read_text().strip())
try:
    data = json.loads(report.read_text())
except ValueError:
    data = {}
    problems.append("compiler output is not JSON: " + report.read_text()[:2000])
targets = set()
def walk(node, where):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("errors", "warnings") and value:
                for item in value:
                    problems.append(f"{key[:-1]} in {where}: {json.dumps(item)}")
            else:
                walk(value, where)
for spec, result in data.items():
    targets.update(result.get("output", {}))
    walk(result, spec)
files = [p for p in out.rglob("*") if p.is_file()]
print(f"-- kaitai: {len(data)} .ksy files, {len(targets)} targets ({', '.join(sorted(targets))}), "
      f"{len(files)} files written, {sum(1 for p in problems if p.startswith('warning'))} warnings")
for p in problems:
    print("   " + p)
sys.exit(1 if problems else 0)
EOF

# --- tests -----------------------------------------------------------------------------------
failed=0
"$venv/bin/python" kaitai/tests/run_python.py --generated "$out/python" || failed=1
NODE_PATH="$node_dir/node_modules" node kaitai/tests/run_javascript.js --generated "$out/javascript" || failed=1

# Java: the generated sources and the runner, compiled against the pinned runtime.
java_classpath="$(kaitai/tools/classpath.sh java-runner kaitai/tests/java/pom.xml)"
rm -rf "$out/java-classes"
javac -Xlint:all,-serial -Werror -d "$out/java-classes" -cp "$java_classpath" \
    "$out"/java/src/*.java kaitai/tests/java/*.java
java -cp "$out/java-classes:$java_classpath" KaitaiJavaRunner "$root" || failed=1

# Go: the runner module with the generated package as cqlframe-kaitai-go/cqlframe; modules
# and build cache under .cache/go, the toolchain the machine has (no toolchain download).
go_runner="$out/go-runner"
mkdir -p "$go_runner"
cp kaitai/tests/go/*.go kaitai/tests/go/go.mod kaitai/tests/go/go.sum "$go_runner/"
cp -r "$out/go/src/cqlframe" "$go_runner/cqlframe"
(cd "$go_runner" && GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOTOOLCHAIN=local \
    GOFLAGS="-mod=readonly -modcacherw" go build -o "$out/kaitai-go" .)
"$out/kaitai-go" -root "$root" || failed=1

# Rust: the runner crate with the generated modules as its src/generated/, and the official
# runtime patched in from KAITAI_RUST_RUNTIME by a .cargo/config.toml written here (Cargo.lock
# pins everything else). Its target dir is under .cache/, so later runs rebuild little.
rust_runtime="${KAITAI_RUST_RUNTIME:-}"
if [ -z "$rust_runtime" ]; then
    say "Rust runner not run: KAITAI_RUST_RUNTIME is not set (the official Rust runtime is not on crates.io; see kaitai/README.md, \"Rust\")"
elif ! grep -qx 'name = "kaitai"' "$rust_runtime/Cargo.toml" 2>/dev/null; then
    echo "kaitai-rust: KAITAI_RUST_RUNTIME=$rust_runtime is not a checkout of the Kaitai Struct Rust runtime (no Cargo.toml of the package \"kaitai\")" >&2
    failed=1
else
    rust_runner="$out/rust-runner"
    mkdir -p "$rust_runner/.cargo" "$rust_runner/src/generated"
    cp kaitai/tests/rust/Cargo.toml kaitai/tests/rust/Cargo.lock "$rust_runner/"
    cp kaitai/tests/rust/src/*.rs "$rust_runner/src/"
    cp "$out"/rust/*.rs "$rust_runner/src/generated/"
    # the path as a TOML basic string (JSON's escapes are TOML's)
    python3 -c 'import json, os, sys; print("[patch.crates-io]\nkaitai = { path = %s }" % json.dumps(os.path.abspath(sys.argv[1])))' \
        "$rust_runtime" >"$rust_runner/.cargo/config.toml"
    # the runtime's own warnings are not ours: the log is shown when the build fails
    if (cd "$rust_runner" && CARGO_TARGET_DIR="$tools/rust-target" \
        cargo build --locked -q >"$tools/rust-build.log" 2>&1); then
        "$tools/rust-target/debug/kaitai-rust" --root "$root" || failed=1
    else
        cat "$tools/rust-build.log" >&2
        echo "kaitai-rust: the runner did not build against $rust_runtime (log above)" >&2
        failed=1
    fi
fi
exit "$failed"
