package org.cqlframe.e2e;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.cqlframe.conformance.Json;
import org.cqlframe.conformance.checksum.FrameChecksumContext;
import org.cqlframe.conformance.checksum.FrameChecksumSessionBuilder;
import org.cqlframe.conformance.checksum.PayloadChecksum;

/**
 * The Java driver's side of cassandra/bench/e2e, as read_load.py is the Python driver's (same
 * options, same JSON lines; see its docstring): closed-loop reads of one blob per payload
 * checksum variant, `plain` the driver as released, `crc32` and `crc32c` through the conformance
 * adapter's FrameChecksumSessionBuilder, `proxy`, `sleep`, `spin` and `relay` the driver as
 * released through the port --via gives them (cassandra/bench/e2e/proxy.py). Run from source with
 * the adapter's jar (driver included) on the class path:
 *
 * <pre>java -cp .cache/conformance/java/java-conformance-adapter.jar cassandra/bench/e2e/ReadLoad.java \
 *     load PORT NODE_PID --sizes ... --in-flight ... --seconds S --max-requests N --warmup S \
 *     --client-warmup S --compression none|lz4 --variants plain,crc32,crc32c --sha256 SIZE=HEX,...
 *     [--via proxy=PORT,relay=PORT]</pre>
 */
public final class ReadLoad {
  private ReadLoad() {}

  public static void main(String[] argv) throws Exception {
    Map<String, String> o = new HashMap<>();
    for (int i = 3; i + 1 < argv.length; i += 2) {
      o.put(argv[i].substring(2), argv[i + 1]);
    }
    int port = Integer.parseInt(argv[1]);
    long nodePid = Long.parseLong(argv[2]);
    int[] sizes = numbers(o.get("sizes"));
    int[] inFlight = numbers(o.get("in-flight"));
    double seconds = Double.parseDouble(o.get("seconds"));
    double warmup = Double.parseDouble(o.get("warmup"));
    double clientWarmup = Double.parseDouble(o.get("client-warmup"));
    int maxRequests = Integer.parseInt(o.get("max-requests"));
    String compression = o.get("compression");
    Map<Integer, String> sha256 = new HashMap<>();
    for (String pair : o.get("sha256").split(",")) {
      String[] kv = pair.split("=");
      sha256.put(Integer.parseInt(kv[0]), kv[1]);
    }
    Map<String, Integer> via = new HashMap<>();
    if (o.containsKey("via")) {
      for (String pair : o.get("via").split(",")) {
        String[] kv = pair.split("=");
        via.put(kv[0], Integer.parseInt(kv[1]));
      }
    }
    Map<String, CqlSession> sessions = new LinkedHashMap<>();
    Map<String, PreparedStatement> selects = new HashMap<>();
    for (String variant : o.get("variants").split(",")) {
      CqlSession s =
          builder(variant)
              .addContactPoint(new InetSocketAddress("127.0.0.1", via.getOrDefault(variant, port)))
              .withConfigLoader(config(compression))
              .build();
      sessions.put(variant, s);
      selects.put(variant, s.prepare("SELECT v FROM e2e.blobs WHERE k = ?"));
    }
    for (int size : sizes) {
      for (Map.Entry<String, CqlSession> e : sessions.entrySet()) {
        BoundStatement statement = selects.get(e.getKey()).bind(size);
        ByteBuffer got = e.getValue().execute(statement).one().getByteBuffer(0);
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        sha.update(got.duplicate());
        if (!HexFormat.of().formatHex(sha.digest()).equals(sha256.get(size))) {
          System.err.println("ReadLoad: " + e.getKey() + ": the " + size + "-byte blob differs from what setup wrote");
          System.exit(1);
        }
        // The JIT compiler's work, here rather than in the first cells.
        new ClosedLoop(e.getValue(), statement, size, 16, clientWarmup, maxRequests).run();
      }
    }
    boolean failed = false;
    int cell = 0;
    for (int size : sizes) {
      for (int n : inFlight) {
        List<String> order = new ArrayList<>(sessions.keySet());
        Collections.rotate(order, -(cell++ % order.size()));
        for (String variant : order) {
          CqlSession s = sessions.get(variant);
          BoundStatement statement = selects.get(variant).bind(size);
          new ClosedLoop(s, statement, size, n, warmup, maxRequests).run();
          ClosedLoop loop = new ClosedLoop(s, statement, size, n, seconds, maxRequests);
          long server = cpuTicks(String.valueOf(nodePid));
          long client = cpuTicks("self");
          long started = System.nanoTime();
          loop.run();
          double elapsed = (System.nanoTime() - started) / 1e9;
          server = cpuTicks(String.valueOf(nodePid)) - server;
          client = cpuTicks("self") - client;
          long[] lat = Arrays.copyOf(loop.latencies, loop.count);
          Arrays.sort(lat);
          Map<String, Object> line = new LinkedHashMap<>();
          line.put("driver", "java");
          line.put("variant", variant);
          line.put(
              "negotiated",
              s.getContext() instanceof FrameChecksumContext
                  ? ((FrameChecksumContext) s.getContext()).framedChannels()
                  : null);
          line.put("compression", compression);
          line.put("blob", size);
          line.put("in_flight", n);
          line.put("requests", lat.length);
          line.put("seconds", elapsed);
          line.put("server_cpu_ticks", server);
          line.put("client_cpu_ticks", client);
          line.put("p50_us", lat.length > 0 ? percentile(lat, 50) / 1e3 : null);
          line.put("p99_us", lat.length > 0 ? percentile(lat, 99) / 1e3 : null);
          line.put("mean_us", lat.length > 0 ? Arrays.stream(lat).average().getAsDouble() / 1e3 : null);
          line.put("errors", loop.errors.subList(0, Math.min(3, loop.errors.size())));
          System.out.println(Json.write(line));
          System.out.flush();
          failed |= !loop.errors.isEmpty() || lat.length == 0;
        }
      }
    }
    sessions.values().forEach(CqlSession::close);
    System.exit(failed ? 1 : 0);
  }

