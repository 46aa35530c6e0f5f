"""The live workload of cassandra/run.sh: the Python driver (cassandra-driver, from the
conformance adapter's venv) on protocol v5 writing and reading rows large enough to span many
frames, on connections with or without LZ4 frames.

    python workload.py PORT (lz4|none)
    python workload.py PORT lz4-period


Writes 12 rows of 300 KB (every INSERT is a sequence of non-self-contained frames from the
driver), reads them back one by one and all at once (a 3.6 MB RESULT the server splits into
frames of 131054 bytes uncompressed, 131060 with LZ4), runs 200 small queries concurrently
(packed frames both ways), and checks every byte. Half the blobs are random (LZ4 stores those
frames), half repetitive (LZ4 compresses). Prints one JSON line; exit status 1 on any mismatch.

`lz4-period` writes one row whose 1024-byte value repeats every 256 bytes and reads it back
alone on an LZ4 connection: the node's answer is one frame that ends with that value, what the
LZ4 end-of-block faults of cassandra/proxy_test.py rewrite (as the conformance server does its
own rows, whose values have that period).
"""

import hashlib
import json
import os
import sys

from cassandra import ProtocolVersion
from cassandra.cluster import Cluster


def blob(k: int, size: int) -> bytes:
    if k % 2 == 0:
        return hashlib.sha256(str(k).encode()).digest() * (size // 32) + os.urandom(size % 32)
    return os.urandom(size)


def period_row(session) -> int:
    """One row whose value repeats every 256 bytes, written and read back alone."""
    session.execute("CREATE TABLE IF NOT EXISTS cqlframe_live.t_period (k int PRIMARY KEY, v blob)")
    value = bytes((7 * i + 1) % 256 for i in range(1024))
    session.execute("INSERT INTO cqlframe_live.t_period (k, v) VALUES (0, %s)", (value,))
    got = session.execute("SELECT v FROM cqlframe_live.t_period WHERE k = 0").one()
    same = got is not None and got.v == value
    print(json.dumps({"mode": "lz4-period", "bytes": len(value), "mismatches": [] if same else [0]}))
    return 0 if same else 1


def main() -> int:
    port, mode = int(sys.argv[1]), sys.argv[2]
    cluster = Cluster(
        ["127.0.0.1"],
        port=port,
        protocol_version=ProtocolVersion.V5,
        compression="lz4" if mode.startswith("lz4") else False,
        connect_timeout=20,
    )
    session = cluster.connect()
    session.default_timeout = 60
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS cqlframe_live WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    if mode == "lz4-period":
        status = period_row(session)
        cluster.shutdown()
        return status
    table = f"cqlframe_live.t_{mode}"
    session.execute(f"CREATE TABLE IF NOT EXISTS {table} (k int PRIMARY KEY, v blob)")
    insert = session.prepare(f"INSERT INTO {table} (k, v) VALUES (?, ?)")
    select_one = session.prepare(f"SELECT v FROM {table} WHERE k = ?")
    rows = {k: blob(k, 300_000) for k in range(12)}
    for k, v in rows.items():
        session.execute(insert, (k, v))
    bad = []
    for k, v in rows.items():
        got = session.execute(select_one, (k,)).one()
        if got is None or got.v != v:
            bad.append(k)
    everything = {r.k: r.v for r in session.execute(f"SELECT k, v FROM {table}")}
    if everything != rows:
        bad.append("select-all")
    futures = [session.execute_async("SELECT release_version FROM system.local") for _ in range(200)]
    versions = {f.result().one().release_version for f in futures}
    cluster.shutdown()
    print(json.dumps({
        "mode": mode,
        "rows": len(rows),
        "bytes_written": sum(len(v) for v in rows.values()),
        "release_version": sorted(versions),
        "mismatches": bad,
    }))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
