# Which releases the adapter is built against (sourced by setup.sh and run): Cargo.lock's, or
# CQLFRAME_CDRS_VERSION=<x.y.z> (cdrs-tokio) and CQLFRAME_CDRS_PROTOCOL_VERSION=<x.y.z>
# (cassandra-protocol, the crate that holds the framing) in a copy of the adapter and a target
# folder of its own. Needs $here.
cache="$here/../../../.cache/conformance/cdrs"
driver="${CQLFRAME_CDRS_VERSION:-}"
protocol="${CQLFRAME_CDRS_PROTOCOL_VERSION:-}"
for v in "$driver" "$protocol"; do
    if [[ -n "$v" && ! "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
        echo "CQLFRAME_CDRS_VERSION / CQLFRAME_CDRS_PROTOCOL_VERSION=$v: not a release x.y.z" >&2
        exit 1
    fi
done
src="$here"
export CARGO_TARGET_DIR="$cache/target"
if [[ -n "$driver$protocol" ]]; then
    pin="$cache/pins/cdrs-tokio-${driver:-default}+cassandra-protocol-${protocol:-default}"
    src="$pin/src"
    export CARGO_TARGET_DIR="$pin/target"
fi
bin="$CARGO_TARGET_DIR/release/adapter"
