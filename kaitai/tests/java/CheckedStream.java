import io.kaitai.struct.ByteBufferKaitaiStream;
import io.kaitai.struct.KaitaiStream;

/**
 * The Java runtime's stream with a bounds-checked substream. Runtime 0.11's
 * {@code ByteBufferKaitaiStream.substream(n)} slices without checking that n bytes remain, so a
 * frame cut short inside a sized field (header, payload) throws
 * {@code IllegalArgumentException: newLimit > capacity} instead of an end-of-stream error. Here
 * the substream's bytes are read with {@code readBytes(n)}, which throws the runtime's
 * end-of-stream exception ({@code java.nio.BufferUnderflowException}) like every other read.
 */
final class CheckedStream extends ByteBufferKaitaiStream {
    CheckedStream(byte[] data) {
        super(data);
    }

    @Override
    public KaitaiStream substream(long n) {
        return new CheckedStream(readBytes(n));
    }
}
