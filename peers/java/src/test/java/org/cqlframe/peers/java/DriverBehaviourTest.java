package org.cqlframe.peers.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * Pins what the driver does at the edges of the spec (README "Observed driver behaviour"). If a
 * driver upgrade changes one of these, the test says which peer deviation to revisit.
 */
class DriverBehaviourTest {

  static byte[] bigEnvelope = Oracle.authSuccess(7, new byte[300]); // 313 bytes

  @Test
  void paddingBitsAreNotChecked() {
    JsonNode u = Peer.decode("uncompressed", Oracle.frame(Oracle.ready(1), true, 0x2A));
    assertTrue(u.get("ok").asBoolean(), u.toString());
    JsonNode l = Peer.decode("lz4", Oracle.lz4Frame(Oracle.ready(1), 0, true, 0x1F));
    assertTrue(l.get("ok").asBoolean(), l.toString());
  }

  @Test
  void selfContainedFrameInsideASequenceIsAccepted() {
    byte[] wire =
        Oracle.concat(
            Oracle.frame(Oracle.slice(bigEnvelope, 0, 100), false),
            Oracle.frame(Oracle.ready(9), true),
            Oracle.frame(Oracle.slice(bigEnvelope, 100, 313), false));
    JsonNode r = Peer.decode("uncompressed", wire);
    assertTrue(r.get("ok").asBoolean(), r.toString());
    assertEquals(9, r.get("envelopes").get(0).get("stream").asInt());
    assertEquals(7, r.get("envelopes").get(1).get("stream").asInt());
  }

  @Test
  void overshootingSequenceIsNeverCompletedAndLaterFramesStillDecode() {
    byte[] wire =
        Oracle.concat(
            Oracle.frame(Oracle.slice(bigEnvelope, 0, 100), false),
            Oracle.frame(Oracle.concat(Oracle.slice(bigEnvelope, 100, 313), new byte[2]), false),
            Oracle.frame(Oracle.ready(3), true));
    JsonNode r = Peer.decode("uncompressed", wire);
    assertFalse(r.get("ok").asBoolean());
    assertEquals("harness", r.get("error_source").asText());
    assertTrue(r.get("error").asText().startsWith("envelope sequence overshoot: 315 bytes"));
    assertEquals(1, r.get("envelopes").size());
    assertEquals(3, r.get("envelopes").get(0).get("stream").asInt());
  }

  @Test
  void twoWholeEnvelopesInOneNonSelfContainedFrameAreAnOvershoot() {
    byte[] wire = Oracle.frame(Oracle.concat(Oracle.ready(4), Oracle.ready(5)), false);
    JsonNode r = Peer.decode("uncompressed", wire);
    assertFalse(r.get("ok").asBoolean());
    assertTrue(r.get("error").asText().startsWith("envelope sequence overshoot: 18 bytes"));
  }

  @Test
  void partialEnvelopeAtTheEndOfASelfContainedFrameFailsInTheDriver() {
    byte[] payload = Oracle.concat(Oracle.ready(1), Oracle.slice(bigEnvelope, 0, 10));
    JsonNode r = Peer.decode("uncompressed", Oracle.frame(payload, true));
    assertFalse(r.get("ok").asBoolean());
    assertEquals("driver", r.get("error_source").asText());
    assertTrue(r.get("error").asText().startsWith("java.lang.IndexOutOfBoundsException"));
    assertEquals(1, r.get("envelopes").size(), "the whole envelope before it is decoded");
  }

  @Test
  void emptySelfContainedFrameFailsInTheDriver() {
    JsonNode r = Peer.decode("uncompressed", Oracle.frame(new byte[0], true));
    assertFalse(r.get("ok").asBoolean());
    assertTrue(r.get("error").asText().startsWith("java.lang.IndexOutOfBoundsException"));
  }

