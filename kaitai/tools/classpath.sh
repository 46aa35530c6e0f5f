#!/usr/bin/env bash
# Prints the class path of a pinning pom (its dependencies, from Maven Central), resolved once
# with Maven into the repo's ignored .cache/m2 and remembered in .cache/kaitai/NAME.classpath;
# resolved again when the pom is newer or a jar is gone.
#
#   kaitai/tools/classpath.sh NAME POM
set -euo pipefail
name="$1" pom="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
classpath_file="$root/.cache/kaitai/$name.classpath"

classpath_ok() {
    [ -s "$classpath_file" ] && [ "$classpath_file" -nt "$pom" ] || return 1
    local jar jars
    IFS=: read -r -a jars <"$classpath_file"
    for jar in "${jars[@]}"; do [ -f "$jar" ] || return 1; done
}
if ! classpath_ok; then
    mkdir -p "$(dirname "$classpath_file")"
    echo "kaitai/tools/classpath.sh: resolving $name with Maven into .cache/m2" >&2
    mvn -B -q -Dmaven.repo.local="$root/.cache/m2" -f "$pom" \
        dependency:build-classpath -Dmdep.outputFile="$classpath_file" >&2
    touch "$classpath_file" # the plugin leaves an unchanged file as it was
fi
cat "$classpath_file"
