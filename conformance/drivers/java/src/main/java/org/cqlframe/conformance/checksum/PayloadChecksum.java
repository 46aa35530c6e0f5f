package org.cqlframe.conformance.checksum;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/** The payload checksums of FRAME_CHECKSUM (spec/framing_v6.adoc), by their names on the wire. */
public enum PayloadChecksum {
  CRC32("crc32"),
  CRC32C("crc32c");

  /** The value of FRAME_CHECKSUMS and FRAME_CHECKSUM, lower case. */
  public final String wireName;

  PayloadChecksum(String wireName) {
    this.wireName = wireName;
  }

  /** CRC-3: CRC-32/ISCSI of the readable bytes, unseeded; the reader index does not move. */
  static int crc32c(ByteBuf payload) {
    CRC32C crc = new CRC32C();
    for (ByteBuffer b : payload.nioBuffers(payload.readerIndex(), payload.readableBytes())) {
      crc.update(b);
    }
    return (int) crc.getValue();
  }
}
