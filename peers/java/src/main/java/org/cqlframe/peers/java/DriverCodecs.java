package org.cqlframe.peers.java;

import com.datastax.dse.protocol.internal.DseProtocolV1ClientCodecs;
import com.datastax.dse.protocol.internal.DseProtocolV2ClientCodecs;
import com.datastax.dse.protocol.internal.ProtocolV4ClientCodecsForDse;
import com.datastax.oss.driver.api.core.context.DriverContext;
import com.datastax.oss.driver.internal.core.protocol.BuiltInCompressors;
import com.datastax.oss.driver.internal.core.protocol.ByteBufPrimitiveCodec;
import com.datastax.oss.protocol.internal.Compressor;
import com.datastax.oss.protocol.internal.FrameCodec;
import com.datastax.oss.protocol.internal.PrimitiveCodec;
import com.datastax.oss.protocol.internal.ProtocolV3ClientCodecs;
import com.datastax.oss.protocol.internal.ProtocolV5ClientCodecs;
import com.datastax.oss.protocol.internal.ProtocolV6ClientCodecs;
import com.datastax.oss.protocol.internal.SegmentCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.lang.reflect.Proxy;

/**
 * The driver's codecs for one wire format, built the way DefaultDriverContext builds them
 * (buildPrimitiveCodec, buildCompressor, buildSegmentCodec, buildFrameCodec), so that the code
 * paths exercised are the ones a real session uses.
 */
final class DriverCodecs {

  /** Lz4Compressor only asks its context for a session name (for a log line). */
  private static final DriverContext CONTEXT =
      (DriverContext)
          Proxy.newProxyInstance(
              DriverCodecs.class.getClassLoader(),
              new Class<?>[] {DriverContext.class},
              (proxy, method, args) -> {
                if (method.getName().equals("getSessionName")) {
                  return "cqlframe-peer";
                }
                throw new UnsupportedOperationException("DriverContext." + method.getName());
              });

  final PrimitiveCodec<ByteBuf> primitive;
  final Compressor<ByteBuf> compressor;
  final SegmentCodec<ByteBuf> segmentCodec;

  private DriverCodecs(String compression) {
    // DefaultNettyOptions.allocator() is ByteBufAllocator.DEFAULT.
    primitive = new ByteBufPrimitiveCodec(ByteBufAllocator.DEFAULT);
    // Same switch the driver uses for advanced.protocol.compression = none | lz4.
    compressor = BuiltInCompressors.newInstance(compression, CONTEXT);
    segmentCodec = new SegmentCodec<>(primitive, compressor);
  }

  /** format is the JSON contract's "uncompressed" or "lz4". */
  static DriverCodecs forFormat(String format) {
    switch (format) {
      case "uncompressed":
        return new DriverCodecs("none");
      case "lz4":
        return new DriverCodecs("lz4");
      default:
        throw new IllegalArgumentException("unknown format: " + format);
    }
  }

  /** The response decoders DefaultDriverContext.buildFrameCodec registers, in its order. */
  static FrameCodec.CodecGroup[] clientMessageCodecs() {
    return new FrameCodec.CodecGroup[] {
      new ProtocolV3ClientCodecs(),
      new ProtocolV4ClientCodecsForDse(),
      new ProtocolV5ClientCodecs(),
      new ProtocolV6ClientCodecs(),
      new DseProtocolV1ClientCodecs(),
      new DseProtocolV2ClientCodecs()
    };
  }
}
