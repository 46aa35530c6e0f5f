package org.cqlframe.peers.java;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;

/**
 * Command line entry point: a JSON array of operations on stdin, a JSON array of results on
 * stdout. {@code --version} prints the pinned driver-side versions instead.
 */
public final class Main {

  private static final ObjectMapper JSON = new ObjectMapper();

  private Main() {}

  public static void main(String[] args) throws IOException {
    if (args.length == 1 && args[0].equals("--version")) {
      System.out.println(JSON.writeValueAsString(Versions.asJson()));
      return;
    }
    if (args.length != 0) {
      System.err.println("usage: run.sh [--version]  (JSON batch on stdin)");
      System.exit(2);
    }
    System.exit(runBatch(System.in, System.out, System.err));
  }

  /** Runs one batch; returns the process exit code (2 if the input is not a JSON array). */
  static int runBatch(InputStream in, OutputStream out, PrintStream err) throws IOException {
    JsonNode ops;
    try {
      ops = JSON.readTree(in);
    } catch (IOException e) {
      err.println("input is not JSON: " + e.getMessage());
      return 2;
    }
    if (ops == null || !ops.isArray()) {
      err.println("input must be a JSON array of operations");
      return 2;
    }
    out.write(JSON.writeValueAsBytes(Batch.run(ops)));
    out.write('\n');
    out.flush();
    return 0;
  }
}
