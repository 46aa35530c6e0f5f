import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Runs the Kaitai Struct parsers generated for Java against the golden vectors: the checks of
 * run_python.py (see its docstring), with the Java runtime (io.kaitai:kaitai-struct-runtime)
 * and Java's own checksum code.
 *
 * <pre>java -cp ... KaitaiJavaRunner REPO [--verbose]</pre>
 *
 * The last line is {@code kaitai-java: N passed, M failed}.
 */
public final class KaitaiJavaRunner {
    private int passed;
    private int failed;
    private final boolean verbose;

    private KaitaiJavaRunner(boolean verbose) {
        this.verbose = verbose;
    }

    private void report(boolean ok, String name, List<String> problems) {
        if (ok) passed++;
        else failed++;
        if (!ok || verbose) {
            String detail = problems.isEmpty() ? "" : ": " + String.join("; ", problems);
            System.out.println((ok ? "ok   " : "FAIL ") + name + detail);
        }
    }

    /** Whether data is the manifest's blob (by hex, or by SHA-256 for long ones). */
    static boolean same(JsonNode blob, byte[] data) throws Exception {
        if (blob.get("length").asInt() != data.length) return false;
        if (blob.has("hex")) return blob.get("hex").asText().equals(HexFormat.of().formatHex(data));
        byte[] sum = MessageDigest.getInstance("SHA-256").digest(data);
        return blob.get("sha256").asText().equals(HexFormat.of().formatHex(sum));
    }

    private static void field(List<String> problems, String what, Object got, Object want) {
        if (!Objects.equals(got, want)) problems.add(what + ": " + got + " != " + want);
    }

    private static void blob(List<String> problems, String what, JsonNode want, byte[] got) throws Exception {
        if (!same(want, got)) problems.add(what + " differs");
    }

    /** The comparison of one decoded record with the manifest's. */
    @FunctionalInterface
    interface RecordCheck<R> {
        void check(List<String> problems, String prefix, R got, JsonNode want) throws Exception;
    }

    /**
     * Differences of decoded records ({@code kind} frame or envelope) from the manifest's: their
     * number (when {@code whole}), then each record.
     */
    static <R> List<String> compareRecords(String kind, List<R> got, JsonNode want, boolean whole,
            RecordCheck<R> check) throws Exception {
        List<String> problems = new ArrayList<>();
        if (whole && got.size() != want.size()) problems.add(got.size() + " " + kind + "s, expected " + want.size());
        for (int i = 0; i < Math.min(got.size(), want.size()); i++) {
            check.check(problems, kind + " " + i + " ", got.get(i), want.get(i));
        }
        return problems;
    }

    static void checkFrame(List<String> problems, String f, Receiver.FrameRecord g, JsonNode w) throws Exception {
        field(problems, f + "offset", g.offset(), w.get("offset").asInt());
        field(problems, f + "self_contained", g.selfContained(), w.get("self_contained").asBoolean());
        field(problems, f + "payload_length", g.payloadLength(), w.get("payload_length").asLong());
        JsonNode u = w.get("uncompressed_length");
        field(problems, f + "uncompressed_length", g.uncompressedLength(), u.isNull() ? null : u.asLong());
        field(problems, f + "checksum_bit", g.checksumBit(), w.get("checksum_bit").asBoolean());
        field(problems, f + "reserved", g.reserved(), w.get("reserved").asLong());
        field(problems, f + "header_crc24", g.headerCrc24(), w.get("header_crc24").asText());
        field(problems, f + "payload_checksum", g.payloadChecksum(), w.get("payload_checksum").asText());
        blob(problems, f + "payload", w.get("payload"), g.payload());
        blob(problems, f + "content", w.get("content"), g.content());
    }

    static void checkEnvelope(List<String> problems, String e, Receiver.EnvelopeRecord g, JsonNode w) throws Exception {
        field(problems, e + "version", g.version(), w.get("version").asInt());
        field(problems, e + "flags", g.flags(), w.get("flags").asInt());
        field(problems, e + "stream", g.stream(), w.get("stream").asInt());
        field(problems, e + "opcode", g.opcode(), w.get("opcode").asInt());
        field(problems, e + "opcode_name", g.opcodeName(), w.get("opcode_name").asText());
        field(problems, e + "length", g.length(), w.get("length").asInt());
        blob(problems, e + "body", w.get("body"), g.body());
    }

