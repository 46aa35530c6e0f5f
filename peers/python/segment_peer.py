"""JSON batch peer around the Python Cassandra driver's protocol v5 framing.

Reads a JSON array of operations on stdin, writes a JSON array of results on
stdout (same order, each carrying the operation's "id"). See README.md for the
contract. `--version` prints the wrapped versions as JSON.

What is the driver's code and what is ours:
  * Frame (segment) header/payload decoding, CRC24/CRC32 checks, LZ4
    (de)compression: `cassandra.segment.SegmentCodec` with the codec objects
    and lz4 functions `cassandra/connection.py` configures for v5.
  * Feeding, frame reassembly and envelope extraction: the driver's
    `Connection.process_io_buffer` / `_process_segment_buffer` /
    `_read_frame_header` on a socket-less Connection (object.__new__), fed the
    way its reactors do (`_iobuf.write(chunk)` then `process_io_buffer()`).
  * Ours (minimal): the two sinks `defunct` (first error stops the op) and
    `process_msg` (records the envelope), a SegmentCodec subclass that only
    records each decoded frame, the "layer": "frames" loop (the first half of
    process_io_buffer without envelope parsing), and the end-of-input checks:
    the driver simply waits for more bytes, so leftover bytes would otherwise
    be dropped silently; we report them as "truncated" / "partial envelope".
  * Envelope "version" is the raw wire byte read from the driver's buffer; the
    driver itself keeps only `byte & 0x7F` (drops the direction bit).
"""
import io
import json
import sys

import cassandra
import lz4
from cassandra import connection as drv
from cassandra.segment import CRC32_LENGTH, SegmentCodec

FORMATS = ("uncompressed", "lz4")


def _describe(exc):
    """"<exception class>: <message>", module-qualified unless builtin."""
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else "%s.%s" % (cls.__module__, cls.__qualname__)
    return "%s: %s" % (name, exc)


class _Stop(Exception):
    """Raised from Connection.defunct: the driver would close the connection."""

    def __init__(self, exc):
        super().__init__(exc)
        self.exc = exc


class _RecordingCodec(SegmentCodec):
    """The driver's codec unchanged, plus a record of every frame it decodes."""

    def __init__(self, base, frames):
        super().__init__(base.compressor, base.decompressor)
        self.frames = frames
        self.wire_bytes = 0  # on-wire bytes of the frames decoded so far

    def decode(self, buffer, header):
        segment = super().decode(buffer, header)
        lz4_fmt = bool(self.compression)
        self.wire_bytes += self.header_length_with_crc + header.payload_length + CRC32_LENGTH
        self.frames.append({
            "self_contained": bool(segment.is_self_contained),
            "payload_length": len(segment.payload),
            "compressed_length": header.payload_length if lz4_fmt else None,
            "uncompressed_length": header.uncompressed_payload_length if lz4_fmt else None,
            "payload_hex": bytes(segment.payload).hex(),
        })
        return segment


class _PeerConnection(drv.Connection):
    """A Connection without a socket: only its receive path is exercised."""

    def defunct(self, exc):
        raise _Stop(exc)

    def process_msg(self, header, body):
        # Called while the driver's envelope buffer still starts with this
        # envelope's header, so its first byte is the raw version byte.
        raw_version = self._io_buffer.cql_frame_buffer.getvalue()[0]
        self.envelopes.append({
            "version": raw_version,
            "flags": header.flags,
            "stream": header.stream,
            "opcode": header.opcode,
            "length": header.end_pos - header.body_offset,
            "body_hex": bytes(body).hex(),
        })


def _new_connection(fmt):
    conn = object.__new__(_PeerConnection)
    conn.endpoint = "segment_peer"  # carried by the driver's CrcMismatchException
    conn._io_buffer = drv._ConnectionIOBuffer(conn)
    conn.compressor = drv.lz4_compress if fmt == "lz4" else None
    conn._enable_checksumming()  # driver picks segment_codec_lz4 / _no_compression
    conn.frames, conn.envelopes = [], []
    conn._segment_codec = _RecordingCodec(conn._segment_codec, conn.frames)
    return conn


def _feed_frames_only(conn):
    """process_io_buffer's segment half, without parsing envelopes."""
    iob = conn._io_buffer
    while iob.readable_io_bytes():
        conn._process_segment_buffer()
        iob.reset_io_buffer()
        if not iob.has_consumed_segment:
            return


