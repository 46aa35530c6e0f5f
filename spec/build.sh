#!/usr/bin/env bash
# Strict build of the framing specification.
#
#   spec/build.sh            HTML (required) and PDF (when asciidoctor-pdf is installed)
#
# Output goes to build/spec/ under the repository root (git-ignored).
# The build fails on any Asciidoctor message of level INFO or above: a missing include
# is an ERROR that Asciidoctor otherwise exits 0 on, and a broken cross-reference is
# only an INFO with -v. It also fails when the HTML is not written or is empty, and
# when a generated file the spec includes is missing.
#
# Needs: asciidoctor (Debian: apt-get install asciidoctor).
# Optional: asciidoctor-pdf (Debian: apt-get install ruby-asciidoctor-pdf).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

src=spec/framing_v6.adoc
out=build/spec
html="$out/framing_v6.html"
pdf="$out/framing_v6.pdf"

if ! command -v asciidoctor >/dev/null 2>&1; then
    echo "build.sh: asciidoctor not found (Debian: apt-get install asciidoctor)" >&2
    exit 1
fi

missing=0
if [ ! -s spec/generated/rules.adoc ]; then
    echo "build.sh: spec/generated/rules.adoc is missing; run: python3 spec/traceability.py --write-summary" >&2
    missing=1
fi
if [ ! -s spec/generated/examples.adoc ]; then
    echo "build.sh: spec/generated/examples.adoc is missing; generate it from the golden vectors" >&2
    missing=1
fi
[ "$missing" -eq 0 ] || exit 1

mkdir -p "$out"
rm -f "$html"

asciidoctor -v --failure-level=INFO -a attribute-missing=warn -o "$html" "$src"

if [ ! -s "$html" ]; then
    echo "build.sh: $html was not written or is empty" >&2
    exit 1
fi
echo "build.sh: wrote $html"

if command -v asciidoctor-pdf >/dev/null 2>&1; then
    rm -f "$pdf"
    asciidoctor-pdf -v --failure-level=INFO -a attribute-missing=warn -o "$pdf" "$src"
    if [ ! -s "$pdf" ]; then
        echo "build.sh: $pdf was not written or is empty" >&2
        exit 1
    fi
    echo "build.sh: wrote $pdf"
else
    echo "build.sh: asciidoctor-pdf not installed; skipping the PDF (Debian: apt-get install ruby-asciidoctor-pdf)"
fi
