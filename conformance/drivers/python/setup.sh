#!/usr/bin/env bash
# The Python driver adapter's venv (.cache/venv/conformance-python): cassandra-driver 3.30.1 with
# its declared dependencies, from the binary wheel users get (the adapter reports which reactor
# and compiled modules are loaded).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../../../tools/python-venv.sh" --closed conformance-python "$here/requirements.txt" \
    cassandra.cluster lz4.block google_crc32c
