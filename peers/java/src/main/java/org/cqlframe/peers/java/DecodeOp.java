package org.cqlframe.peers.java;

import com.datastax.oss.driver.internal.core.protocol.SegmentToFrameDecoder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.Arrays;
import java.util.List;

/**
 * "decode": pushes the input through the driver's own inbound v5 pipeline, as
 * ProtocolInitHandler.maybeSwitchToModernFraming installs it after STARTUP:
 *
 * <pre>bytes -> BytesToSegmentDecoder -> [SegmentRecorder] -> SegmentToFrameDecoder -> [tail]</pre>
 *
 * Bracketed handlers are the harness's observers. Options beyond the contract: "layer":
 * "envelopes" (default) | "frames" (stop after BytesToSegmentDecoder); "messages": "driver"
 * (default) | "opaque" (see OpaqueMessages); "chunk_size": feed the input in pieces of that size.
 */
final class DecodeOp {

  private DecodeOp() {}

  static ObjectNode run(JsonNode op) {
    DriverCodecs codecs = DriverCodecs.forFormat(Fields.text(op, "format"));
    byte[] input = Hex.decode(Fields.text(op, "input_hex"));
    boolean envelopes = Fields.choice(op, "layer", "envelopes", "frames").equals("envelopes");
    boolean opaque = Fields.choice(op, "messages", "driver", "opaque").equals("opaque");
    int chunk = op.path("chunk_size").asInt(0) > 0 ? op.path("chunk_size").asInt() : input.length;

    ObservableBytesToSegmentDecoder bytesDecoder =
        new ObservableBytesToSegmentDecoder(codecs.segmentCodec);
    SegmentRecorder recorder = new SegmentRecorder(envelopes);
    RecordingFrameCodec frameCodec =
        opaque
            ? RecordingFrameCodec.withOpaqueMessages(codecs)
            : RecordingFrameCodec.withDriverMessages(codecs);
    SegmentToFrameDecoder frameDecoder = new SegmentToFrameDecoder(frameCodec, "cqlframe-peer");
    PipelineTail tail = new PipelineTail(recorder.segments::size, frameCodec.decoded::size);

    EmbeddedChannel channel = new EmbeddedChannel();
    try {
      channel.pipeline().addLast(bytesDecoder, recorder);
      if (envelopes) {
        channel.pipeline().addLast(frameDecoder);
      }
      channel.pipeline().addLast(tail);

      for (int off = 0; off < input.length && tail.firstError == null; off += chunk) {
        int n = Math.min(chunk, input.length - off);
        // Direct buffers, like the socket reads of a real connection (selects the LZ4 code path).
        ByteBuf buf = ByteBufAllocator.DEFAULT.directBuffer(n).writeBytes(input, off, n);
        channel.writeInbound(buf);
      }

      String error = null;
      String source = "driver";
      int frames = recorder.segments.size();
      int envs = frameCodec.decoded.size();
      if (tail.firstError != null) {
        error = Results.describe(tail.firstError);
        frames = tail.framesAtError;
        envs = tail.envelopesAtError;
      } else if (bytesDecoder.pendingBytes() > 0) {
        error =
            "incomplete frame: "
                + bytesDecoder.pendingBytes()
                + " byte(s) left over after the last complete frame"
                + " (the driver would wait for more input)";
        source = "harness";
      } else if (envelopes && SequenceState.of(frameDecoder).pending()) {
        error = SequenceState.of(frameDecoder).describe();
        source = "harness";
      }

      ObjectNode result = Results.start(op, error == null);
      if (error != null) {
        result.put("error", error).put("error_source", source);
      }
      framesJson(result.putArray("frames"), recorder.segments.subList(0, frames));
      envelopesJson(result.putArray("envelopes"), frameCodec.decoded.subList(0, envs));
      return result;
    } finally {
      channel.finishAndReleaseAll();
    }
  }

  private static void framesJson(ArrayNode out, List<SegmentRecorder.Captured> segments) {
    for (SegmentRecorder.Captured s : segments) {
      out.addObject()
          .put("self_contained", s.selfContained())
          .put("payload_length", s.payload().length)
          .put("payload_hex", Hex.encode(s.payload()));
    }
  }

  /** Header fields straight from the consumed bytes; body = what the driver consumed after it. */
  private static void envelopesJson(ArrayNode out, List<RecordingFrameCodec.Envelope> envelopes) {
    for (RecordingFrameCodec.Envelope e : envelopes) {
      ByteBuf raw = Unpooled.wrappedBuffer(e.raw());
      int header = Math.min(9, e.raw().length);
      byte[] body = Arrays.copyOfRange(e.raw(), header, e.raw().length);
      out.addObject()
          .put("version", raw.getUnsignedByte(0))
          .put("flags", raw.getUnsignedByte(1))
          .put("stream", raw.getShort(2))
          .put("opcode", raw.getUnsignedByte(4))
          .put("length", raw.getInt(5))
          .put("body_hex", Hex.encode(body))
          .put("message", e.frame().message.getClass().getSimpleName());
    }
  }
}
