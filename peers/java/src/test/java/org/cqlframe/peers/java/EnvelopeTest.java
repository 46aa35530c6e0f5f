package org.cqlframe.peers.java;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/** Envelopes packed into one self-contained frame, and split across non-self-contained ones. */
class EnvelopeTest {

  @Test
  void severalEnvelopesInOneSelfContainedFrame() {
    byte[] voidResult = Oracle.envelope(0x85, 0, -2, 0x08, 4, new byte[] {0, 0, 0, 1});
    byte[] payload =
        Oracle.concat(Oracle.ready(1), voidResult, Oracle.authSuccess(0x7FFF, "tok".getBytes()));
    JsonNode r = Peer.decode("uncompressed", Oracle.frame(payload, true));
    assertTrue(r.get("ok").asBoolean(), r.toString());
    assertEquals(1, r.get("frames").size());
    JsonNode envs = r.get("envelopes");
    assertEquals(3, envs.size());
    assertEquals(1, envs.get(0).get("stream").asInt());
    assertEquals(2, envs.get(0).get("opcode").asInt());
    assertEquals(0, envs.get(0).get("length").asInt());
    assertEquals("", envs.get(0).get("body_hex").asText());
    assertEquals(-2, envs.get(1).get("stream").asInt());
    assertEquals(8, envs.get(1).get("opcode").asInt());
    assertEquals("00000001", envs.get(1).get("body_hex").asText());
    assertEquals("Void", envs.get(1).get("message").asText());
    assertEquals(0x7FFF, envs.get(2).get("stream").asInt());
    assertEquals("00000003746f6b", envs.get(2).get("body_hex").asText());
  }

  @Test
  void envelopeSplitAcrossThreeUncompressedFrames() {
    byte[] env = Oracle.authSuccess(7, Oracle.compressible(3000));
    byte[] wire =
        Oracle.concat(
            Oracle.frame(Oracle.slice(env, 0, 1000), false),
            Oracle.frame(Oracle.slice(env, 1000, 2000), false),
            Oracle.frame(Oracle.slice(env, 2000, env.length), false));
    JsonNode r = Peer.decode("uncompressed", wire);
    assertTrue(r.get("ok").asBoolean(), r.toString());
    assertEquals(3, r.get("frames").size());
    for (JsonNode f : r.get("frames")) {
      assertFalse(f.get("self_contained").asBoolean());
    }
    assertEquals(1, r.get("envelopes").size());
    JsonNode e = r.get("envelopes").get(0);
    assertEquals(7, e.get("stream").asInt());
    assertEquals(env.length - 9, e.get("length").asInt());
    assertArrayEquals(Oracle.slice(env, 9, env.length), Peer.body(e));
  }

  @Test
  void envelopeSplitAcrossTwoLz4Frames() {
    // One compressed slice (from the driver's encoder) and one stored slice (from the oracle).
    byte[] env = Oracle.authSuccess(8, Oracle.compressible(20_000));
    byte[] first = Oracle.slice(env, 0, 15_000);
    byte[] second = Oracle.slice(env, 15_000, env.length);
    byte[] wire =
        Oracle.concat(Peer.encode("lz4", false, first), Oracle.lz4Frame(second, 0, false, 0));
    JsonNode r = Peer.decode("lz4", wire);
    assertTrue(r.get("ok").asBoolean(), r.toString());
    assertEquals(2, r.get("frames").size());
    assertEquals(15_000, r.get("frames").get(0).get("payload_length").asInt());
    assertArrayEquals(Oracle.slice(env, 9, env.length), Peer.body(r.get("envelopes").get(0)));
  }

  @Test
  void opaqueMessagesCarryRequestEnvelopesTheClientCannotDecode() {
    byte[] query = Oracle.envelope(0x05, 0, 3, 0x07, 5, "query".getBytes());
    byte[] input = Oracle.frame(query, true);
    JsonNode driver = Peer.decode("uncompressed", input);
    assertFalse(driver.get("ok").asBoolean());
    assertEquals(
        "java.lang.IllegalArgumentException: Unsupported request opcode: 7 in protocol 5",
        driver.get("error").asText());
    JsonNode opaque =
        Batch.runOne(
            Peer.op("decode", "uncompressed")
                .put("input_hex", Oracle.hex(input))
                .put("messages", "opaque"));
    assertTrue(opaque.get("ok").asBoolean(), opaque.toString());
    assertEquals("7175657279", opaque.get("envelopes").get(0).get("body_hex").asText());
  }
}
