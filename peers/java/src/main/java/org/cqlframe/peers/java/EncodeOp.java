package org.cqlframe.peers.java;

import com.datastax.oss.protocol.internal.Segment;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * "encode": one frame from SegmentCodec.encode, which emits header, payload and trailer buffers
 * (SegmentToBytesEncoder writes them out in that order). For lz4 the driver itself decides to
 * store the payload raw when compressing does not make it smaller.
 */
final class EncodeOp {

  private EncodeOp() {}

  static ObjectNode run(JsonNode op) {
    DriverCodecs codecs = DriverCodecs.forFormat(Fields.text(op, "format"));
    byte[] payload = Hex.decode(Fields.text(op, "payload_hex"));
    boolean selfContained = Fields.bool(op, "self_contained");

    // ByteBufPrimitiveCodec.allocate gives an ioBuffer (direct), as FrameToSegmentEncoder gets.
    ByteBuf buf = codecs.primitive.allocate(payload.length).writeBytes(payload);
    List<Object> parts = new ArrayList<>();
    codecs.segmentCodec.encode(new Segment<>(buf, selfContained), parts);

    ByteArrayOutputStream wire = new ByteArrayOutputStream();
    for (Object part : parts) {
      ByteBuf b = (ByteBuf) part;
      byte[] bytes = new byte[b.readableBytes()];
      b.getBytes(b.readerIndex(), bytes);
      wire.writeBytes(bytes);
      b.release();
    }
    return Results.start(op, true).put("output_hex", Hex.encode(wire.toByteArray()));
  }
}
