#!/usr/bin/env bash
# Builds target/java-segment-peer.jar unless it is newer than pom.xml and every source file.
# Maven's local repository is the repo's git-ignored .cache/m2 (CI reuses it); override with M2_REPO.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
m2="${M2_REPO:-$repo_root/.cache/m2}"
jar="$here/target/java-segment-peer.jar"

up_to_date() {
  [[ -f "$jar" ]] && [[ -z "$(find "$here/pom.xml" "$here/src/main" -newer "$jar" -print -quit)" ]]
}

up_to_date && exit 0
mkdir -p "$here/target"
# Serialize concurrent run.sh calls; the second one finds the jar fresh and returns.
exec 9>"$here/target/.setup.lock"
flock 9
up_to_date && exit 0
echo "building $jar ..." >&2
mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$m2" -DskipTests -f "$here/pom.xml" package >&2
touch "$jar"
