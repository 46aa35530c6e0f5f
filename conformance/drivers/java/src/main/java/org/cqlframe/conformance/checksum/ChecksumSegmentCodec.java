package org.cqlframe.conformance.checksum;

import com.datastax.oss.protocol.internal.Compressor;
import com.datastax.oss.protocol.internal.CrcMismatchException;
import com.datastax.oss.protocol.internal.NoopCompressor;
import com.datastax.oss.protocol.internal.PrimitiveCodec;
import com.datastax.oss.protocol.internal.Segment;
import com.datastax.oss.protocol.internal.SegmentCodec;
import com.datastax.oss.protocol.internal.util.Crc;
import io.netty.buffer.ByteBuf;
import java.util.List;

/**
 * The driver's segment codec with the checksum bit (FMT-13) and the connection's payload checksum.
 *
 * <p>Receiving, the checksum bit of every frame is checked against the negotiation (RECV-3), after
 * the driver's own CRC24 check (RECV-1). With CRC32 the driver's encoder and trailer check are
 * used as they are (its frames already have the bit clear); with CRC32C the frames it sends carry
 * the bit and CRC32C trailers (CRC-3, CRC-4) and the trailers it receives are checked with CRC32C.
 * A mismatch is the driver's {@link CrcMismatchException}, which closes the connection.
 */
final class ChecksumSegmentCodec extends SegmentCodec<ByteBuf> {
  private final PrimitiveCodec<ByteBuf> primitive;
  private final Compressor<ByteBuf> compressor;
  private final boolean compress;
  private final PayloadChecksum checksum;
  /** Bit of the header word: 18 uncompressed, 35 LZ4 (FMT-9). */
  private final int checksumBit;

  ChecksumSegmentCodec(
      PrimitiveCodec<ByteBuf> primitive, Compressor<ByteBuf> compressor, PayloadChecksum checksum) {
    super(primitive, compressor);
    this.primitive = primitive;
    this.compressor = compressor;
    this.compress = !(compressor instanceof NoopCompressor);
    this.checksum = checksum;
    this.checksumBit = compress ? 35 : 18;
  }

  @Override
  public void encode(Segment<ByteBuf> segment, List<Object> out) {
    if (checksum == PayloadChecksum.CRC32) {
      super.encode(segment, out);
      return;
    }
    ByteBuf payload = segment.payload;
    int contentLength = payload.readableBytes();
    if (compress) {
      payload.markReaderIndex();
      ByteBuf compressed = compressor.compressWithoutLength(payload);
      if (compressed.readableBytes() < contentLength) {
        payload.release();
        payload = compressed;
      } else {
        payload.resetReaderIndex();
        compressed.release();
        contentLength = 0; // LZ4-2: stored
      }
    }
    int payloadLength = payload.readableBytes();
    long word = payloadLength | 1L << checksumBit;
    if (compress) {
      word |= (long) contentLength << 17;
    }
    if (segment.isSelfContained) {
      word |= 1L << (checksumBit - 1);
    }
    int headerLength = headerLength();
    int headerCrc = Crc.computeCrc24(word, headerLength);
    ByteBuf header = primitive.allocate(headerLength + CRC24_LENGTH);
    for (int i = 0; i < headerLength; i++) {
      header.writeByte((int) (word >>> (8 * i)));
    }
    header.writeMediumLE(headerCrc);
    ByteBuf trailer = primitive.allocate(CRC32_LENGTH);
    trailer.writeIntLE(PayloadChecksum.crc32c(payload));
    out.add(header);
    out.add(payload);
    out.add(trailer);
  }

  @Override
  public Header decodeHeader(ByteBuf source) throws CrcMismatchException {
    long word = 0;
    for (int i = 0; i < headerLength(); i++) {
      word |= (source.getByte(source.readerIndex() + i) & 0xFFL) << (8 * i);
    }
    Header header = super.decodeHeader(source);
    boolean bit = (word >>> checksumBit & 1) == 1;
    if (bit != (checksum == PayloadChecksum.CRC32C)) {
      throw new CrcMismatchException(
          String.format(
              "RECV-3: frame header %x has checksum bit %d but the connection negotiated %s",
              word, bit ? 1 : 0, checksum.wireName));
    }
    return header;
  }

  @Override
  public Segment<ByteBuf> decode(Header header, ByteBuf source) throws CrcMismatchException {
    if (checksum == PayloadChecksum.CRC32) {
      return super.decode(header, source);
    }
    ByteBuf payload = source.readRetainedSlice(header.payloadLength);
    int received = source.readIntLE();
    source.release();
    int computed = PayloadChecksum.crc32c(payload);
    if (received != computed) {
      payload.release();
      throw new CrcMismatchException(
          String.format(
              "CRC32C mismatch on payload. Received %x, computed %x.", received, computed));
    }
    if (compress && header.uncompressedPayloadLength > 0) {
      ByteBuf content =
          compressor.decompressWithoutLength(payload, header.uncompressedPayloadLength);
      payload.release();
      payload = content;
    }
    return new Segment<>(payload, header.isSelfContained);
  }
}
