#!/usr/bin/env bash
# Builds the gocql adapter into .cache/conformance/gocql/adapter (git-ignored) unless it is newer
# than go.mod, go.sum and main.go. Modules and the build cache live in .cache/go (the versions
# are pinned by go.mod and checked by go.sum). Silent when up to date; safe to run concurrently.
# With CQLFRAME_GOCQL_VERSION (pinned.sh) the same adapter is built against that release, from a
# copy of this folder whose go.mod names it, into a folder of its own.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
source "$here/pinned.sh"
up_to_date() {
  [[ -x "$bin" ]] && [[ -z "$(find "$here/go.mod" "$here/go.sum" "$here/main.go" -newer "$bin" -print -quit)" ]]
}
up_to_date && exit 0
mkdir -p "$out"
exec 9>"$out/.setup.lock"
flock 9
up_to_date && exit 0
echo "building $bin ..." >&2
export GOMODCACHE="$root/.cache/go/mod" GOCACHE="$root/.cache/go/build" GOPATH="$root/.cache/go" GOFLAGS=-modcacherw
src="$here"
if [[ -n "$version" ]]; then
  src="$out/src"
  rm -rf "$src" && mkdir -p "$src"
  cp "$here/go.mod" "$here/go.sum" "$here/main.go" "$src/"
  (cd "$src" && go mod edit -require="$module@$version" && go mod tidy >&2)
fi
(cd "$src" && go build -mod=readonly -trimpath -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
