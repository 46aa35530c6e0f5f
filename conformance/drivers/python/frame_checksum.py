"""CRC32C frame checksums for cassandra-driver 3.x (spec/framing_v6.adoc, "Payload checksum").

The driver has no FRAME_CHECKSUM option, so this module adds one through its extension point,
`Cluster(connection_class=...)`: `with_frame_checksum(DefaultConnection)` returns a connection
class that

- reads `FRAME_CHECKSUMS` from the SUPPORTED answering its own OPTIONS and sends
  `FRAME_CHECKSUM=crc32c` in STARTUP only when that node listed it (NEG-4, NEG-5); otherwise it
  sends no FRAME_CHECKSUM and the connection uses CRC32, as plain protocol v5;
- after READY or AUTHENTICATE frames with `ChecksumSegmentCodec`: the checksum bit set on every
  frame it sends when CRC32C was negotiated and clear otherwise (FMT-13), trailers of the
  negotiated checksum (CRC-2, CRC-3), and on every frame it receives the checksum bit checked
  against the negotiation (RECV-3) and the trailer verified with the negotiated checksum.

A mismatch raises the driver's own `CrcException`, which it turns into a defunct connection.
"""
import enum
import zlib

import google_crc32c
from cassandra import DriverException
from cassandra.protocol import ProtocolVersion, StartupMessage, SupportedMessage, read_uint_le, \
    write_uint_le
from cassandra.segment import CRC24_LENGTH, CRC32_INITIAL, CrcException, Segment, \
    SegmentCodec, compute_crc24


class PayloadChecksum(enum.Enum):
    """The payload checksums of FRAME_CHECKSUM, by their names on the wire."""
    CRC32 = "crc32"
    CRC32C = "crc32c"

    def compute(self, payload):
        if self is PayloadChecksum.CRC32C:
            return google_crc32c.value(bytes(payload))  # CRC-3: CRC-32/ISCSI, unseeded
        return zlib.crc32(payload, CRC32_INITIAL)       # CRC-2: seeded with FA 2D 55 CA


class ChecksumSegmentCodec(SegmentCodec):
    """The driver's segment codec with the checksum bit and a chosen payload checksum."""

    def __init__(self, base, checksum):
        super().__init__(base.compressor, base.decompressor)
        self.checksum = checksum
        self._self_contained_bit = self.FLAG_OFFSET + (17 if self.compression else 0)
        # FMT-13: word bit 18 of the uncompressed header, bit 35 of the LZ4 one (FMT-9).
        self._checksum_bit = self._self_contained_bit + 1
        self._bit_value = int(checksum is PayloadChecksum.CRC32C)

    def encode_header(self, buffer, payload_length, uncompressed_length, is_self_contained):
        if payload_length > Segment.MAX_PAYLOAD_LENGTH:
            raise DriverException("Payload length exceeds Segment.MAX_PAYLOAD_LENGTH")
        word = payload_length | self._bit_value << self._checksum_bit
        if self.compression:
            word |= uncompressed_length << 17
        if is_self_contained:
            word |= 1 << self._self_contained_bit
        write_uint_le(buffer, word, size=self.header_length)
        write_uint_le(buffer, compute_crc24(word, self.header_length), size=CRC24_LENGTH)

    def _encode_segment(self, buffer, payload, is_self_contained):
        content_length = len(payload)
        encoded = payload
        if self.compression:
            compressed = self.compress(payload)
            if len(compressed) < content_length:
                encoded = compressed
            else:
                content_length = 0  # LZ4-2: stored, uncompressed length 0
        self.encode_header(buffer, len(encoded), content_length, is_self_contained)
        buffer.write(encoded)
        write_uint_le(buffer, self.checksum.compute(encoded))

    def decode_header(self, buffer):
        start = buffer.tell()
        word = int.from_bytes(buffer.read(self.header_length), "little")
        buffer.seek(start)
        header = super().decode_header(buffer)  # checks the CRC24 first (RECV-1)
        bit = word >> self._checksum_bit & 1
        if bit != self._bit_value:
            raise CrcException(
                "RECV-3: frame header {:x} has checksum bit {} but the connection negotiated {}"
                .format(word, bit, self.checksum.value))
        return header

    def decode(self, buffer, header):
        encoded = buffer.read(header.payload_length)
        received = read_uint_le(buffer)
        computed = self.checksum.compute(encoded)
        if received != computed:
            raise CrcException("{} mismatch on payload. Received {:x}, computed {:x}.".format(
                self.checksum.value.upper(), received, computed))
        payload = encoded
        if self.compression and header.uncompressed_payload_length > 0:
            payload = self.decompress(encoded, header.uncompressed_payload_length)
        return Segment(payload, header.is_self_contained)


def with_frame_checksum(connection_class, wanted=PayloadChecksum.CRC32C):
    """A subclass of the driver's `connection_class` that asks for `wanted` where offered."""

    class FrameChecksumConnection(connection_class):
        frame_checksum = PayloadChecksum.CRC32
        negotiated = None  # the payload checksum once the connection is framed

        def _handle_options_response(self, options_response):
            if isinstance(options_response, SupportedMessage):
                listed = {name.lower() for name in
                          options_response.options.get("FRAME_CHECKSUMS", ())}
                offered = wanted.value in listed and \
                    ProtocolVersion.has_checksumming_support(self.protocol_version)
                self.frame_checksum = wanted if offered else PayloadChecksum.CRC32
            return super()._handle_options_response(options_response)

        def send_msg(self, msg, *args, **kwargs):
            if isinstance(msg, StartupMessage) and self.frame_checksum is not PayloadChecksum.CRC32:
                msg.options["FRAME_CHECKSUM"] = self.frame_checksum.value
            return super().send_msg(msg, *args, **kwargs)

        def _enable_checksumming(self):
            super()._enable_checksumming()
            self._segment_codec = ChecksumSegmentCodec(self._segment_codec, self.frame_checksum)
            self.negotiated = self.frame_checksum

    FrameChecksumConnection.__name__ = "FrameChecksum" + connection_class.__name__
    FrameChecksumConnection.__qualname__ = FrameChecksumConnection.__name__
    return FrameChecksumConnection
