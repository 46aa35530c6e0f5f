"""Times the Python driver's protocol v5 framing on the kit's benchmark inputs.

    python bench_segment.py --data build/bench/data --out build/bench/python.json [--runs 5]

Inputs come from reference/cqlframe/benches/gen_data.py (reference/cqlframe/benches/run.sh makes them): for
each case, `stream-*.bin` is one frame repeated. All the work timed is driver code:

* decode: the stream is written into a socket-less `Connection`'s read buffer in reads of at
  most 64 KiB that end on frame boundaries (the driver loses a frame header split across reads)
  and `Connection.process_io_buffer()` runs after each write, as the driver's reactors do after
  draining a socket. That is `SegmentCodec.decode_header` (CRC24) and `decode` (CRC32, LZ4 via
  the driver's lz4 wrappers), then the driver's envelope extraction (`_read_frame_header`, body
  slicing) up to `process_msg`, which is overridden to only count (message decoding is not
  framing).
* encode: `SegmentCodec._encode_segment` of the one envelope into a fresh BytesIO (one frame;
  what `SegmentCodec.encode` does per piece).

The driver has no CRC32C: those cases are skipped. Each case is timed `--runs` times with
`timeit` (loop count doubled until a run lasts 0.2 s, `--min-seconds`); the median is reported, all runs listed.
"""
import argparse
import io
import json
import os
import statistics
import sys
import timeit

import cassandra
from cassandra import connection as drv

READ_SIZE = 64 * 1024


class _Conn(drv.Connection):
    """A Connection without a socket; only its receive path runs."""

    def defunct(self, exc):
        raise exc

    def process_msg(self, header, body):
        self.delivered += len(body)


def new_connection(fmt):
    conn = object.__new__(_Conn)
    conn.endpoint = "bench"
    conn._io_buffer = drv._ConnectionIOBuffer(conn)
    conn.compressor = drv.lz4_compress if fmt == "lz4" else None
    conn._enable_checksumming()
    conn.delivered = 0
    return conn


def decode_stream(conn, reads):
    for chunk in reads:
        conn._iobuf.write(chunk)
        conn.process_io_buffer()


def measure(fn, runs, min_seconds):
    timer = timeit.Timer(fn)
    number = 1
    while True:  # double the loop count until one run lasts min_seconds
        t = timer.timeit(number)
        if t >= min_seconds:
            break
        number *= 2
    per = [t / number]
    for _ in range(runs - 1):
        per.append(timer.timeit(number) / number)
    return per


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--out")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--min-seconds", type=float, default=0.2, help="shortest run")
    args = ap.parse_args(argv)
    with open(os.path.join(args.data, "manifest.json")) as f:
        manifest = json.load(f)
    results = []
    for case in manifest["cases"]:
        if case["checksum"] != "crc32":
            continue  # the driver has CRC32 only

        def read(name):
            with open(os.path.join(args.data, name), "rb") as f:
                return f.read()

        fmt, size, frames = case["format"], case["size"], case["frames"]
        envelope, frame, stream = read(case["envelope_file"]), read(case["frame_file"]), read(case["stream_file"])
        # Reads end on frame boundaries: the driver drops a partial frame header left at the end
        # of a read (peer deviation 1 in README.md), so reads cut anywhere would desync it.
        per_read = max(1, READ_SIZE // case["frame_len"]) * case["frame_len"]
        reads = [stream[i:i + per_read] for i in range(0, len(stream), per_read)]
        conn = new_connection(fmt)
        decode_stream(conn, reads)
        assert conn.delivered == (size - 9) * frames, (case["name"], conn.delivered)
        assert not conn._io_buffer.readable_io_bytes()

        codec = conn._segment_codec

        def encode():
            buf = io.BytesIO()
            codec._encode_segment(buf, envelope, True)
            return buf

        out = encode().getvalue()
        if fmt == "uncompressed":
            assert out == frame, "encoded frame differs from the reference's"
        check = new_connection(fmt)
        decode_stream(check, [out])
        assert check.delivered == size - 9

        for op, fn, per_call_frames in (
            ("decode", lambda: decode_stream(conn, reads), frames),
            ("encode", encode, 1),
        ):
            runs = [t * 1e9 / per_call_frames for t in measure(fn, args.runs, args.min_seconds)]
            r = {"impl": "python", "op": op, "format": fmt, "checksum": "crc32", "size": size,
                 "ns_per_frame": statistics.median(runs), "runs_ns_per_frame": runs}
            print("  python %s %s-crc32/%d: %.0f ns/frame" % (op, fmt, size, r["ns_per_frame"]), file=sys.stderr)
            results.append(r)
    doc = {
        "impl": "python",
        "package": "cassandra-driver %s" % cassandra.__version__,
        "connection_module": "cython-compiled" if not drv.__file__.endswith(".py") else "pure python",
        "python": sys.version.split()[0],
        "results": results,
    }
    text = json.dumps(doc, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
