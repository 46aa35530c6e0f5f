#!/usr/bin/env bash
# The official Kaitai Struct compiler, pinned (kaitai/tools/pom.xml: the JVM command line
# io.kaitai:kaitai-struct-compiler_2.13, main class io.kaitai.struct.JavaMain), resolved once
# with Maven into the repo's ignored .cache/ (kaitai/tools/classpath.sh). Arguments go to the
# compiler unchanged:
#
#   kaitai/ksc.sh -t python -d build/kaitai/python kaitai/*.ksy
#   kaitai/ksc.sh --help
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
classpath="$("$here/tools/classpath.sh" ksc "$here/tools/pom.xml")"
exec java -cp "$classpath" io.kaitai.struct.JavaMain "$@"
