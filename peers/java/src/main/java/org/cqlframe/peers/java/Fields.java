package org.cqlframe.peers.java;

import com.fasterxml.jackson.databind.JsonNode;

/** Reading request fields, failing with a message that names the field. */
final class Fields {

  private Fields() {}

  static String text(JsonNode op, String name) {
    JsonNode v = op.get(name);
    if (v == null || !v.isTextual()) {
      throw new IllegalArgumentException("missing or non-string field: " + name);
    }
    return v.asText();
  }

  static boolean bool(JsonNode op, String name) {
    JsonNode v = op.get(name);
    if (v == null || !v.isBoolean()) {
      throw new IllegalArgumentException("missing or non-boolean field: " + name);
    }
    return v.asBoolean();
  }

  /** An optional string field restricted to a few values; the first one is the default. */
  static String choice(JsonNode op, String name, String... allowed) {
    JsonNode v = op.get(name);
    if (v == null) {
      return allowed[0];
    }
    for (String a : allowed) {
      if (a.equals(v.asText())) {
        return a;
      }
    }
    throw new IllegalArgumentException("bad value for " + name + ": " + v);
  }
}
