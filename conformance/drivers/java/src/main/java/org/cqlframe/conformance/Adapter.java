package org.cqlframe.conformance;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.session.Session;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import org.cqlframe.conformance.checksum.FrameChecksumContext;
import org.cqlframe.conformance.checksum.FrameChecksumSessionBuilder;

/**
 * Conformance adapter for the Java driver (java-driver-core), per conformance/README.md: runs one
 * case's workload through the public API (CqlSession, programmatic configuration) against the
 * conformance server and prints one JSON object on stdout. Exit 0: every request succeeded; 1: the
 * driver raised an error; 127: unsupported action.
 *
 * <p>Configuration: the contact point with the given port; the local datacenter is inferred from
 * the contact point's system.local (DcInferringLoadBalancingPolicy); no authentication unless
 * --auth; --compression lz4 sets advanced.protocol.compression = lz4 (lz4-java on the classpath);
 * --protocol 4/5/6 sets advanced.protocol.version (default: the driver negotiates); --checksum
 * crc32c builds the session with {@link FrameChecksumSessionBuilder} (CRC32C where offered).
 */
public final class Adapter {
  static final String SELECT = "SELECT k, v FROM ks.t";
  static final List<String> ACTIONS =
      List.of("connect", "select", "prepare-select", "concurrent-select", "insert-large", "idle-select");

  public static void main(String[] argv) {
    System.exit(run(argv));
  }

