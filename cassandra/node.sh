# The live node and the loopback capture, for the scripts that need them (sourced by
# cassandra/run.sh and cassandra/bench/e2e/run.sh; not run on its own).
#
#   node_prepare [crc32c]        the release series CASSANDRA_VERSION (default 5.0, see
#                                cassandra/versions.sh): fetch its jars (cassandra/fetch.sh) and
#                                its Java (cassandra/jdk.sh); with crc32c (5.0 only) build the
#                                extension
#   node_start DIR PORT STORAGE  start one node, data and logs under DIR, wait for its native
#                                port; fails unless the node reports the release pinned; with
#                                node_authenticator=PasswordAuthenticator set, the node asks
#                                clients for credentials and also waits until its default
#                                superuser (cassandra/cassandra) exists
#   node_stop                    TERM, then KILL after 30 s (also on exit, via node_cleanup)
#   capture_start FILE PORT      dumpcap on lo (filter tcp port PORT) into FILE, ready for traffic
#   capture_stop                 end the capture
#   port_busy PORT               whether something listens on PORT
#
# The caller sets `root` (the repository) and calls `trap node_cleanup EXIT` (and
# `trap 'exit 130' INT TERM`): only the processes started here are touched, by pid.

# shellcheck source=cassandra/versions.sh
source "$root/cassandra/versions.sh"
node_pid=""
capture_pid=""
node_agent=()
node_java=""
node_authenticator=""

port_busy() { ss -ltnH "sport = :$1" | grep -q .; }

node_prepare() {
    version_select "${CASSANDRA_VERSION:-5.0}"
    CASSANDRA_VERSION=$cassandra_release "$root/cassandra/fetch.sh"
    node_java=$("$root/cassandra/jdk.sh" "$cassandra_java")
    node_agent=()
    if [ "${1:-}" = crc32c ]; then
        if [ "$cassandra_series" != 5.0 ]; then
            echo "cassandra: the CRC32C extension is built against Cassandra 5.0, not $cassandra_series" >&2
            return 2
        fi
        mvn -B -q -Dmaven.repo.local="$root/.cache/m2" -f "$root/cassandra/crc32c-extension/pom.xml" install
        node_agent=(-javaagent:"$root/.cache/cassandra/crc32c-extension/crc32c-extension.jar")
    fi
}

node_start() {
    local out=$1 port=$2 storage=$3 p jvm
    for p in "$port" "$storage"; do
        if port_busy "$p"; then
            echo "cassandra: port $p is in use (set CQL_PORT / STORAGE_PORT)" >&2
            return 1
        fi
    done
    rm -rf "$out"
    mkdir -p "$out/conf" "$out/log"
    local edits=(-e "s:@DATA@:$out:g" -e "s:@STORAGE_PORT@:$storage:g" -e "s:@NATIVE_PORT@:$port:g")
    [ -z "$node_authenticator" ] ||
        edits+=(-e "s/^authenticator: .*/authenticator: $node_authenticator/")
    sed "${edits[@]}" "$root/cassandra/$cassandra_config" >"$out/conf/cassandra.yaml"
    # One option per line; "--add-exports X" lines are two arguments.
    read -r -a jvm <<<"$(grep -hv '^#' "$root/cassandra/jvm.options" \
        "$root/cassandra/jvm$cassandra_java.options" | tr '\n' ' ')"
    # The default superuser is otherwise created 10 s after startup.
    [ -z "$node_authenticator" ] || jvm+=(-Dcassandra.superuser_setup_delay_ms=0)
    "$node_java" "${jvm[@]}" "${node_agent[@]}" \
        -Dcassandra.config="file://$out/conf/cassandra.yaml" \
        -Dcassandra.storagedir="$out" \
        -Dcassandra.logdir="$out/log" \
        -Dlogback.configurationFile="$root/cassandra/logback.xml" \
        -Dcassandra-foreground=yes \
        -Dcassandra.skip_wait_for_gossip_to_settle=0 \
        -cp "$cassandra_lib/*" \
        org.apache.cassandra.service.CassandraDaemon >"$out/log/stdout.log" 2>&1 &
    node_pid=$!
    for _ in $(seq 360); do
        if ! kill -0 "$node_pid" 2>/dev/null; then
            echo "cassandra: the node exited during startup; last lines of its log:" >&2
            tail -30 "$out/log/stdout.log" >&2
            return 1
        fi
        grep -q "Startup complete" "$out/log/system.log" 2>/dev/null && port_busy "$port" && break
        sleep 0.5
    done
    port_busy "$port" || { echo "cassandra: the native port never opened" >&2; return 1; }
    if [ -n "$node_authenticator" ]; then
        for _ in $(seq 120); do
            grep -q "Created default superuser role" "$out/log/system.log" && break
            sleep 0.5
        done
        grep -q "Created default superuser role" "$out/log/system.log" ||
            { echo "cassandra: the default superuser was never created" >&2; return 1; }
    fi
    local running
    running=$(sed -n 's/.*Cassandra version: \([^ ]*\).*/\1/p' "$out/log/system.log" | head -1)
    echo "cassandra: Apache Cassandra $running on Java $cassandra_java ($node_java)"
    if [ "$running" != "$cassandra_release" ]; then
        echo "cassandra: the node reports $running, not $cassandra_release" >&2
        return 1
    fi
}

node_stop() {
    if [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; then
        echo "cassandra: stopping the node (pid $node_pid)"
        kill -TERM "$node_pid" 2>/dev/null || true
        for _ in $(seq 60); do
            kill -0 "$node_pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL "$node_pid" 2>/dev/null || true
        wait "$node_pid" 2>/dev/null || true
    fi
    node_pid=""
}

capture_start() {
    local file=$1 port=$2
    dumpcap -q -i lo -f "tcp port $port" -w "$file" 2>"$file.log" &
    capture_pid=$!
    for _ in $(seq 50); do
        [ -s "$file" ] && break
        sleep 0.1
    done
    sleep 1
}

capture_stop() {
    if [ -n "$capture_pid" ] && kill -0 "$capture_pid" 2>/dev/null; then
        sleep 1
        kill -INT "$capture_pid" 2>/dev/null || true
        wait "$capture_pid" 2>/dev/null || true
    fi
    capture_pid=""
}

# The EXIT trap: ends the capture and the node, keeps the exit status.
node_cleanup() {
    local status=$?
    capture_stop
    node_stop
    return $status
}
