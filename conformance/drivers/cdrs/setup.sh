#!/usr/bin/env bash
# Builds the cdrs-tokio adapter (cdrs-tokio 9.0.2 and its tokio stack, pinned by Cargo.lock)
# into .cache/conformance/cdrs/target, niced; silent and quick when up to date. The crate has
# its own [workspace], so it is not part of the repository's workspace.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CARGO_TARGET_DIR="$here/../../../.cache/conformance/cdrs/target"
nice -n 10 cargo build --quiet --release --locked --manifest-path "$here/Cargo.toml" >&2
