#!/usr/bin/env bash
# Installs the Node.js driver pinned by package-lock.json into .cache/conformance/nodejs
# (git-ignored) with `npm ci`, unless the installed lock file already matches. Silent when up
# to date; safe to run concurrently (flock), and safe beside a running adapter: each lock file
# gets its own directory, installed aside and renamed into place, and `node_modules` is a
# symlink switched by a rename, so an adapter never sees a half-installed tree.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$root/.cache/conformance/nodejs"
want="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
up_to_date() {
  [[ "$(readlink "$out/node_modules" 2>/dev/null)" == "$want/node_modules" &&
     -d "$out/$want/node_modules/cassandra-driver" ]]
}
up_to_date && exit 0
mkdir -p "$out"
exec 9>"$out/.setup.lock"
flock 9
up_to_date && exit 0
if [[ ! -d "$out/$want/node_modules/cassandra-driver" ]]; then
  echo "installing cassandra-driver into $out/$want ..." >&2
  build="$(mktemp -d "$out/build.XXXXXX")"
  trap 'rm -rf "$build"' EXIT
  cp "$here/package.json" "$here/package-lock.json" "$build/"
  (cd "$build" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  rm -rf "$out/$want"
  mv -T "$build" "$out/$want"
fi
# A tree installed in place by an older setup.sh is replaced by the link once.
[[ -L "$out/node_modules" ]] || rm -rf "$out/node_modules" "$out/.lock.sha256" "$out"/package*.json
ln -sfn "$want/node_modules" "$out/node_modules.new"
mv -T "$out/node_modules.new" "$out/node_modules"
