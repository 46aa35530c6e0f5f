package org.cqlframe.peers.java;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** Dispatches each operation of a batch; one result per operation, in order, never throwing. */
final class Batch {

  private Batch() {}

  static ArrayNode run(JsonNode ops) {
    ArrayNode results = JsonNodeFactory.instance.arrayNode();
    for (JsonNode op : ops) {
      results.add(runOne(op));
    }
    return results;
  }

  static ObjectNode runOne(JsonNode op) {
    try {
      switch (op.path("op").asText("")) {
        case "decode":
          return DecodeOp.run(op);
        case "encode":
          return EncodeOp.run(op);
        default:
          return Results.failure(op, "unknown op");
      }
    } catch (Throwable t) {
      // Bad request fields (hex, format, ...) or an unexpected harness fault: still one result.
      return Results.failure(op, Results.describe(t));
    }
  }
}
