#!/usr/bin/env bash
# Builds the gocql adapter (unless it is newer than go.mod, go.sum and main.go) and prints the
# binary's path on stdout. Modules and the build cache live in .cache/go (the versions are
# pinned by go.mod and checked by go.sum). Safe to run concurrently.
#
# CQLFRAME_GOCQL_VERSION=v2.0.0 builds the same adapter against that release of the driver
# instead (a copy of this folder with go.mod rewritten, in .cache/conformance/gocql/<version>),
# so a case can be run on an older release without editing a file (conformance/README.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
module=github.com/apache/cassandra-gocql-driver/v2
version="${CQLFRAME_GOCQL_VERSION:-}"
if [[ -n "$version" && ! "$version" =~ ^v2\.[0-9]+\.[0-9]+$ ]]; then
  echo "CQLFRAME_GOCQL_VERSION must name a v2 release (v2.X.Y), not '$version'" >&2
  exit 2
fi
out="$root/.cache/conformance/gocql${version:+/$version}"
bin="$out/adapter"
up_to_date() {
  [[ -x "$bin" ]] && [[ -z "$(find "$here/go.mod" "$here/go.sum" "$here/main.go" -newer "$bin" -print -quit)" ]]
}
if ! up_to_date; then
  mkdir -p "$out"
  exec 9>"$out/.setup.lock"
  flock 9
  if ! up_to_date; then
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
  fi
fi
echo "$bin"
