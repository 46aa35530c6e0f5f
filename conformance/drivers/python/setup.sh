#!/usr/bin/env bash
# The Python driver adapter's venv: cassandra-driver 3.30.1 with its declared dependencies, from
# the binary wheel users get (the adapter reports which reactor and compiled modules are loaded),
# in .cache/venv/conformance-python. CQLFRAME_PYTHON_DRIVER=<version> selects another release
# instead, for reproducing a bug on the release that shipped it: its exact pins are
# pins/<version>.txt and its venv .cache/venv/conformance-python-<version>; releases without a
# wheel for this Python are built from source against the venv's own setuptools.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/pinned.sh"
if [[ -n "${CQLFRAME_PYTHON_DRIVER:-}" ]]; then
    export PIP_NO_BUILD_ISOLATION=0 CASS_DRIVER_NO_CYTHON=1
fi
exec "$here/../../../tools/python-venv.sh" --closed "$venv_name" "$requirements" \
    cassandra.cluster lz4.block google_crc32c
