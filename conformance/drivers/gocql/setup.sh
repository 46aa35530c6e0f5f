#!/usr/bin/env bash
# Builds the gocql adapter into .cache/conformance/gocql/adapter (git-ignored) unless it is newer
# than go.mod, go.sum and main.go. Modules and the build cache live in .cache/go (the versions
# are pinned by go.mod and checked by go.sum). Silent when up to date; safe to run concurrently.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$root/.cache/conformance/gocql"
bin="$out/adapter"
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
(cd "$here" && go build -mod=readonly -trimpath -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
