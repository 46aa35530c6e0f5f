package org.cqlframe.peers.java;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The spec's two worked examples, in both directions. */
class WorkedExamplesTest {

  static final byte[] HELLO = "hello".getBytes(StandardCharsets.US_ASCII);
  static final String UNCOMPRESSED = "05000219999a68656c6c6f74800eb6";
  static final String LZ4_STORED = "0500000004e4ab8e68656c6c6f74800eb6";

  @Test
  void oracleReproducesTheWorkedExamples() {
    assertEquals(UNCOMPRESSED, Oracle.hex(Oracle.frame(HELLO, true)));
    assertEquals(LZ4_STORED, Oracle.hex(Oracle.lz4Frame(HELLO, 0, true, 0)));
  }

  @Test
  void driverEncodesTheWorkedExamples() {
    assertEquals(UNCOMPRESSED, Oracle.hex(Peer.encode("uncompressed", true, HELLO)));
    // "hello" does not shrink under LZ4, so the driver itself chooses to store it raw.
    assertEquals(LZ4_STORED, Oracle.hex(Peer.encode("lz4", true, HELLO)));
  }

  @Test
  void driverDecodesTheWorkedExamples() {
    for (String[] c : new String[][] {{"uncompressed", UNCOMPRESSED}, {"lz4", LZ4_STORED}}) {
      JsonNode r = Peer.decodeFrames(c[0], Oracle.HEX.parseHex(c[1]));
      assertTrue(r.get("ok").asBoolean(), r.toString());
      assertEquals("t", r.get("id").asText());
      assertEquals(1, r.get("frames").size());
      JsonNode f = r.get("frames").get(0);
      assertTrue(f.get("self_contained").asBoolean());
      assertEquals(5, f.get("payload_length").asInt());
      assertEquals("68656c6c6f", f.get("payload_hex").asText());
    }
  }

  @Test
  void helloIsNotAnEnvelopeSoTheEnvelopeLayerFailsButKeepsTheFrame() {
    JsonNode r = Peer.decode("uncompressed", Oracle.HEX.parseHex(UNCOMPRESSED));
    assertFalse(r.get("ok").asBoolean());
    assertEquals("driver", r.get("error_source").asText());
    assertTrue(r.get("error").asText().startsWith("java.lang.IndexOutOfBoundsException"));
    assertEquals(1, r.get("frames").size());
    assertEquals(0, r.get("envelopes").size());
  }

  @Test
  void encodedFramesCarryIndependentlyComputedCrcs() {
    byte[] wire = Peer.encode("uncompressed", false, HELLO);
    long word = Oracle.readLe(wire, 0, 3);
    assertEquals(5, word & 0x1FFFF);
    assertEquals(0, (word >> 17) & 1);
    assertEquals(Oracle.crc24(word, 3), Oracle.readLe(wire, 3, 3));
    assertEquals(Oracle.crc32(HELLO), (int) Oracle.readLe(wire, 11, 4));
    assertArrayEquals(Oracle.frame(HELLO, false), wire);
  }
}
