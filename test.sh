#!/usr/bin/env bash
# Every test of the kit, from a fresh machine: installs what it needs (Debian packages, a
# Python venv, Maven artifacts, crates, cargo-fuzz) into the repo's ignored .cache/, then runs
# each part's checks. Exits non-zero if any check fails.
#
#   ./test.sh            everything
#   FUZZ_SECONDS=60 ./test.sh   longer fuzzing (default 20 s per target)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$root"
export CARGO_TARGET_DIR="$root/target"
mkdir -p .cache

step() { printf '\n== %s\n' "$*"; }

step "system packages"
packages=(asciidoctor ruby-asciidoctor-pdf python3-venv tshark lua5.2 lua5.4 time socat)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

step "reference: format, lints and API docs (broken doc links fail)"
cargo fmt --all --check
cargo clippy --workspace --all-targets --release -q -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q

step "reference: no import circle between the modules of a crate (tools/module_graph.py, its crate list)"
python3 tools/test_module_graph.py
python3 tools/module_graph.py

step "reference: unit, property and cross-check tests"
cargo test --workspace --release

step "benchmarks: the harness's proxy bench once per cell (criterion --test: the traffic is judged clean and the answers arrive whole, straight and through a running proxy; the timings mean nothing)"
cargo bench -q -p cqlframe-harness --bench proxy -- --test >/dev/null

step "vectors: committed files equal a fresh generation; every case decodes as expected in every chunking"
cargo run --release -q -p cqlframe-cli -- vectors verify

step "vectors: a judge written from the spec alone (vectors/independent_judge/, standard-library Python, no code shared with the reference) reports every session vector's findings and every frames vector's first error"
python3 vectors/independent_judge/run.py
python3 vectors/independent_judge/run_frames.py
(cd vectors/independent_judge && python3 -m unittest -q test_judge)

step "vectors: manifest.json matches vectors/manifest.schema.json"
python3 vectors/validate_manifest.py

step "vectors: session captures read back by tshark (checksums, expert info, reassembled streams)"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" python3 vectors/test_pcaps.py

step "wireshark: Lua dissector (CRC/LZ4 modules and framing under Lua 5.2/5.4, tshark on the captures)"
wireshark/test.sh

step "spec: traceability self-test, strict build, rule coverage"
python3 spec/test_traceability.py
spec/build.sh
python3 spec/traceability.py

step "documents: every relative link of every tracked Markdown file, and the spec's paths into the repository, resolve (tools/links.py, after its self-test on broken links); every results table equals what its committed report.json gives and the report matches its schema (tools/results.py --check, after its self-test on a typed edit); the bug corpus page conformance/BUGS.md equals what bugs.toml, the cases' bugs and the reproductions give, every bug is cited by a case and every cited bug exists (tools/bugs.py --check, after its self-test)"
python3 tools/links.py --self-test
python3 tools/links.py
python3 tools/results.py --self-test
python3 tools/results.py --check
python3 tools/bugs.py --self-test
python3 tools/bugs.py --check

step "kaitai: grammar compiled for every target; generated Python, JavaScript, Java and Go parsers (and Rust, given KAITAI_RUST_RUNTIME) against the vectors"
kaitai/test.sh

step "peers: Python driver harness"
peers/python/setup.sh
.cache/venv/python-peer/bin/python -m unittest discover -s peers/python -p 'test_*.py'

step "peers: Java driver harness"
mvn -B -q -Dmaven.repo.local="$root/.cache/m2" -f peers/java/pom.xml test

step "vectors: cross-checked by the Python and Java drivers"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" python3 vectors/crosscheck.py

step "conformance: quick subset, bundled drivers against the reference server (a driver's FAIL is a finding; the reference client failing fails the build); then the Lua dissector names the same rules as cqlframe check on every per-case capture"
cargo run --release -q -p cqlframe-cli -- conformance --quick
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" python3 wireshark/tests/check_judge.py build/conformance/pcap

step "spec anchors: every rule cqlframe check (text and --json), the Lua dissector's findings (on every vector session and regression capture) and that run's index.html and report.json name links to an anchor of the rendered spec that exists, the rule's own, with the spec copied beside index.html"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" python3 tools/test_spec_anchors.py build/conformance

step "one judge: cqlframe check on every capture of that run reports what the conformance server's rules engine recorded for the driver's bytes"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" python3 conformance/test_one_judge.py build/conformance

