# The Apache Cassandra release series the live-node scripts can start, one node at a time
# (sourced by cassandra/node.sh, cassandra/fetch.sh and cassandra/bench/run.sh; not run on its
# own). CASSANDRA_VERSION picks the series, 5.0 by default:
#
#   series  cassandra-all (Maven Central)  Java                   config
#   5.0     5.0.9                          17 (the machine's)     cassandra/cassandra.yaml
#   4.1     4.1.10                         11 (cassandra/jdk.sh)  cassandra/cassandra.yaml
#   4.0     4.0.19                         11 (cassandra/jdk.sh)  cassandra/cassandra-4.0.yaml
#
# Each is the newest patch release of its series on Maven Central (checked 2026-11-28), on
# the Java its release supports (4.0 and 4.1: 8 or 11; 5.0: 11 or 17). 4.0 reads only the
# configuration keys of before 4.1 (`commitlog_sync_period_in_ms`), 4.1 both.
#
# CASSANDRA_VERSION may also name one release of a series as Maven Central does (4.0.0,
# 4.0-beta4, 4.0-rc1, 4.1.3, 5.0.2): it runs with its series' Java and configuration, which
# is how a bug's reproduction starts the release it affects (cassandra/reproduce.sh).
#
#   version_select SERIES|RELEASE
#                           sets cassandra_series, cassandra_release, cassandra_java (11 or
#                           17), cassandra_config and cassandra_lib (its jars, .cache/)
#
# The caller sets `root` (the repository).

version_select() {
    local release=""
    cassandra_series=$1
    case "$1" in
        [45].[01][.-]*)
            release=$1
            cassandra_series=${1:0:3}
            ;;
    esac
    case "$cassandra_series" in
        5.0) cassandra_release=5.0.9 cassandra_java=17 cassandra_config=cassandra.yaml ;;
        4.1) cassandra_release=4.1.10 cassandra_java=11 cassandra_config=cassandra.yaml ;;
        4.0) cassandra_release=4.0.19 cassandra_java=11 cassandra_config=cassandra-4.0.yaml ;;
        *)
            echo "CASSANDRA_VERSION=$1: the series is one of 5.0, 4.1, 4.0, or a release of one" >&2
            return 2
            ;;
    esac
    cassandra_release=${release:-$cassandra_release}
    cassandra_lib="$root/.cache/cassandra/$cassandra_release/lib"
}
