package org.cqlframe.peers.java;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The stdin/stdout contract, and the version report. */
class MainTest {

  static String run(String stdin, int expectedExit) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrintStream err = new PrintStream(new ByteArrayOutputStream());
    int exit =
        Main.runBatch(new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)), out, err);
    assertEquals(expectedExit, exit);
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void jsonArrayInJsonArrayOut() throws Exception {
    String in =
        "[{\"id\":\"a\",\"op\":\"encode\",\"format\":\"uncompressed\",\"self_contained\":true,"
            + "\"payload_hex\":\"68656c6c6f\"},{\"id\":\"b\",\"op\":\"nope\"}]";
    JsonNode out = new ObjectMapper().readTree(run(in, 0));
    assertEquals(2, out.size());
    assertEquals("a", out.get(0).get("id").asText());
    assertEquals("05000219999a68656c6c6f74800eb6", out.get(0).get("output_hex").asText());
    assertEquals("unknown op", out.get(1).get("error").asText());
  }

  @Test
  void nonArrayInputIsAUsageError() throws Exception {
    assertEquals("", run("{\"op\":\"decode\"}", 2));
    assertEquals("", run("not json", 2));
  }

  @Test
  void versionsAreThePinnedOnes() {
    JsonNode v = Versions.asJson();
    assertEquals("4.19.3", v.get("java-driver-core").asText());
    assertEquals("1.5.2", v.get("native-protocol").asText());
    assertEquals("at.yawk.lz4:lz4-java:1.10.2", v.get("lz4-java").asText());
    assertEquals(
        "Apache Cassandra Java Driver (org.apache.cassandra:java-driver-core) version 4.19.3",
        v.get("driver_runtime").asText());
  }
}
