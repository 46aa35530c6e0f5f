#!/usr/bin/env bash
# Fetches org.apache.cassandra:cassandra-all (version in cassandra/pom.xml) and its runtime
# dependencies from Maven Central into .cache/cassandra/lib (Maven's local repository:
# .cache/m2). Does nothing when the jars are already there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lib="$root/.cache/cassandra/lib"
version="$(sed -n 's:.*<cassandra.version>\(.*\)</cassandra.version>.*:\1:p' "$root/cassandra/pom.xml")"
if [ -f "$lib/cassandra-all-$version.jar" ]; then
    exit 0
fi
rm -rf "$lib"
mvn -B -q -Dmaven.repo.local="$root/.cache/m2" -f "$root/cassandra/pom.xml" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$lib"
echo "cassandra: $(ls "$lib" | wc -l) jars in $lib"
