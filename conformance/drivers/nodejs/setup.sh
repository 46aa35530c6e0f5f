#!/usr/bin/env bash
# Installs the Node.js driver pinned by package-lock.json into .cache/conformance/nodejs
# (git-ignored) with `npm ci`, unless the installed lock file already matches. Silent when up
# to date; safe to run concurrently (flock).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$root/.cache/conformance/nodejs"
stamp="$out/.lock.sha256"
want="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
up_to_date() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$out/node_modules/cassandra-driver" ]]
}
up_to_date && exit 0
mkdir -p "$out"
exec 9>"$out/.setup.lock"
flock 9
up_to_date && exit 0
echo "installing cassandra-driver into $out ..." >&2
cp "$here/package.json" "$here/package-lock.json" "$out/"
(cd "$out" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
echo "$want" > "$stamp"
