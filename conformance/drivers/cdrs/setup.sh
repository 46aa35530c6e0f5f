#!/usr/bin/env bash
# Builds the cdrs-tokio adapter (cdrs-tokio 9.0.2 and its tokio stack, pinned by Cargo.lock)
# into .cache/conformance/cdrs/target, niced; silent and quick when up to date. The crate has
# its own [workspace], so it is not part of the repository's workspace. The driver version the
# adapter reports is read from the lock file. With CQLFRAME_CDRS_VERSION and
# CQLFRAME_CDRS_PROTOCOL_VERSION (pinned.sh) the copy's lock file is moved to those releases.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/pinned.sh"
locked=--locked
if [[ "$src" != "$here" ]]; then
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
