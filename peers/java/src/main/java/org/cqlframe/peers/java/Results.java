package org.cqlframe.peers.java;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.handler.codec.DecoderException;

/** Shapes of result objects, and how exceptions are named in them. */
final class Results {

  private Results() {}

  /** A result carrying the operation's id (copied verbatim, whatever its JSON type). */
  static ObjectNode start(JsonNode op, boolean ok) {
    ObjectNode result = JsonNodeFactory.instance.objectNode();
    result.set("id", op.has("id") ? op.get("id") : JsonNodeFactory.instance.nullNode());
    result.put("ok", ok);
    return result;
  }

  static ObjectNode failure(JsonNode op, String error) {
    return start(op, false).put("error", error);
  }

  /**
   * "class: message" of the exception the driver threw. Netty wraps handler exceptions in
   * DecoderException; that wrapper is Netty's, not the driver's, so it is peeled off.
   */
  static String describe(Throwable t) {
    while (t instanceof DecoderException && t.getCause() != null) {
      t = t.getCause();
    }
    return t.getClass().getName() + ": " + t.getMessage();
  }
}
