#!/usr/bin/env bash
# Idempotent setup of the venv that vectors/validate_manifest.py runs in (jsonschema, pinned in
# vectors/requirements.txt). Silent when the venv already matches requirements.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
venv="$root/.cache/venv/vectors"
req="$here/requirements.txt"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"

# Quick path: venv exists, its python runs, and it was built from this requirements.txt.
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] \
    && "$venv/bin/python" -c 'import jsonschema' 2>/dev/null; then
    exit 0
fi

# Debian's python3 ships venv/ensurepip in a separate package.
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    if command -v apt-get >/dev/null && [[ "$(id -u)" == 0 ]]; then
        echo "setup.sh: installing python3-venv" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
    else
        echo "setup.sh: python3 lacks venv/ensurepip (install python3-venv)" >&2
        exit 1
    fi
fi

rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
# Every package is pinned, so --no-deps; pip check then proves the pins are a closed set.
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install -q --no-deps -r "$req" >&2
if ! out="$(PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip check 2>&1)"; then
    echo "$out" >&2
    exit 1
fi
"$venv/bin/python" -c 'import jsonschema'
echo "$want" > "$stamp"
