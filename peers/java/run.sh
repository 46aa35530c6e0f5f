#!/usr/bin/env bash
# Runs the peer: JSON batch on stdin -> JSON results on stdout (or: run.sh --version).
# No -ea: the driver's framing asserts are off in production, so they are off here (JAVA_OPTS to change).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/setup.sh"
# shellcheck disable=SC2086
exec java ${JAVA_OPTS:-} -jar "$here/target/java-segment-peer.jar" "$@"
