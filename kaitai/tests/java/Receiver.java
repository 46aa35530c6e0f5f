import io.kaitai.struct.KaitaiStream;
import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The receiver around the generated Java parsers: the generated stream type parses the whole
 * input, then this class does what the grammar cannot (spec "Decoding procedure"), in the order
 * of run_python.py.
 */
final class Receiver {
    private final String algorithm;
    private final long maxBody;

    Receiver(String algorithm, long maxBody) {
        this.algorithm = algorithm;
        this.maxBody = maxBody;
    }

    /** What the receiver needs of one parsed frame, whichever the format. */
    record FrameView(int size, long payloadLength, Long uncompressedLength, boolean selfContained,
            boolean checksumBit, boolean stored, long reserved, long headerCrc24, byte[] crc24Input,
            byte[] payload, byte[] block, List<CqlEnvelope> envelopes, long payloadChecksum) {}

    /** One decoded frame, in the manifest's terms. */
    record FrameRecord(int offset, boolean selfContained, long payloadLength, Long uncompressedLength,
            boolean checksumBit, long reserved, String headerCrc24, String payloadChecksum,
            byte[] payload, byte[] content) {}

    /** One decoded envelope, in the manifest's terms. */
    record EnvelopeRecord(int version, int flags, int stream, int opcode, String opcodeName,
            int length, byte[] body) {}

    /** What a decode produced; outcome is null (accepted), "runner RULE" or "grammar STAGE EXCEPTION". */
    static final class Decoded {
        final List<FrameRecord> frames = new ArrayList<>();
        final List<EnvelopeRecord> envelopes = new ArrayList<>();
        String outcome;
    }

    /** A Kaitai error of one parse stage ("frames", "content", "sequence"). */
    static final class GrammarError extends Exception {
        GrammarError(String stage, String name) {
            super(stage + " " + name);
        }
    }

    /** A rule the runner's own checks found. */
    static final class RunnerRule extends Exception {
        RunnerRule(String rule) {
            super(rule);
        }
    }

    /** The kst name of a runtime exception, or null when it is not a Kaitai error. */
    static String kstName(RuntimeException e) {
        if (e instanceof BufferUnderflowException) return "EndOfStreamError";
        if (e instanceof KaitaiStream.KaitaiStructError) return e.getClass().getSimpleName();
        return null;
    }

    /** Runs one generated parser over data; a Kaitai error becomes a GrammarError of that stage. */
    static <T> T parse(String stage, byte[] data, Function<KaitaiStream, T> type) throws GrammarError {
        try {
            return type.apply(new CheckedStream(data));
        } catch (RuntimeException e) {
            String name = kstName(e);
            if (name == null) throw e;
            throw new GrammarError(stage, name);
        }
    }

    static List<FrameView> uncompressedViews(byte[] data) throws GrammarError {
        List<FrameView> views = new ArrayList<>();
        for (CqlFrameUncompressed f : parse("frames", data, CqlFramesUncompressed::new).frames()) {
            CqlFrameUncompressed.Header h = f.header();
            views.add(new FrameView(6 + (int) h.payloadLength() + 4, h.payloadLength(), null,
                    h.selfContained(), h.checksumBit(), true, h.reserved(), h.headerCrc24(), h.crc24Input(),
                    f.payload().bytes(), null, f.payload().envelopes(), f.payloadChecksum()));
        }
        return views;
    }

    static List<FrameView> lz4Views(byte[] data) throws GrammarError {
        List<FrameView> views = new ArrayList<>();
        for (CqlFrameLz4 f : parse("frames", data, CqlFramesLz4::new).frames()) {
            CqlFrameLz4.Header h = f.header();
            views.add(new FrameView(8 + (int) h.compressedLength() + 4, h.compressedLength(),
                    h.uncompressedLength(), h.selfContained(), h.checksumBit(), h.isStored(), h.reserved(),
                    h.headerCrc24(), h.crc24Input(), f.payload().bytes(), f.payload().block(),
                    f.payload().envelopes(), f.payloadChecksum()));
        }
        return views;
    }

