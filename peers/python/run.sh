#!/usr/bin/env bash
# Run the Python peer: ensure the venv, then hand stdin/args to segment_peer.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/setup.sh" </dev/null  # keep stdin for the peer
exec "$here/../../.cache/venv/python-peer/bin/python" "$here/segment_peer.py" "$@"
