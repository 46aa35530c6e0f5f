# Which driver release the adapter is built against (sourced by setup.sh and run): the pom's
# java-driver-core, or CQLFRAME_JAVA_DRIVER=<version> in a jar of its own. The driver's Maven
# group is org.apache.cassandra from 4.18.0 on and com.datastax.oss before.
out="$root/.cache/conformance/java"
maven_args=()
if [[ -n "${CQLFRAME_JAVA_DRIVER:-}" ]]; then
    if [[ ! "$CQLFRAME_JAVA_DRIVER" =~ ^4\.[0-9]+\.[0-9]+$ ]]; then
        echo "CQLFRAME_JAVA_DRIVER=$CQLFRAME_JAVA_DRIVER: not a 4.x release of java-driver-core" >&2
        exit 1
    fi
    group=org.apache.cassandra
    if [[ "$(printf '%s\n' "$CQLFRAME_JAVA_DRIVER" 4.18.0 | sort -V | head -1)" != 4.18.0 ]]; then
        group=com.datastax.oss
    fi
    out="$root/.cache/conformance/java-$CQLFRAME_JAVA_DRIVER"
    maven_args=(-Ddriver.version="$CQLFRAME_JAVA_DRIVER" -Ddriver.groupId="$group")
fi
jar="$out/java-conformance-adapter.jar"