    Decoded decode(String format, byte[] data) {
        Decoded out = new Decoded();
        try {
            List<FrameView> views = switch (format) {
                case "uncompressed" -> uncompressedViews(data);
                case "lz4" -> lz4Views(data);
                default -> throw new IllegalArgumentException("unknown frame format " + format);
            };
            receive(views, data.length, out);
        } catch (GrammarError e) {
            out.outcome = "grammar " + e.getMessage();
        } catch (RunnerRule e) {
            out.outcome = "runner " + e.getMessage();
        }
        return out;
    }

    private void receive(List<FrameView> views, int length, Decoded out) throws GrammarError, RunnerRule {
        int offset = 0;
        ByteArrayOutputStream sequence = null;
        for (FrameView f : views) {
            if (Checks.crc24(f.crc24Input()) != f.headerCrc24()) throw new RunnerRule("RECV-1");
            if (f.checksumBit() != algorithm.equals("crc32c")) throw new RunnerRule("RECV-3");
            if (Checks.payloadChecksum(algorithm, f.payload()) != f.payloadChecksum()) throw new RunnerRule("RECV-2");
            byte[] content = f.payload();
            if (!f.stored()) {
                try {
                    content = Checks.lz4Decompress(f.block(), (int) (long) f.uncompressedLength());
                } catch (Checks.Lz4Failure e) {
                    throw new RunnerRule("LZ4-4");
                } catch (Checks.Lz4EndOfBlock e) {
                    throw new RunnerRule("LZ4-6");
                }
            }
            out.frames.add(new FrameRecord(offset, f.selfContained(), f.payloadLength(), f.uncompressedLength(),
                    f.checksumBit(), f.reserved(), String.format("%06x", f.headerCrc24()),
                    String.format("%08x", f.payloadChecksum()), f.payload(), content));
            offset += f.size();
            if (f.selfContained()) {
                if (sequence != null) throw new RunnerRule("RECV-8");
                List<CqlEnvelope> envelopes = f.stored() ? f.envelopes()
                        : parse("content", content, CqlEnvelopes::new).envelopes();
                int at = 0;
                for (CqlEnvelope e : envelopes) {
                    if (e.header().bodyLength() > maxBody) throw new RunnerRule("RECV-12");
                    out.envelopes.add(record(e, content, at));
                    at += 9 + e.header().bodyLength();
                }
                continue;
            }
            if (content.length == 0) throw new RunnerRule("RECV-10"); // the grammar catches it first
            if (sequence == null) sequence = new ByteArrayOutputStream();
            sequence.writeBytes(content);
            if (sequence.size() < 9) continue;
            byte[] bytes = sequence.toByteArray();
            CqlEnvelope.Header header = parse("sequence", java.util.Arrays.copyOf(bytes, 9), CqlEnvelope.Header::new);
            if (header.bodyLength() > maxBody) throw new RunnerRule("RECV-12");
            long total = 9L + header.bodyLength();
            if (bytes.length > total) throw new RunnerRule("RECV-7");
            if (bytes.length == total) {
                out.envelopes.add(record(parse("sequence", bytes, CqlEnvelope::new), bytes, 0));
                sequence = null;
            }
        }
        if (offset != length) throw new IllegalStateException("frames cover " + offset + " of " + length + " bytes");
        if (sequence != null) throw new RunnerRule("RECV-9");
    }

    /** An envelope in the manifest's terms; it starts at offset {@code at} of {@code content}. */
    private static EnvelopeRecord record(CqlEnvelope e, byte[] content, int at) {
        CqlEnvelope.Header h = e.header();
        int code = Opcodes.code(e, content, at);
        String name = h.opcode() != null ? h.opcode().name() : String.format("0x%02x", code);
        return new EnvelopeRecord(h.version(), h.flags(), h.stream(), code, name, h.bodyLength(), e.body());
    }
}
