#!/usr/bin/env bash
# Builds the cdrs-tokio adapter (cdrs-tokio 9.0.2 and its tokio stack, pinned by Cargo.lock)
# into .cache/conformance/cdrs/target, niced; silent and quick when up to date; prints the
# binary's path on stdout. The crate has its own [workspace], so it is not part of the
# repository's workspace. The driver version the adapter reports is read from the lock file.
#
# CQLFRAME_CDRS_VERSION=9.0.1 builds the same adapter against that release of cdrs-tokio, and
# CQLFRAME_CDRS_PROTOCOL_VERSION=4.0.0 against that release of its cassandra-protocol crate
# (where the framing code lives), in a copy of this folder under .cache/conformance/cdrs/pins/,
# so a case can be run on an older release without editing a file (conformance/README.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="$here/../../../.cache/conformance/cdrs"
driver="${CQLFRAME_CDRS_VERSION:-}"
protocol="${CQLFRAME_CDRS_PROTOCOL_VERSION:-}"
for v in "$driver" "$protocol"; do
  if [[ -n "$v" && ! "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "CQLFRAME_CDRS_VERSION and CQLFRAME_CDRS_PROTOCOL_VERSION take a release X.Y.Z, not '$v'" >&2
    exit 2
  fi
done
src="$here"
export CARGO_TARGET_DIR="$cache/target"
locked=--locked
if [[ -n "$driver$protocol" ]]; then
  pin="$cache/pins/cdrs-tokio-${driver:-default}+cassandra-protocol-${protocol:-default}"
  src="$pin/src"
  export CARGO_TARGET_DIR="$pin/target"
  mkdir -p "$pin"
  exec 9>"$pin/.setup.lock"
  flock 9
  if [[ ! -f "$src/Cargo.lock" || -n "$(find "$here/Cargo.toml" "$here/Cargo.lock" "$here/src" -newer "$src/Cargo.lock" -print -quit)" ]]; then
    rm -rf "$src" && mkdir -p "$src"
    cp -r "$here/Cargo.toml" "$here/Cargo.lock" "$here/src" "$src/"
    if [[ -n "$driver" ]]; then
      sed -i "s/^cdrs-tokio = \"=[0-9.]*\"/cdrs-tokio = \"=$driver\"/" "$src/Cargo.toml"
      nice -n 10 cargo update --quiet --manifest-path "$src/Cargo.toml" -p cdrs-tokio --precise "$driver" >&2
    fi
    if [[ -n "$protocol" ]]; then
      nice -n 10 cargo update --quiet --manifest-path "$src/Cargo.toml" -p cassandra-protocol --precise "$protocol" >&2
    fi
  fi
  locked=
fi
lock_version() {
  awk -v name="$1" '$0 == "name = \"" name "\"" { getline; gsub(/version = |"/, ""); print }' "$src/Cargo.lock"
}
CQLFRAME_CDRS_DRIVER_VERSION="cdrs-tokio $(lock_version cdrs-tokio)"
if [[ -n "$protocol" ]]; then
  CQLFRAME_CDRS_DRIVER_VERSION+=" with cassandra-protocol $(lock_version cassandra-protocol)"
fi
export CQLFRAME_CDRS_DRIVER_VERSION
nice -n 10 cargo build --quiet --release $locked --manifest-path "$src/Cargo.toml" >&2
echo "$CARGO_TARGET_DIR/release/adapter"
