#!/usr/bin/env bash
# Fetches org.apache.cassandra:cassandra-all of the release series CASSANDRA_VERSION (default
# 5.0; the release pinned in cassandra/versions.sh) and its runtime dependencies from Maven
# Central into .cache/cassandra/RELEASE/lib (Maven's local repository: .cache/m2). Does nothing
# when the jars are already there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=cassandra/versions.sh
source "$root/cassandra/versions.sh"
version_select "${CASSANDRA_VERSION:-5.0}"
lib="$cassandra_lib"
if [ -f "$lib/cassandra-all-$cassandra_release.jar" ]; then
    exit 0
fi
rm -rf "$lib"
mvn -B -q -Dmaven.repo.local="$root/.cache/m2" -f "$root/cassandra/pom.xml" \
    -Dcassandra.version="$cassandra_release" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$lib"
echo "cassandra: $(ls "$lib" | wc -l) jars in $lib"
