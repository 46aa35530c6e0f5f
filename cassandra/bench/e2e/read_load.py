"""The Python driver's side of cassandra/bench/e2e: closed-loop reads of one blob at a fixed
number of requests in flight, per payload checksum, with the node's CPU time read from /proc.

    python read_load.py setup PORT SIZE...      writes e2e.blobs, prints {size: sha256}
    python read_load.py load PORT NODE_PID --sizes 16384,131072 --in-flight 1,4,16,64 \
        --seconds 2 --max-requests 20000 --warmup 0.5 --client-warmup 2 --compression none \
        --variants plain,crc32,crc32c --sha256 16384=HEX,131072=HEX [--via proxy=PORT,relay=PORT]

`setup` writes one row per size (k = size, v = that many random bytes, which LZ4 cannot
compress) with the released driver. `load` takes the options e2e.py gives both clients (the
Java one, ReadLoad.java, the same) and opens one session per variant: `plain` the driver as released (CRC32), `crc32` and `crc32c`
through conformance/drivers/python/frame_checksum.py asking for that checksum (CRC32 is not
asked for, it is the default, but the frames go through the same codec as CRC32C); `proxy`,
`sleep`, `spin` and `relay` the driver as released through the port `--via` gives them
(`cqlframe proxy` as it starts, with --spin 0 and with --spin 300, and a bare TCP relay,
cassandra/bench/e2e/proxy.py). Each
session first reads each size for `--client-warmup` seconds at 16 in flight (the Java client's
JIT compiler does its work there, not in the first cells). Then for every size and number in
flight it runs each variant in turn (in the order given, rotated from cell to cell): warm-up,
then the measured window, bounded by `seconds` and `max_requests`, the
requests in flight at its end included. Prints one JSON line per measurement: requests, seconds,
the node's and this process's utime+stime over the window (clock ticks of /proc/PID/stat),
latency p50/p99/mean in microseconds, and the payload checksum the session's connections
negotiated. Every response's blob must have the size asked, and the first of each session the
setup's SHA-256; exit status 1 otherwise or on any request error.
"""

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "conformance" / "drivers" / "python"))

from adapter import checksums_in_use  # noqa: E402  (conformance/drivers/python)
from cassandra import ProtocolVersion  # noqa: E402
from cassandra.cluster import Cluster, DefaultConnection  # noqa: E402
from frame_checksum import PayloadChecksum, with_frame_checksum  # noqa: E402

CONNECTION = {
    "plain": DefaultConnection,
    "crc32": with_frame_checksum(DefaultConnection, PayloadChecksum.CRC32),
    "crc32c": with_frame_checksum(DefaultConnection, PayloadChecksum.CRC32C),
    "proxy": DefaultConnection,
    "sleep": DefaultConnection,
    "spin": DefaultConnection,
    "relay": DefaultConnection,
}