step "schemas: every JSON document cqlframe writes matches its schema in schemas/ and carries its format version (check --json and --json-lines on every vector capture and on that run's captures, decode --json on every frames vector, a probe of the conformance server and the observations it prints, a reference conformance run's and that run's report.json); copies with a field renamed or removed are rejected"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" python3 schemas/validate.py build/conformance

step "conformance: the CRC32C opt-in of the Python and Java adapters (conformance/drivers-crc32c): negotiation and CRC32C cases PASS, connections framed with the offered checksum"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" conformance/drivers-crc32c/test.sh

step "conformance: the CI recipe of conformance/README.md from a fresh clone, an adapter outside the kit with a known failure: its baseline, the expectations gate both ways, diff of like and unlike runs"
conformance/ci/test-recipe.sh

step "conformance: the minimal adapter of conformance/README.md, taken from the page, on the Python driver: the cases it can do PASS, an action it does not do is UNSUPPORTED, the contract kept"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" python3 tools/test_minimal_adapter.py

step "the front door: README.md's first block run as it stands, in an empty folder outside the kit with an empty CARGO_HOME: cqlframe installed by cargo install --git from a fresh clone, the reference adapter copied out to its PASSes; then with cargo's checkout gone an adapter still runs, the bundled drivers are refused naming --adapter and --drivers-dir, and --drivers-dir runs them"
python3 tools/test_front_door.py

step "live Apache Cassandra 5.0 (Maven Central; 4.0 and 4.1 run by hand, CASSANDRA_VERSION=4.x cassandra/run.sh): cqlframe probe (known deviations in cassandra/deviations.toml, deviations-4.1-5.0.toml, deviations-5.0.toml and deviations-lz4-decoder.toml), a Python-driver workload captured and checked by cqlframe check and the Lua dissector; interoperability: the Python and Java drivers with the CRC32C opt-in fall back to CRC32 (old server, new client), read from the capture"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" cassandra/run.sh

step "live Apache Cassandra 5.0 with the kit's CRC32C extension (cassandra/crc32c-extension/, a Java agent): cqlframe probe (every negotiation and CRC32C case passes; known deviations in cassandra/deviations.toml, deviations-4.1-5.0.toml and deviations-5.0.toml), the same workload captured and checked; interoperability: the released Python and Java drivers get CRC32 (new server, old client), opted in they get CRC32C both ways, uncompressed and LZ4, read from the capture by cqlframe check and the Lua dissector"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" cassandra/run.sh --extension crc32c

step "benchmarks: reference/cqlframe/benches/run.sh --smoke (every implementation of the side-by-side table still produces every cell in both rounds; the timings of so short a run mean nothing), then report.py and against.py on three rounds of known timings (test_report.py, test_against.py)"
reference/cqlframe/benches/run.sh --smoke >/dev/null
python3 reference/cqlframe/benches/test_report.py build/bench-smoke
python3 reference/cqlframe/benches/test_against.py build/bench-smoke

step "benchmarks: reference/checksum/bench.sh --smoke (the checksums against crc32c, crc-fast and crc32fast, two brief rounds: every cell still runs; the timings mean nothing)"
reference/checksum/bench.sh --smoke >/dev/null

step "benchmarks: cassandra/bench/run.sh --smoke (JMH of the node's frame codecs, Cassandra's and the CRC32C extension's: every cell still runs; the timings mean nothing)"
cassandra/bench/run.sh --smoke >/dev/null

step "benchmarks: cassandra/bench/e2e/run.sh --smoke (CRC32 against CRC32C end to end on the extended node, Python and Java drivers: every cell still runs and negotiates its checksum; the timings mean nothing)"
cassandra/bench/e2e/run.sh --smoke >/dev/null

step "benchmarks: cassandra/bench/e2e/proxy.sh --smoke (the latency cqlframe proxy adds, direct, through socat and through the proxy as it starts, with --spin 0 and with --spin 300 side by side on the plain node, then the throughput part with the CPU time of the proxy as it starts and with --spin 0; Python and Java drivers: every cell still runs and each proxy judged its connections clean; the timings mean nothing)"
CQLFRAME_BIN="$CARGO_TARGET_DIR/release/cqlframe" cassandra/bench/e2e/proxy.sh --smoke >/dev/null

step "reference: fuzzing (${FUZZ_SECONDS:-20} s per target)"
reference/fuzz/run.sh "${FUZZ_SECONDS:-20}"

step "all checks passed"
