package org.cqlframe.peers.java;

import com.datastax.oss.protocol.internal.Frame;
import com.datastax.oss.protocol.internal.FrameCodec;
import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;

/**
 * The driver's FrameCodec, unchanged, that also keeps the raw bytes of every envelope it decodes.
 *
 * <p>SegmentToFrameDecoder hands FrameCodec.decode the segment payload (or a composite of the
 * slices of a sequence) and emits only decoded Frame objects, so decode() is the lowest level at
 * which the raw envelope is visible. The bytes kept are exactly those decode() consumed: FrameCodec
 * never slices the body to the declared length, the message decoder reads what it needs.
 */
final class RecordingFrameCodec extends FrameCodec<ByteBuf> {

  /** One decoded envelope: what the driver consumed (header + body) and what it made of it. */
  record Envelope(byte[] raw, Frame frame) {}

  /** Where the current envelope's declared body ends; read by {@link OpaqueMessages}. */
  static final class Bounds {
    private ByteBuf source;
    private int declaredEnd;

    /** Body bytes left to read, per the declared length (all of a substituted buffer). */
    int remainingBody(ByteBuf buf) {
      return buf == source ? declaredEnd - buf.readerIndex() : buf.readableBytes();
    }
  }

  final List<Envelope> decoded = new ArrayList<>();
  private final Bounds bounds;

  private RecordingFrameCodec(DriverCodecs codecs, Bounds bounds, CodecGroup... groups) {
    super(codecs.primitive, codecs.compressor, groups);
    this.bounds = bounds;
  }

  /** Message bodies decoded by the driver's own response decoders (faithful mode). */
  static RecordingFrameCodec withDriverMessages(DriverCodecs codecs) {
    return new RecordingFrameCodec(codecs, new Bounds(), DriverCodecs.clientMessageCodecs());
  }

  /** Message bodies taken as opaque bytes of the declared length (harness mode). */
  static RecordingFrameCodec withOpaqueMessages(DriverCodecs codecs) {
    Bounds bounds = new Bounds();
    return new RecordingFrameCodec(codecs, bounds, new OpaqueMessages(bounds));
  }

  @Override
  public Frame decode(ByteBuf source) {
    int start = source.readerIndex();
    bounds.source = source;
    bounds.declaredEnd =
        source.readableBytes() >= V3_ENCODED_HEADER_SIZE
            ? start + V3_ENCODED_HEADER_SIZE + source.getInt(start + V3_ENCODED_HEADER_SIZE - 4)
            : start;
    Frame frame = super.decode(source);
    byte[] raw = new byte[source.readerIndex() - start];
    source.getBytes(start, raw);
    decoded.add(new Envelope(raw, frame));
    return frame;
  }
}
