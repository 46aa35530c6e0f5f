#!/usr/bin/env bash
# The Python peer's venv (.cache/venv/python-peer): cassandra-driver and lz4, pinned in
# requirements.txt, which leaves out the driver's dependencies that the framing code never imports.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../../tools/python-venv.sh" python-peer "$here/requirements.txt" \
    cassandra.segment cassandra.connection lz4.block
