package org.cqlframe.peers.java;

import com.datastax.oss.driver.api.core.session.Session;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import net.jpountz.lz4.LZ4Factory;

/** What is being wrapped: pinned versions, plus what the driver and LZ4 report at run time. */
final class Versions {

  private Versions() {}

  static ObjectNode asJson() {
    Properties pinned = new Properties();
    try (InputStream in = Versions.class.getResourceAsStream("/versions.properties")) {
      pinned.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ObjectNode json = JsonNodeFactory.instance.objectNode();
    pinned.stringPropertyNames().stream().sorted().forEach(k -> json.put(k, pinned.getProperty(k)));
    // The driver's own idea of its version (read from its jar), as a cross-check of the pin.
    json.put("driver_runtime", Session.OSS_DRIVER_COORDINATES.toString());
    // JNI or pure-Java LZ4: both are legitimate driver configurations and may differ on bad input.
    json.put("lz4_impl", LZ4Factory.fastestInstance().toString());
    json.put("java", System.getProperty("java.version"));
    return json;
  }
}
