#!/usr/bin/env bash
# Builds the Java adapter (.cache/conformance/java/java-conformance-adapter.jar, git-ignored)
# unless it is newer than pom.xml and every source file. Maven's local repository is the repo's
# .cache/m2 (it already holds java-driver-core 4.19.3 and its dependencies; override with M2_REPO).
# CQLFRAME_JAVA_DRIVER=<4.x.y> builds against that release instead, into
# .cache/conformance/java-<4.x.y>/ (pinned.sh), for reproducing a bug on the release that shipped it.
# Silent when the jar is up to date; safe to run concurrently (flock, and the jar replaced by a
# rename).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
m2="${M2_REPO:-$root/.cache/m2}"
source "$here/pinned.sh"

up_to_date() {
  [[ -f "$jar" ]] && [[ -z "$(find "$here/pom.xml" "$here/src" -newer "$jar" -print -quit)" ]]
}

up_to_date && exit 0
mkdir -p "$out"
exec 9>"$out/.setup.lock"
flock 9
up_to_date && exit 0
echo "building $jar ..." >&2
# Built aside and renamed into place: an adapter already running (another checkout sharing this
# .cache, or a run that found the old jar up to date) keeps reading the jar it opened, never a
# half-written one.
build="$(mktemp -d "$out/build.XXXXXX")"
trap 'rm -rf "$build"' EXIT
mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$m2" -Dadapter.build.dir="$build" \
  "${maven_args[@]}" -f "$here/pom.xml" package >&2
mv -f "$build/java-conformance-adapter.jar" "$jar"
touch "$jar"