  @Test
  void firstFrameOfASequenceMustHoldTheEnvelopeHeader() {
    // The driver reads the envelope length at offset 5 of the first slice: 8 bytes are too few.
    byte[] wire =
        Oracle.concat(
            Oracle.frame(Oracle.slice(bigEnvelope, 0, 8), false),
            Oracle.frame(Oracle.slice(bigEnvelope, 8, 313), false));
    JsonNode r = Peer.decode("uncompressed", wire);
    assertFalse(r.get("ok").asBoolean());
    assertEquals("driver", r.get("error_source").asText());
    assertTrue(r.get("error").asText().startsWith("java.lang.IndexOutOfBoundsException"),
        r.get("error").asText());
  }

  @Test
  void olderEnvelopeVersionsInsideV5FramesAreDecoded() {
    // Neither 5 nor the direction bit is checked: a v4 READY (0x84) decodes as a v4 READY.
    byte[] v4Ready = Oracle.envelope(0x84, 0, 2, 0x02, 0, new byte[0]);
    JsonNode r = Peer.decode("uncompressed", Oracle.frame(v4Ready, true));
    assertTrue(r.get("ok").asBoolean(), r.toString());
    assertEquals(0x84, r.get("envelopes").get(0).get("version").asInt());
  }

  @Test
  void declaredLengthDoesNotBoundTheBodyTheMessageDecoderReads() {
    // READY reads no body, so the 4 declared body bytes are taken as the next envelope's header.
    byte[] ready = Oracle.envelope(0x85, 0, 0, 0x02, 4, new byte[] {1, 2, 3, 4});
    JsonNode r = Peer.decode("uncompressed", Oracle.frame(ready, true));
    assertFalse(r.get("ok").asBoolean());
    JsonNode e = r.get("envelopes").get(0);
    assertEquals(4, e.get("length").asInt());
    assertEquals("", e.get("body_hex").asText());
  }

  @Test
  void lz4BlockDecompressingToAnotherLengthIsRejected() {
    byte[] env = Oracle.authSuccess(1, Oracle.compressible(4000));
    byte[] wire = Peer.encode("lz4", true, env);
    int compressedLength = (int) (Oracle.readLe(wire, 0, 5) & 0x1FFFF);
    byte[] block = Oracle.slice(wire, 8, 8 + compressedLength);
    for (int claimed : new int[] {env.length - 1, env.length + 1}) {
      JsonNode r = Peer.decode("lz4", Oracle.lz4Frame(block, claimed, true, 0));
      assertFalse(r.get("ok").asBoolean());
      assertTrue(r.get("error").asText().startsWith("net.jpountz.lz4.LZ4Exception: Malformed"),
          r.get("error").asText());
      assertEquals(0, r.get("frames").size());
    }
    // Right length but trailing bytes after the block: caught by the driver's own check.
    byte[] padded = Oracle.concat(block, new byte[3]);
    JsonNode r = Peer.decode("lz4", Oracle.lz4Frame(padded, env.length, true, 0));
    assertEquals("java.lang.IllegalArgumentException: Compressed lengths mismatch",
        r.get("error").asText());
  }

  @Test
  void compressedEnvelopeFlagIsHonouredInsideLz4Frames() {
    // v5 forbids per-envelope compression, but FrameCodec shares the segment compressor and
    // tries to LZ4-decompress the body when flag 0x01 is set; uncompressed framing ignores it.
    byte[] flagged = Oracle.envelope(0x85, 0x01, 0, 0x02, 0, new byte[0]);
    assertTrue(Peer.decode("uncompressed", Oracle.frame(flagged, true)).get("ok").asBoolean());
    JsonNode r = Peer.decode("lz4", Oracle.lz4Frame(flagged, 0, true, 0));
    assertFalse(r.get("ok").asBoolean());
  }

  @Test
  void encodeDoesNotCheckThePayloadLimit() {
    // 131072 bytes overflow the 17-bit length into the self-contained bit (an assert, off here).
    byte[] wire = Peer.encode("uncompressed", false, new byte[131_072]);
    long word = Oracle.readLe(wire, 0, 3);
    assertEquals(0, word & 0x1FFFF);
    assertEquals(1, (word >> 17) & 1);
  }
}