  private static CqlSessionBuilder builder(String variant) {
    switch (variant) {
      case "plain":
      case "proxy":
      case "sleep":
      case "spin":
      case "relay":
        return CqlSession.builder();
      case "crc32":
        return new FrameChecksumSessionBuilder(PayloadChecksum.CRC32);
      case "crc32c":
        return new FrameChecksumSessionBuilder(PayloadChecksum.CRC32C);
      default:
        throw new IllegalArgumentException("unknown variant " + variant);
    }
  }

  private static DriverConfigLoader config(String compression) {
    return DriverConfigLoader.programmaticBuilder()
        .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy")
        .withString(DefaultDriverOption.PROTOCOL_VERSION, "V5")
        .withString(DefaultDriverOption.PROTOCOL_COMPRESSION, compression)
        .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(30))
        .build();
  }

  private static int[] numbers(String list) {
    return Arrays.stream(list.split(",")).mapToInt(Integer::parseInt).toArray();
  }

  /** utime + stime of a process, all its threads, in clock ticks (proc(5)). */
  private static long cpuTicks(String pid) throws IOException {
    String stat = Files.readString(Path.of("/proc", pid, "stat"));
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
  }

  /** Nearest rank. */
  private static long percentile(long[] sorted, int q) {
    int rank = (int) Math.ceil(sorted.length * q / 100.0);
    return sorted[Math.max(0, rank - 1)];
  }

  /** {@code inFlight} requests outstanding until the window ends, each answer starting the next. */
  private static final class ClosedLoop {
    private final CqlSession session;
    private final BoundStatement statement;
    private final int size;
    private final int inFlight;
    private final long window;
    private final int maxRequests;
    private final CountDownLatch finished = new CountDownLatch(1);
    final long[] latencies;
    final List<String> errors = new ArrayList<>();
    int count;
    private int issued;
    private int outstanding;
    private long deadline;

    ClosedLoop(CqlSession session, BoundStatement statement, int size, int inFlight, double seconds, int maxRequests) {
      this.session = session;
      this.statement = statement;
      this.size = size;
      this.inFlight = inFlight;
      this.window = (long) (seconds * 1e9);
      this.maxRequests = maxRequests;
      this.latencies = new long[maxRequests];
    }

    void run() throws InterruptedException {
      deadline = System.nanoTime() + window;
      synchronized (this) {
        for (int i = 0; i < inFlight; i++) {
          issue();
        }
      }
      finished.await();
    }

    /** With the monitor held: one more request, unless the window is over. */
    private void issue() {
      if (!errors.isEmpty() || issued >= maxRequests || System.nanoTime() - deadline >= 0) {
        if (outstanding == 0) {
          finished.countDown();
        }
        return;
      }
      issued++;
      outstanding++;
      long sent = System.nanoTime();
      session
          .executeAsync(statement)
          .whenComplete((rs, error) -> answered(rs, error, System.nanoTime() - sent));
    }

    private synchronized void answered(AsyncResultSet rs, Throwable error, long elapsed) {
      outstanding--;
      if (error != null) {
        errors.add(error.toString());
      } else {
        Row row = rs.one();
        if (row == null || row.getByteBuffer(0).remaining() != size) {
          errors.add("wrong answer");
        }
        latencies[count++] = elapsed;
      }
      issue();
    }
  }
}