    private void run(Path root) throws Exception {
        Path vectors = root.resolve("vectors");
        JsonNode manifest = new ObjectMapper().readTree(vectors.resolve("manifest.json").toFile());
        JsonNode negatives = new ObjectMapper(new YAMLFactory())
                .readTree(root.resolve("kaitai/tests/vector_negatives.yaml").toFile());

        // 1. the runner's own checksum code against the spec's catalogue
        for (Checks.Entry c : Checks.CATALOGUE) {
            long got = c.fn().applyAsLong(c.input().getBytes(StandardCharsets.US_ASCII));
            report(got == c.want(), "catalogue: " + c.name(),
                    got == c.want() ? List.of() : List.of(Long.toHexString(got) + " != " + Long.toHexString(c.want())));
        }

        // 2. the golden vectors
        Set<String> used = new HashSet<>();
        for (JsonNode c : manifest.get("cases")) {
            if (!c.get("kind").asText().equals("frames")) continue;
            String id = c.get("id").asText();
            String format = c.get("format").asText();
            JsonNode exp = c.get("expected");
            byte[] data = Files.readAllBytes(vectors.resolve(c.get("input").get("file").asText()));
            Receiver.Decoded got;
            try {
                got = new Receiver(c.get("checksum").asText(), c.get("max_envelope_body").asLong()).decode(format, data);
            } catch (RuntimeException e) { // a crash is a failed test
                report(false, id, List.of(e.toString()));
                continue;
            }
            List<String> problems = new ArrayList<>();
            if (c.get("valid").asBoolean()) {
                if (got.outcome != null) problems.add("unexpected error " + got.outcome);
                problems.addAll(compareRecords("frame", got.frames, exp.get("frames"), true, KaitaiJavaRunner::checkFrame));
                problems.addAll(compareRecords("envelope", got.envelopes, exp.get("envelopes"), true,
                        KaitaiJavaRunner::checkEnvelope));
                report(problems.isEmpty(), id, problems);
                continue;
            }
            String shortId = id.split("\\.", 3)[2];
            JsonNode entry = negatives.path(format).get(shortId);
            if (entry == null) {
                report(false, id, List.of("no entry in vector_negatives.yaml"));
                continue;
            }
            used.add(format + "." + shortId);
            String rule = entry.get("rule").asText();
            field(problems, "table rule against the manifest's", rule, exp.get("error").get("rule").asText());
            String want;
            if (entry.has("runner")) {
                want = "runner " + rule;
                // the frames decoded in full before the error
                problems.addAll(compareRecords("frame", got.frames, exp.get("frames"), false, KaitaiJavaRunner::checkFrame));
            } else {
                want = "grammar " + entry.get("stage").asText() + " " + entry.get("exception").asText();
            }
            field(problems, "outcome", got.outcome, want);
            report(problems.isEmpty(), id, problems);
        }
        for (var formats = negatives.fieldNames(); formats.hasNext(); ) {
            String format = formats.next();
            for (var names = negatives.get(format).fieldNames(); names.hasNext(); ) {
                String name = format + "." + names.next();
                if (!used.contains(name)) report(false, "vector_negatives.yaml " + name, List.of("no such invalid case"));
            }
        }
        // 3. kst-like cases
        ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
        List<Path> kstFiles;
        try (var files = Files.list(root.resolve("kaitai/tests/kst"))) {
            kstFiles = files.filter(f -> f.toString().endsWith(".kst")).sorted().toList();
        }
        for (Path file : kstFiles) {
            JsonNode kst = yaml.readTree(file.toFile());
            String name = "kst " + kst.get("id").asText();
            byte[] data = Kst.data(kst, vectors);
            Object parsed;
            try {
                parsed = Receiver.parse("kst", data, Kst.TYPES.get(kst.get("format").asText()));
            } catch (Receiver.GrammarError e) {
                String want = kst.has("exception") ? "kst " + kst.get("exception").asText() : null;
                report(e.getMessage().equals(want), name, List.of(e.getMessage()));
                continue;
            }
            if (kst.has("exception")) {
                report(false, name, List.of("parsed, expected " + kst.get("exception").asText()));
                continue;
            }
            List<String> problems = new ArrayList<>();
            for (JsonNode a : kst.get("asserts")) {
                String path = a.get("actual").asText();
                try {
                    Object actual = Kst.evaluate(parsed, data, path);
                    if (!Kst.matches(actual, a.get("expected"))) {
                        String shown = actual instanceof byte[] b ? HexFormat.of().formatHex(b) : String.valueOf(actual);
                        problems.add(path + " = " + shown + ", expected " + a.get("expected"));
                    }
                } catch (ReflectiveOperationException | RuntimeException e) {
                    problems.add(path + ": " + e);
                }
            }
            report(problems.isEmpty(), name, problems);
        }

        System.out.println("kaitai-java: " + passed + " passed, " + failed + " failed");
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2 || (args.length == 2 && !args[1].equals("--verbose"))) {
            System.err.println("usage: KaitaiJavaRunner REPO [--verbose]");
            System.exit(2);
        }
        KaitaiJavaRunner runner = new KaitaiJavaRunner(args.length == 2);
        runner.run(Path.of(args[0]));
        System.exit(runner.failed == 0 ? 0 : 1);
    }
}
