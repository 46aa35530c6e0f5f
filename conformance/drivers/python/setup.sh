#!/usr/bin/env bash
# Idempotent setup of the adapter's venv: .cache/venv/conformance-python (git-ignored).
# Silent when the venv already matches requirements.txt. Uses the driver's binary wheel as
# users get it (Cython-compiled modules, libev reactor); the adapter reports which is loaded.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="$root/.cache/venv/conformance-python"
req="$here/requirements.txt"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    exit 0
fi
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    echo "setup.sh: python3 lacks venv/ensurepip (apt-get install python3-venv)" >&2
    exit 1
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install -q --no-deps -r "$req" >&2
"$venv/bin/python" -c 'import cassandra.cluster, lz4.block'
echo "$want" > "$stamp"
