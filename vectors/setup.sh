#!/usr/bin/env bash
# The venv vectors/validate_manifest.py runs in (.cache/venv/vectors): jsonschema and every
# dependency, pinned in vectors/requirements.txt.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../tools/python-venv.sh" --closed vectors "$here/requirements.txt" jsonschema
