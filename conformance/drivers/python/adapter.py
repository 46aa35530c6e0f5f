"""Conformance adapter for the Python driver (cassandra-driver), per conformance/README.md.

Runs one case's workload through the driver's public API (Cluster, Session) against the
conformance server and prints one JSON object: what it did, the rows the application got
(count and digest), and the errors the driver raised. Exit 0: every request succeeded;
1: the driver raised an error; 127: unsupported action.
"""
import argparse
import hashlib
import json
import logging
import sys
import time

ACTIONS = ("connect", "select", "prepare-select", "concurrent-select", "insert-large",
           "idle-select")
SELECT = "SELECT k, v FROM ks.t"


def describe(exc):
    cls = type(exc)
    return "%s.%s: %s" % (cls.__module__, cls.__qualname__, exc)


def rows_report(rows):
    h = hashlib.sha256()
    n = 0
    for k, v in rows:
        v = bytes(v or b"")
        h.update(int(k).to_bytes(4, "big", signed=True))
        h.update(len(v).to_bytes(4, "big"))
        h.update(v)
        n += 1
    return {"rows": n, "digest": h.hexdigest()}


def checksums_in_use(cluster):
    """How many of the session's open framed connections use each payload checksum."""
    counts = {}
    for holder in cluster.get_connection_holders():
        for conn in holder.get_connections():
            if conn.negotiated is not None:
                counts[conn.negotiated.value] = counts.get(conn.negotiated.value, 0) + 1
    return counts


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--case", default="")
    p.add_argument("--action", default="select")
    p.add_argument("--compression", default="default")
    p.add_argument("--checksum", default="default")
    p.add_argument("--protocol", default="default")
    p.add_argument("--auth", action="store_true")
    p.add_argument("--blob-size", type=int, default=0)
    p.add_argument("--requests", type=int, default=0)
    p.add_argument("--timeout", type=float, default=10.0)
    a = p.parse_args()
    report = {"driver": "python", "case": a.case, "action": a.action}
    if a.action not in ACTIONS:
        report["unsupported"] = "unknown action %r" % a.action
        print(json.dumps(report))
        return 127

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    import cassandra
    import cassandra.connection
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import FallthroughRetryPolicy, RoundRobinPolicy

    report["driver_version"] = cassandra.__version__
    report["compiled"] = cassandra.connection.__file__.endswith(".so")
    kwargs = dict(
        contact_points=[a.host], port=a.port,
        connect_timeout=a.timeout, control_connection_timeout=a.timeout,
        # Retries off (the adapter contract): a retry on a new connection could hand the
        # application clean rows after a fault and hide what the driver did with it.
        execution_profiles={EXEC_PROFILE_DEFAULT: ExecutionProfile(
            load_balancing_policy=RoundRobinPolicy(), request_timeout=a.timeout,
            retry_policy=FallthroughRetryPolicy())},
    )
    if a.compression == "lz4":
        kwargs["compression"] = "lz4"
    elif a.compression == "none":
        kwargs["compression"] = False
    if a.protocol in ("3", "4", "5"):
        kwargs["protocol_version"] = int(a.protocol)
    elif a.protocol == "6":
        kwargs["protocol_version"] = 6
        kwargs["allow_beta_protocol_version"] = True
    if a.auth:
        kwargs["auth_provider"] = PlainTextAuthProvider("cassandra", "cassandra")
    if a.action == "idle-select":
        # Heartbeats are OPTIONS requests on idle connections: one per second.
        kwargs["idle_heartbeat_interval"] = 1
        report["heartbeat_interval_s"] = 1
    if a.checksum == "crc32c":
        # The driver has no FRAME_CHECKSUM option: frame_checksum.py adds one through
        # Cluster(connection_class=...), loaded only here.
        import importlib.metadata
        import google_crc32c
        from cassandra.cluster import DefaultConnection
        from frame_checksum import with_frame_checksum
        kwargs["connection_class"] = with_frame_checksum(DefaultConnection)
        report["checksum_option"] = "frame_checksum.py (google-crc32c %s, %s)" % (
            importlib.metadata.version("google-crc32c"), google_crc32c.implementation)

    results = []
    error = None
    cluster = Cluster(**kwargs)
    report["connection_class"] = cluster.connection_class.__name__
    try:
        session = cluster.connect()
        report["negotiated"] = {"protocol_version": cluster.protocol_version}
        if a.checksum == "crc32c":
            report["negotiated"]["frame_checksums"] = checksums_in_use(cluster)
        if a.action == "connect":
            list(session.execute("SELECT release_version FROM system.local"))
            results.append({"ok": True})
        elif a.action == "select":
            try:
                results.append(rows_report(session.execute(SELECT)))
            except Exception as e:
                results.append({"error": describe(e)})
        elif a.action == "idle-select":
            time.sleep(3)
            try:
                results.append(rows_report(session.execute(SELECT)))
            except Exception as e:
                results.append({"error": describe(e)})
        elif a.action == "prepare-select":
            try:
                stmt = session.prepare(SELECT)
                results.append(rows_report(session.execute(stmt)))
            except Exception as e:
                results.append({"error": describe(e)})
        elif a.action == "concurrent-select":
            futures = [session.execute_async(SELECT) for _ in range(max(1, a.requests))]
            for f in futures:
                try:
                    results.append(rows_report(f.result()))
                except Exception as e:
                    results.append({"error": describe(e)})
        elif a.action == "insert-large":
            blob = bytes((i * 7 + 3) & 0xFF for i in range(a.blob_size))
            try:
                session.execute("INSERT INTO ks.t (k, v) VALUES (%s, %s)", (1, blob))
                results.append({"ok": True})
            except Exception as e:
                results.append({"error": describe(e)})
    except Exception as e:
        error = describe(e)
    finally:
        try:
            cluster.shutdown()
        except Exception as e:  # pragma: no cover
            report["shutdown_error"] = describe(e)
    report["results"] = results
    report["error"] = error
    print(json.dumps(report))
    failed = error is not None or any("error" in r for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
