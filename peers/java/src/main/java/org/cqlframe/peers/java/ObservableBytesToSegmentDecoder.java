package org.cqlframe.peers.java;

import com.datastax.oss.driver.internal.core.protocol.BytesToSegmentDecoder;
import com.datastax.oss.protocol.internal.SegmentCodec;
import io.netty.buffer.ByteBuf;

/**
 * The driver's BytesToSegmentDecoder, unchanged, with its buffered-but-undecoded byte count made
 * visible: at end of input the driver just waits, the harness must report those bytes instead.
 */
final class ObservableBytesToSegmentDecoder extends BytesToSegmentDecoder {

  ObservableBytesToSegmentDecoder(SegmentCodec<ByteBuf> segmentCodec) {
    super(segmentCodec);
  }

  int pendingBytes() {
    return actualReadableBytes();
  }
}