def cpu_ticks(pid: int | str) -> int:
    """utime + stime of a process, all its threads, in clock ticks (proc(5))."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def percentile(sorted_values: list[int], q: float) -> int:
    """Nearest rank."""
    return sorted_values[max(0, -(-len(sorted_values) * q // 100) - 1)]


class ClosedLoop:
    """`in_flight` requests outstanding until the window ends, each answer starting the next."""

    def __init__(self, session, statement, size: int, in_flight: int, seconds: float, max_requests: int):
        self.session, self.statement, self.size = session, statement, size
        self.in_flight, self.seconds, self.max_requests = in_flight, seconds, max_requests
        self.lock = threading.RLock()  # a callback may run inside add_callbacks
        self.done = threading.Event()
        self.latencies: list[int] = []
        self.errors: list[str] = []
        self.issued = self.outstanding = 0
        self.deadline = 0.0

    def run(self) -> None:
        self.deadline = time.monotonic() + self.seconds
        with self.lock:
            for _ in range(self.in_flight):
                self._issue()
        self.done.wait()

    def _issue(self) -> None:
        """With the lock held: one more request, unless the window is over."""
        if self.errors or self.issued >= self.max_requests or time.monotonic() >= self.deadline:
            if self.outstanding == 0:
                self.done.set()
            return
        self.issued += 1
        self.outstanding += 1
        start = time.perf_counter_ns()
        future = self.session.execute_async(self.statement)
        future.add_callbacks(self._answered, self._failed, callback_args=(start,), errback_args=(start,))

    def _answered(self, rows, start: int) -> None:
        elapsed = time.perf_counter_ns() - start
        with self.lock:
            self.outstanding -= 1
            if len(rows) != 1 or len(rows[0].v) != self.size:
                self.errors.append(f"wrong answer: {len(rows)} rows")
            self.latencies.append(elapsed)
            self._issue()

    def _failed(self, exc, start: int) -> None:
        with self.lock:
            self.outstanding -= 1
            self.errors.append(f"{type(exc).__name__}: {exc}")
            self._issue()


def setup(port: int, sizes: list[int]) -> int:
    cluster = Cluster(["127.0.0.1"], port=port, protocol_version=ProtocolVersion.V5, compression=False)
    session = cluster.connect()
    session.execute("CREATE KEYSPACE IF NOT EXISTS e2e WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE IF NOT EXISTS e2e.blobs (k int PRIMARY KEY, v blob)")
    digests = {}
    for size in sizes:
        blob = os.urandom(size)
        session.execute("INSERT INTO e2e.blobs (k, v) VALUES (%s, %s)", (size, blob))
        digests[size] = hashlib.sha256(blob).hexdigest()
    cluster.shutdown()
    print(json.dumps(digests))
    return 0


def load(o: argparse.Namespace) -> int:
    sessions = {}
    for variant in o.variants:
        port = o.via.get(variant, o.port)
        cluster = Cluster(["127.0.0.1"], port=port, protocol_version=ProtocolVersion.V5,
                          compression="lz4" if o.compression == "lz4" else False,
                          connection_class=CONNECTION[variant])
        session = cluster.connect()
        session.default_timeout = 30
        sessions[variant] = (cluster, session, session.prepare("SELECT v FROM e2e.blobs WHERE k = ?"))
    for size in o.sizes:
        for variant, (_, session, select) in sessions.items():
            got = session.execute(select, (size,)).one().v
            if hashlib.sha256(got).hexdigest() != o.sha256[size]:
                print(f"read_load: {variant}: the {size}-byte blob differs from what setup wrote", file=sys.stderr)
                return 1
            ClosedLoop(session, select.bind((size,)), size, 16, o.client_warmup, o.max_requests).run()
    failed = False
    cell = 0
    for size in o.sizes:
        for in_flight in o.in_flight:
            order = list(sessions)[cell % len(sessions):] + list(sessions)[:cell % len(sessions)]
            cell += 1
            for variant in order:
                cluster, session, select = sessions[variant]
                statement = select.bind((size,))
                ClosedLoop(session, statement, size, in_flight, o.warmup, o.max_requests).run()
                loop = ClosedLoop(session, statement, size, in_flight, o.seconds, o.max_requests)
                server, client, started = cpu_ticks(o.node_pid), cpu_ticks("self"), time.monotonic()
                loop.run()
                elapsed = time.monotonic() - started
                server, client = cpu_ticks(o.node_pid) - server, cpu_ticks("self") - client
                lat = sorted(loop.latencies)
                negotiated = checksums_in_use(cluster) if variant.startswith("crc32") else None
                print(json.dumps({
                    "driver": "python", "variant": variant, "negotiated": negotiated,
                    "compression": o.compression, "blob": size, "in_flight": in_flight,
                    "requests": len(lat), "seconds": elapsed, "server_cpu_ticks": server,
                    "client_cpu_ticks": client, "p50_us": percentile(lat, 50) / 1e3 if lat else None,
                    "p99_us": percentile(lat, 99) / 1e3 if lat else None,
                    "mean_us": sum(lat) / len(lat) / 1e3 if lat else None, "errors": loop.errors[:3],
                }), flush=True)
                failed |= bool(loop.errors) or not lat
    for cluster, _, _ in sessions.values():
        cluster.shutdown()
    return 1 if failed else 0


def main() -> int:
    if len(sys.argv) >= 4 and sys.argv[1] == "setup":
        return setup(int(sys.argv[2]), [int(s) for s in sys.argv[3:]])
    numbers = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    p = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1])
    p.add_argument("command", choices=["load"])
    p.add_argument("port", type=int)
    p.add_argument("node_pid", type=int)
    p.add_argument("--sizes", type=numbers, required=True)
    p.add_argument("--in-flight", type=numbers, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--max-requests", type=int, required=True)
    p.add_argument("--warmup", type=float, required=True)
    p.add_argument("--client-warmup", type=float, required=True)
    p.add_argument("--compression", choices=["none", "lz4"], required=True)
    p.add_argument("--variants", type=lambda s: s.split(","), required=True)
    p.add_argument("--via", type=lambda s: {k: int(v) for k, v in (x.split("=") for x in s.split(","))},
                   default={}, help="the port each of these variants connects to instead of the node's")
    p.add_argument("--sha256", type=lambda s: {int(k): v for k, v in (x.split("=") for x in s.split(","))},
                   required=True)
    return load(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