def _dropped_error(conn, at_end, fed):
    """Bytes fed that are neither in a decoded frame nor still buffered.

    The driver discards a partial frame header (fewer bytes than a header)
    left in its read buffer at the end of a read; say so instead of hiding it.
    """
    dropped = fed - conn._segment_codec.wire_bytes - conn._io_buffer.readable_io_bytes()
    if not dropped:
        return None
    if at_end:
        return ("truncated: input ends inside a frame header (%d of %d bytes; "
                "the driver discards them)" % (dropped, conn._segment_codec.header_length_with_crc))
    return ("driver dropped %d bytes: a partial frame header left at the end of "
            "a read (after input byte %d) is discarded" % (dropped, fed))


def _leftover_error(conn, parse_envelopes):
    """Describe bytes the driver is still holding at end of input, if any."""
    iob = conn._io_buffer
    pending_io = iob.readable_io_bytes()
    pending_env = iob.readable_cql_frame_bytes() if parse_envelopes else 0
    if pending_io:
        codec = conn._segment_codec
        hlen = codec.header_length_with_crc
        if pending_io < hlen:  # (today the driver drops these: see _dropped_error)
            msg = "truncated: input ends inside a frame header (%d of %d bytes)" % (pending_io, hlen)
        else:
            header = codec.decode_header(io.BytesIO(iob.io_buffer.getvalue()))
            need = hlen + header.payload_length + CRC32_LENGTH
            msg = "truncated: input ends inside a frame payload/trailer (%d of %d bytes)" % (pending_io, need)
        if pending_env:
            msg += "; %d bytes of envelope data also buffered" % pending_env
        return msg
    if pending_env:
        frame = conn._current_frame
        want = "%d" % frame.end_pos if frame else "at least 9"
        return "partial envelope at end of input (%d of %s bytes)" % (pending_env, want)
    return None


def decode(op):
    fmt = op["format"]
    if fmt not in FORMATS:
        raise ValueError("unknown format %r" % fmt)
    layer = op.get("layer", "envelopes")
    if layer not in ("envelopes", "frames"):
        raise ValueError("unknown layer %r" % layer)
    data = bytes.fromhex(op["input_hex"])
    chunk = int(op.get("chunk_size") or len(data) or 1)
    if chunk < 1:
        raise ValueError("chunk_size must be >= 1")
    conn = _new_connection(fmt)
    result = {"id": op.get("id"), "ok": True, "frames": conn.frames, "envelopes": conn.envelopes}
    try:
        error = None
        for i in range(0, len(data), chunk):
            conn._iobuf.write(data[i:i + chunk])  # as the driver's reactors do
            if layer == "envelopes":
                conn.process_io_buffer()
            else:
                _feed_frames_only(conn)
            error = _dropped_error(conn, i + chunk >= len(data), min(i + chunk, len(data)))
            if error:
                break
        error = error or _leftover_error(conn, layer == "envelopes")
    except _Stop as stop:
        error = _describe(stop.exc)
    if error:
        result["ok"], result["error"] = False, error
    return result


def encode(op):
    fmt = op["format"]
    if fmt not in FORMATS:
        raise ValueError("unknown format %r" % fmt)
    codec = drv.segment_codec_lz4 if fmt == "lz4" else drv.segment_codec_no_compression
    buf = io.BytesIO()
    # _encode_segment writes exactly one frame with the caller's flag;
    # SegmentCodec.encode would choose the flag (and split) by itself.
    codec._encode_segment(buf, bytes.fromhex(op["payload_hex"]), bool(op["self_contained"]))
    return {"id": op.get("id"), "ok": True, "output_hex": buf.getvalue().hex()}


OPS = {"decode": decode, "encode": encode}


def run_op(op):
    ident = op.get("id") if isinstance(op, dict) else None
    handler = OPS.get(op.get("op")) if isinstance(op, dict) else None
    if handler is None:
        return {"id": ident, "ok": False, "error": "unknown op"}
    try:
        return handler(op)
    except Exception as exc:  # never crash the batch
        return {"id": ident, "ok": False, "error": _describe(exc)}


def version_info():
    compiled = not drv.__file__.endswith(".py")
    return {
        "peer": "python cassandra-driver %s" % cassandra.__version__,
        "cassandra_driver": cassandra.__version__,
        "lz4": lz4.__version__,
        "python": sys.version.split()[0],
        "connection_module": "cython-compiled" if compiled else "pure python",
    }


def main(argv):
    if "--version" in argv:
        print(json.dumps(version_info()))
        return 0
    ops = json.load(sys.stdin)
    if not isinstance(ops, list):
        print("segment_peer: stdin must be a JSON array of operations", file=sys.stderr)
        return 2
    json.dump([run_op(op) for op in ops], sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
