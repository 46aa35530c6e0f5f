import java.util.List;

/**
 * Envelope opcodes despite the Java runtime's enums: runtime 0.11 gives null for an opcode its
 * enum does not list ({@code Opcode.byId} misses), losing the number. An unknown opcode is not a
 * framing error (the envelope is parsed and answered with an ERROR), so the runner recovers the
 * number from the envelope's own bytes: the opcode is byte 4 of the 9-byte header (ENV-1).
 */
final class Opcodes {
    private Opcodes() {}

    /** The opcode of envelope {@code e}, which starts at offset {@code at} of {@code content}. */
    static int code(CqlEnvelope e, byte[] content, int at) {
        CqlEnvelope.Opcode opcode = e.header().opcode();
        return opcode != null ? (int) opcode.id() : content[at + 4] & 0xFF;
    }

    /** The offset of envelope {@code index} in the content its list was parsed from. */
    static int offset(List<CqlEnvelope> envelopes, int index) {
        int at = 0;
        for (CqlEnvelope e : envelopes.subList(0, index)) at += 9 + e.header().bodyLength();
        return at;
    }
}
