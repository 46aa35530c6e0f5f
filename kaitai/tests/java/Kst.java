import com.fasterxml.jackson.databind.JsonNode;
import io.kaitai.struct.KaitaiStream;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The kst-like cases of kaitai/tests/kst (kaitai_struct_tests' shape: id, data, asserts or
 * exception), evaluated on the generated Java classes: a path {@code a.b[1].c_d} calls
 * {@code a().b().get(1).cD()}, {@code size} is a list's or byte array's length, an expected
 * {@code x::y::z} is a member of the generated enum.
 */
final class Kst {
    private Kst() {}

    static final Map<String, Function<KaitaiStream, Object>> TYPES = Map.of(
            "cql_envelope", CqlEnvelope::new,
            "cql_envelopes", CqlEnvelopes::new,
            "cql_frame_uncompressed", CqlFrameUncompressed::new,
            "cql_frame_lz4", CqlFrameLz4::new,
            "cql_frames_uncompressed", CqlFramesUncompressed::new,
            "cql_frames_lz4", CqlFramesLz4::new);

    static final Map<String, Class<? extends Enum<?>>> ENUMS = Map.of(
            "cql_envelope::opcode", CqlEnvelope.Opcode.class,
            "cql_envelope::flag", CqlEnvelope.Flag.class,
            "cql_frame_uncompressed::payload_checksum_algorithm", CqlFrameUncompressed.PayloadChecksumAlgorithm.class,
            "cql_frame_lz4::payload_checksum_algorithm", CqlFrameLz4.PayloadChecksumAlgorithm.class);

    /** The input of a case: a file under vectors/ or inline hex. */
    static byte[] data(JsonNode kst, java.nio.file.Path vectors) throws Exception {
        if (kst.has("data")) return java.nio.file.Files.readAllBytes(vectors.resolve(kst.get("data").asText()));
        return HexFormat.of().parseHex(kst.get("data-hex").asText());
    }

    private static String camel(String snake) {
        StringBuilder out = new StringBuilder();
        boolean upper = false;
        for (char c : snake.toCharArray()) {
            if (c == '_') upper = true;
            else {
                out.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return out.toString();
    }

    private static Object call(Object obj, String snake) throws Exception {
        return obj.getClass().getMethod(camel(snake)).invoke(obj);
    }

    /**
     * The value of a path on a parsed object. Where the path goes through an envelope, its bytes
     * are tracked so that an opcode the runtime's enum does not know keeps its number (Opcodes).
     */
    static Object evaluate(Object root, byte[] data, String path) throws Exception {
        Object obj = root;
        byte[] content = root instanceof CqlEnvelope ? data : null;
        int at = 0;
        CqlEnvelope envelope = root instanceof CqlEnvelope e ? e : null;
        for (String part : path.split("\\.")) {
            Integer index = null;
            if (part.endsWith("]")) {
                int open = part.indexOf('[');
                index = Integer.decode(part.substring(open + 1, part.length() - 1));
                part = part.substring(0, open);
            }
            if (part.equals("size") && obj instanceof List<?> list) obj = list.size();
            else if (part.equals("size") && obj instanceof byte[] bytes) obj = bytes.length;
            else {
                Object owner = obj;
                obj = call(owner, part);
                if (obj == null && part.equals("opcode") && envelope != null) obj = Opcodes.code(envelope, content, at);
                if (part.equals("envelopes") && index != null) {
                    @SuppressWarnings("unchecked")
                    List<CqlEnvelope> envelopes = (List<CqlEnvelope>) obj;
                    content = owner instanceof CqlEnvelopes ? data : (byte[]) call(owner, "bytes");
                    at = Opcodes.offset(envelopes, index);
                    envelope = envelopes.get(index);
                }
            }
            if (index != null) obj = ((List<?>) obj).get(index);
        }
        return obj;
    }

    private static long number(JsonNode node) {
        return node.isNumber() ? node.asLong() : Long.decode(node.asText());
    }

    /** Whether an evaluated value equals the case's expected value. */
    static boolean matches(Object actual, JsonNode expected) {
        if (expected.isBoolean()) return Boolean.valueOf(expected.asBoolean()).equals(actual);
        if (expected.isArray()) {
            byte[] want = new byte[expected.size()];
            for (int i = 0; i < want.length; i++) want[i] = (byte) number(expected.get(i));
            return actual instanceof byte[] got && Arrays.equals(got, want);
        }
        String text = expected.asText();
        if (text.contains("::")) {
            int cut = text.lastIndexOf("::");
            Class<? extends Enum<?>> type = ENUMS.get(text.substring(0, cut));
            String member = text.substring(cut + 2).toUpperCase();
            return actual instanceof Enum<?> e && e.getDeclaringClass() == type && e.name().equals(member);
        }
        return actual instanceof Number n && !(actual instanceof Double) && n.longValue() == number(expected);
    }
}