  static int run(String[] argv) {
    Map<String, String> a = new LinkedHashMap<>();
    a.put("host", "127.0.0.1");
    a.put("case", "");
    a.put("action", "select");
    a.put("compression", "default");
    a.put("checksum", "default");
    a.put("protocol", "default");
    a.put("timeout", "10");
    a.put("blob-size", "0");
    a.put("requests", "0");
    boolean auth = false;
    for (int i = 0; i < argv.length; i++) {
      String k = argv[i];
      if (k.equals("--auth")) {
        auth = true;
      } else if (k.startsWith("--") && i + 1 < argv.length) {
        a.put(k.substring(2), argv[++i]);
      }
    }
    Map<String, Object> report = new LinkedHashMap<>();
    report.put("driver", "java");
    report.put("case", a.get("case"));
    report.put("action", a.get("action"));
    String action = a.get("action");
    if (!ACTIONS.contains(action)) {
      report.put("unsupported", "unknown action " + action);
      System.out.println(Json.write(report));
      return 127;
    }
    report.put("driver_version", Session.OSS_DRIVER_COORDINATES.getVersion().toString());
    double timeout = Double.parseDouble(a.get("timeout"));
    Duration t = Duration.ofMillis((long) (timeout * 1000));

    ProgrammaticDriverConfigLoaderBuilder cfg =
        DriverConfigLoader.programmaticBuilder()
            .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy")
            .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, t)
            .withDuration(DefaultDriverOption.CONNECTION_CONNECT_TIMEOUT, t)
            .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, t)
            .withDuration(DefaultDriverOption.CONTROL_CONNECTION_TIMEOUT, t)
            .withDuration(DefaultDriverOption.METADATA_SCHEMA_REQUEST_TIMEOUT, t)
            // One attempt per request: a fault must surface as the request's failure.
            .withString(DefaultDriverOption.RETRY_POLICY_CLASS, "DefaultRetryPolicy")
            .withBoolean(DefaultDriverOption.REQUEST_DEFAULT_IDEMPOTENCE, false);
    switch (a.get("compression")) {
      case "lz4":
        cfg = cfg.withString(DefaultDriverOption.PROTOCOL_COMPRESSION, "lz4");
        break;
      case "none":
        cfg = cfg.withString(DefaultDriverOption.PROTOCOL_COMPRESSION, "none");
        break;
      default:
        break;
    }
    switch (a.get("protocol")) {
      case "4":
        cfg = cfg.withString(DefaultDriverOption.PROTOCOL_VERSION, "V4");
        break;
      case "5":
        cfg = cfg.withString(DefaultDriverOption.PROTOCOL_VERSION, "V5");
        break;
      case "6":
        cfg = cfg.withString(DefaultDriverOption.PROTOCOL_VERSION, "V6");
        break;
      default:
        break;
    }
    if (auth) {
      cfg =
          cfg.withString(DefaultDriverOption.AUTH_PROVIDER_CLASS, "PlainTextAuthProvider")
              .withString(DefaultDriverOption.AUTH_PROVIDER_USER_NAME, "cassandra")
              .withString(DefaultDriverOption.AUTH_PROVIDER_PASSWORD, "cassandra");
    }
    boolean crc32c = a.get("checksum").equals("crc32c");
    if (crc32c) {
      // The driver has no FRAME_CHECKSUM option: the checksum package adds one through its
      // session builder and context, used only here.
      report.put("checksum_option", "FrameChecksumSessionBuilder (java.util.zip.CRC32C)");
    }
    if (action.equals("idle-select")) {
      // Heartbeats are OPTIONS requests on idle connections: one per second.
      cfg = cfg.withDuration(DefaultDriverOption.HEARTBEAT_INTERVAL, Duration.ofSeconds(1));
      report.put("heartbeat_interval_s", 1);
    }

    List<Map<String, Object>> results = new ArrayList<>();
    String error = null;
    CqlSession session = null;
    try {
      CqlSessionBuilder builder =
          (crc32c ? new FrameChecksumSessionBuilder() : CqlSession.builder())
              .addContactPoint(new InetSocketAddress(a.get("host"), Integer.parseInt(a.get("port"))))
              .withConfigLoader(cfg.build());
      final CqlSession s = builder.build();
      session = s;
      ProtocolVersion v = s.getContext().getProtocolVersion();
      Map<String, Object> negotiated = new LinkedHashMap<>();
      negotiated.put("protocol_version", v.toString());
      if (s.getContext() instanceof FrameChecksumContext) {
        negotiated.put(
            "frame_checksums", ((FrameChecksumContext) s.getContext()).framedChannels());
      }
      report.put("negotiated", negotiated);
      switch (action) {
        case "connect":
          s.execute("SELECT release_version FROM system.local").all();
          results.add(Map.of("ok", true));
          break;
        case "select":
          results.add(attempt(s, () -> rows(s.execute(SELECT))));
          break;
        case "idle-select":
          Thread.sleep(3000);
          results.add(attempt(s, () -> rows(s.execute(SELECT))));
          break;
        case "prepare-select":
          {
            results.add(
                attempt(
                    s,
                    () -> {
                      PreparedStatement ps = s.prepare(SELECT);
                      return rows(s.execute(ps.bind()));
                    }));
          }
          break;
        case "concurrent-select":
          {
            int n = Math.max(1, Integer.parseInt(a.get("requests")));
            List<CompletableFuture<List<Row>>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
              futures.add(all(s.executeAsync(SELECT)).toCompletableFuture());
            }
            for (CompletableFuture<List<Row>> f : futures) {
              try {
                results.add(rows(f.get()));
              } catch (ExecutionException e) {
                results.add(Map.of("error", describe(e.getCause())));
              }
            }
          }
          break;
        case "insert-large":
          {
            int size = Integer.parseInt(a.get("blob-size"));
            StringBuilder q = new StringBuilder(2 * size + 64);
            q.append("INSERT INTO ks.t (k, v) VALUES (1, 0x");
            for (int i = 0; i < size; i++) {
              int b = (i * 7 + 3) & 0xff;
              q.append(Character.forDigit(b >> 4, 16)).append(Character.forDigit(b & 15, 16));
            }
            q.append(')');
            results.add(
                attempt(
                    s,
                    () -> {
                      s.execute(q.toString());
                      return Map.of("ok", true);
                    }));
          }
          break;
        default:
          break;
      }
    } catch (Throwable e) {
      error = describe(e);
    } finally {
      if (session != null) {
        try {
          session.close();
        } catch (Throwable e) {
          report.put("shutdown_error", describe(e));
        }
      }
    }
    report.put("results", results);
    report.put("error", error);
    System.out.println(Json.write(report));
    boolean failed = error != null || results.stream().anyMatch(r -> r.containsKey("error"));
    return failed ? 1 : 0;
  }

  interface Work {
    Map<String, Object> run() throws Exception;
  }

  static Map<String, Object> attempt(CqlSession session, Work w) {
    try {
      return w.run();
    } catch (Throwable e) {
      return Map.of("error", describe(e));
    }
  }

  static String describe(Throwable e) {
    StringBuilder s = new StringBuilder(e.getClass().getName() + ": " + e.getMessage());
    Throwable c = e.getCause();
    for (int i = 0; c != null && i < 3; i++, c = c.getCause()) {
      s.append(" (caused by ").append(c.getClass().getName()).append(": ").append(c.getMessage()).append(')');
    }
    return s.toString();
  }

  /** Every row of an async result, following pages. */
  static CompletionStage<List<Row>> all(CompletionStage<AsyncResultSet> stage) {
    return stage.thenCompose(
        rs -> {
          List<Row> out = new ArrayList<>();
          rs.currentPage().forEach(out::add);
          if (rs.hasMorePages()) {
            return all(rs.fetchNextPage())
                .thenApply(
                    more -> {
                      out.addAll(more);
                      return out;
                    });
          }
          return CompletableFuture.completedFuture(out);
        });
  }

  static Map<String, Object> rows(ResultSet rs) throws Exception {
    return rows(rs.all());
  }

  /** Count and digest (conformance/README.md) of the rows the application got. */
  static Map<String, Object> rows(List<Row> rows) throws Exception {
    MessageDigest h = MessageDigest.getInstance("SHA-256");
    for (Row r : rows) {
      ByteBuffer v = r.getByteBuffer("v");
      byte[] bytes = new byte[v == null ? 0 : v.remaining()];
      if (v != null) {
        v.duplicate().get(bytes);
      }
      h.update(ByteBuffer.allocate(8).putInt(r.getInt("k")).putInt(bytes.length).array());
      h.update(bytes);
    }
    StringBuilder hex = new StringBuilder();
    for (byte b : h.digest()) {
      hex.append(String.format("%02x", b & 0xff));
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("rows", rows.size());
    m.put("digest", hex.toString());
    return m;
  }
}
