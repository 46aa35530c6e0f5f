package org.cqlframe.peers.java;

import com.datastax.oss.protocol.internal.FrameCodec;
import com.datastax.oss.protocol.internal.Message;
import com.datastax.oss.protocol.internal.PrimitiveCodec;
import io.netty.buffer.ByteBuf;

/**
 * Harness-supplied message decoders for "messages": "opaque": every opcode of every version
 * decodes to its raw body, bounded by the envelope's declared length.
 *
 * <p>The driver is a client: it only has decoders for response opcodes, and they read the body
 * structurally. That makes arbitrary test bodies (requests, random bytes) fail in CQL message
 * decoding, which is not the framing layer under test. This swaps only that last step; the
 * framing (SegmentCodec, both Netty decoders, FrameCodec's header handling) stays driver code.
 */
final class OpaqueMessages implements FrameCodec.CodecGroup {

  /** The body as bytes; nothing else is interpreted. */
  static final class Opaque extends Message {
    final byte[] body;

    Opaque(int opcode, byte[] body) {
      super(true, opcode);
      this.body = body;
    }
  }

  private final RecordingFrameCodec.Bounds bounds;

  OpaqueMessages(RecordingFrameCodec.Bounds bounds) {
    this.bounds = bounds;
  }

  @Override
  public void registerCodecs(Registry registry) {
    for (int version = 0; version < 128; version++) {
      for (int opcode = 0; opcode < 256; opcode++) {
        registry.addDecoder(new Codec(opcode, version));
      }
    }
  }

  private final class Codec extends Message.Codec {
    Codec(int opcode, int version) {
      super(opcode, version);
    }

    @Override
    public <B> Message decode(B source, PrimitiveCodec<B> decoder) {
      ByteBuf buf = (ByteBuf) source;
      // Reading past the end throws, as any driver message decoder would on a short body.
      byte[] body = new byte[bounds.remainingBody(buf)];
      buf.readBytes(body);
      return new Opaque(opcode, body);
    }

    @Override
    public <B> void encode(B dest, Message message, PrimitiveCodec<B> encoder) {
      throw new UnsupportedOperationException("decode only");
    }

    @Override
    public int encodedSize(Message message) {
      throw new UnsupportedOperationException("decode only");
    }
  }
}
