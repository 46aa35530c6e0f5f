#!/usr/bin/env bash
# The official Kaitai Struct compiler, pinned (kaitai/tools/pom.xml: the JVM command line
# io.kaitai:kaitai-struct-compiler_2.13, main class io.kaitai.struct.JavaMain), resolved once
# with Maven into the repo's ignored .cache/. Arguments go to the compiler unchanged:
#
#   kaitai/ksc.sh -t python -d build/kaitai/python kaitai/*.ksy
#   kaitai/ksc.sh --help
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
classpath_file="$root/.cache/kaitai/ksc.classpath"
pom="$root/kaitai/tools/pom.xml"

classpath_ok() {
    [ -s "$classpath_file" ] && [ "$classpath_file" -nt "$pom" ] || return 1
    local jar jars
    IFS=: read -r -a jars <"$classpath_file"
    for jar in "${jars[@]}"; do [ -f "$jar" ] || return 1; done
}
if ! classpath_ok; then
    mkdir -p "$(dirname "$classpath_file")"
    echo "kaitai/ksc.sh: resolving the compiler with Maven into .cache/m2" >&2
    mvn -B -q -Dmaven.repo.local="$root/.cache/m2" -f "$pom" \
        dependency:build-classpath -Dmdep.outputFile="$classpath_file" >&2
fi
exec java -cp "$(cat "$classpath_file")" io.kaitai.struct.JavaMain "$@"
