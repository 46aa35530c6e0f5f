package org.cqlframe.peers.java;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** Builds operations as the JSON contract spells them and runs them in-process through Batch. */
final class Peer {

  private Peer() {}

  static ObjectNode op(String op, String format) {
    return JsonNodeFactory.instance.objectNode().put("id", "t").put("op", op).put("format", format);
  }

  static JsonNode decode(String format, byte[] input) {
    return Batch.runOne(op("decode", format).put("input_hex", Oracle.hex(input)));
  }

  static JsonNode decodeFrames(String format, byte[] input) {
    return Batch.runOne(
        op("decode", format).put("input_hex", Oracle.hex(input)).put("layer", "frames"));
  }

  static byte[] encode(String format, boolean selfContained, byte[] payload) {
    JsonNode r =
        Batch.runOne(
            op("encode", format)
                .put("self_contained", selfContained)
                .put("payload_hex", Oracle.hex(payload)));
    if (!r.path("ok").asBoolean()) {
      throw new AssertionError("encode failed: " + r);
    }
    return Oracle.HEX.parseHex(r.get("output_hex").asText());
  }

  static byte[] payload(JsonNode frame) {
    return Oracle.HEX.parseHex(frame.get("payload_hex").asText());
  }

  static byte[] body(JsonNode envelope) {
    return Oracle.HEX.parseHex(envelope.get("body_hex").asText());
  }
}
