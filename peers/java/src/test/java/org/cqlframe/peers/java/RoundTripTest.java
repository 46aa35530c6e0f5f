package org.cqlframe.peers.java;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** encode then decode a ~50 KB compressible envelope, checking the wire format on the way. */
class RoundTripTest {

  static final byte[] ENVELOPE = Oracle.authSuccess(42, Oracle.compressible(50_000));

  @Test
  void uncompressedWireMatchesTheOracle() {
    byte[] wire = Peer.encode("uncompressed", true, ENVELOPE);
    assertArrayEquals(Oracle.frame(ENVELOPE, true), wire);
  }

  @Test
  void lz4WireIsCompressedAndWellFormed() {
    byte[] wire = Peer.encode("lz4", true, ENVELOPE);
    long word = Oracle.readLe(wire, 0, 5);
    int compressedLength = (int) (word & 0x1FFFF);
    assertEquals(ENVELOPE.length, (word >> 17) & 0x1FFFF);
    assertEquals(1, (word >> 34) & 1);
    assertEquals(0, word >> 35);
    assertTrue(compressedLength < ENVELOPE.length / 4, "compressed to " + compressedLength);
    assertEquals(8 + compressedLength + 4, wire.length);
    assertEquals(Oracle.crc24(word, 5), Oracle.readLe(wire, 5, 3));
    byte[] onWire = Oracle.slice(wire, 8, 8 + compressedLength);
    assertEquals(Oracle.crc32(onWire), (int) Oracle.readLe(wire, 8 + compressedLength, 4));
  }

  @ParameterizedTest
  @ValueSource(strings = {"uncompressed", "lz4"})
  void roundTrip(String format) {
    byte[] wire = Peer.encode(format, true, ENVELOPE);
    JsonNode r = Peer.decode(format, wire);
    assertTrue(r.get("ok").asBoolean(), r.toString());
    JsonNode f = r.get("frames").get(0);
    assertEquals(ENVELOPE.length, f.get("payload_length").asInt());
    assertArrayEquals(ENVELOPE, Peer.payload(f));
    JsonNode e = r.get("envelopes").get(0);
    assertEquals(0x85, e.get("version").asInt());
    assertEquals(42, e.get("stream").asInt());
    assertEquals(0x10, e.get("opcode").asInt());
    assertEquals(ENVELOPE.length - 9, e.get("length").asInt());
    assertArrayEquals(Oracle.slice(ENVELOPE, 9, ENVELOPE.length), Peer.body(e));
    assertEquals("AuthSuccess", e.get("message").asText());
  }

  @ParameterizedTest
  @ValueSource(strings = {"uncompressed", "lz4"})
  void byteByByteFeedingGivesTheSameResult(String format) {
    byte[] wire =
        Oracle.concat(
            Peer.encode(format, true, Oracle.ready(1)), Peer.encode(format, true, ENVELOPE));
    JsonNode whole = Peer.decode(format, wire);
    JsonNode chunked =
        Batch.runOne(
            Peer.op("decode", format).put("input_hex", Oracle.hex(wire)).put("chunk_size", 7));
    assertTrue(whole.get("ok").asBoolean(), whole.toString());
    assertEquals(whole, chunked);
  }
}
