#!/usr/bin/env bash
# An idempotent Python venv for one part of the kit, quiet when already up to date:
#
#   tools/python-venv.sh [--closed] NAME REQUIREMENTS MODULE...
#
# Builds .cache/venv/NAME (git-ignored) from REQUIREMENTS, whose packages are all pinned with ==
# and installed with --no-deps so nothing unpinned comes in; rebuilds it when REQUIREMENTS
# changes; checks that every MODULE imports. --closed also runs `pip check`, for requirement
# files that list every dependency (some deliberately leave out dependencies the code never
# imports). Installs Debian's python3-venv when it is missing and we are root.
set -euo pipefail
closed=0
if [[ "${1:-}" == --closed ]]; then closed=1; shift; fi
name="$1" req="$2"
shift 2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.cache/venv/$name"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
imports="$(printf 'import %s\n' "$@")"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] \
    && "$venv/bin/python" -c "$imports" 2>/dev/null; then
    exit 0
fi

if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    if command -v apt-get >/dev/null && [[ "$(id -u)" == 0 ]]; then
        echo "python-venv.sh: installing python3-venv" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
    else
        echo "python-venv.sh: python3 lacks venv/ensurepip (install python3-venv)" >&2
        exit 1
    fi
fi

rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$venv/bin/python" -m pip install -q --no-deps -r "$req" >&2
if [[ $closed == 1 ]] && ! out="$("$venv/bin/python" -m pip check 2>&1)"; then
    echo "$out" >&2
    exit 1
fi
"$venv/bin/python" -c "$imports"
echo "$want" > "$stamp"
