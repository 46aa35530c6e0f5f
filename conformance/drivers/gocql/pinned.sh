# Which driver release the adapter is built against (sourced by setup.sh and run): go.mod's, or
# CQLFRAME_GOCQL_VERSION=<v2.x.y> (or a release candidate, <v2.x.y-rcN>) in a folder of its own.
# Needs $root.
module=github.com/apache/cassandra-gocql-driver/v2
version="${CQLFRAME_GOCQL_VERSION:-}"
if [[ -n "$version" && ! "$version" =~ ^v2\.[0-9]+\.[0-9]+(-rc[0-9]+)?$ ]]; then
    echo "CQLFRAME_GOCQL_VERSION=$version: not a v2 release (v2.x.y or v2.x.y-rcN) of $module" >&2
    exit 1
fi
out="$root/.cache/conformance/gocql${version:+/$version}"
bin="$out/adapter"
