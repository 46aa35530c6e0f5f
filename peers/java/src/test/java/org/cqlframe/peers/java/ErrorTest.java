package org.cqlframe.peers.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** Bad input never crashes the batch and is reported, with what was decoded before it. */
class ErrorTest {

  static final String CRC_EXCEPTION = "com.datastax.oss.driver.api.core.connection.CrcMismatchException";

  static byte[] twoReadyFrames(String format) {
    return Oracle.concat(
        Peer.encode(format, true, Oracle.ready(1)), Peer.encode(format, true, Oracle.ready(2)));
  }

  @ParameterizedTest
  @ValueSource(strings = {"uncompressed", "lz4"})
  void corruptPayloadByteNamesThePayloadCrc(String format) {
    byte[] wire = twoReadyFrames(format);
    wire[wire.length - 6] ^= 0x40; // inside the second frame's payload
    JsonNode r = Peer.decode(format, wire);
    assertFalse(r.get("ok").asBoolean());
    assertTrue(r.get("error").asText().startsWith(CRC_EXCEPTION + ": CRC mismatch on payload"),
        r.get("error").asText());
    assertEquals(1, r.get("frames").size(), "the first, intact frame is still reported");
    assertEquals(1, r.get("envelopes").size());
  }

  @ParameterizedTest
  @ValueSource(strings = {"uncompressed", "lz4"})
  void corruptHeaderByteNamesTheHeaderCrc(String format) {
    byte[] wire = twoReadyFrames(format);
    wire[0] ^= 0x01;
    JsonNode r = Peer.decode(format, wire);
    assertFalse(r.get("ok").asBoolean());
    assertTrue(r.get("error").asText().startsWith(CRC_EXCEPTION + ": CRC mismatch on header"),
        r.get("error").asText());
    assertEquals(0, r.get("frames").size());
  }

  @ParameterizedTest
  @ValueSource(strings = {"uncompressed", "lz4"})
  void truncatedInputIsReportedNotDropped(String format) {
    byte[] wire = twoReadyFrames(format);
    JsonNode r = Peer.decode(format, Oracle.slice(wire, 0, wire.length - 1));
    assertFalse(r.get("ok").asBoolean());
    assertEquals("harness", r.get("error_source").asText());
    int secondFrame = wire.length / 2;
    assertEquals(
        "incomplete frame: " + (secondFrame - 1) + " byte(s) left over after the last complete"
            + " frame (the driver would wait for more input)",
        r.get("error").asText());
    assertEquals(1, r.get("frames").size());
  }

  @Test
  void truncatedHeaderIsReportedToo() {
    JsonNode r = Peer.decode("uncompressed", new byte[] {5, 0});
    assertFalse(r.get("ok").asBoolean());
    assertTrue(r.get("error").asText().startsWith("incomplete frame: 2 byte(s)"));
  }

  @Test
  void unfinishedSequenceIsReported() {
    byte[] env = Oracle.authSuccess(7, new byte[300]);
    byte[] wire =
        Oracle.concat(
            Oracle.frame(Oracle.slice(env, 0, 100), false),
            Oracle.frame(Oracle.slice(env, 100, 200), false));
    JsonNode r = Peer.decode("uncompressed", wire);
    assertFalse(r.get("ok").asBoolean());
    assertEquals(
        "incomplete envelope sequence: 200 of 313 bytes received in 2 non-self-contained frame(s)"
            + " (the driver would wait for more frames)",
        r.get("error").asText());
    assertEquals(2, r.get("frames").size());
    assertEquals(0, r.get("envelopes").size());
  }

  @Test
  void badRequestsGetOneResultEachAndTheBatchGoesOn() {
    ArrayNode batch = JsonNodeFactory.instance.arrayNode();
    batch.add(Peer.op("decode", "uncompressed").put("input_hex", "zz"));
    batch.addObject().put("id", 2).put("op", "frobnicate");
    batch.add(Peer.op("decode", "snappy").put("input_hex", ""));
    batch.add(Peer.op("encode", "lz4").put("payload_hex", "00"));
    batch.add(Peer.op("decode", "uncompressed").put("input_hex", ""));
    JsonNode results = Batch.run(batch);
    assertEquals(5, results.size());
    assertFalse(results.get(0).get("ok").asBoolean());
    assertEquals(2, results.get(1).get("id").asInt());
    assertEquals("unknown op", results.get(1).get("error").asText());
    assertTrue(results.get(2).get("error").asText().contains("unknown format: snappy"));
    assertTrue(results.get(3).get("error").asText().contains("self_contained"));
    assertTrue(results.get(4).get("ok").asBoolean(), "empty input is zero frames, not an error");
  }
}
