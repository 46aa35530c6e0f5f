package org.apache.cassandra.net;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

import io.netty.util.concurrent.FastThreadLocal;

/**
 * The payload checksum a client connection negotiated with STARTUP's FRAME_CHECKSUM (spec
 * NEG-5): which trailer its frames carry and which value their checksum bit has (FMT-13).
 * Lives in Cassandra's net package to reuse its seeded CRC32 ({@link Crc}) for the default.
 */
public enum FrameChecksum
{
    /** Protocol v5's CRC-32/ISO-HDLC fed FA 2D 55 CA first (CRC-2); checksum bit clear. */
    CRC32("crc32", false)
    {
        int compute(ByteBuffer buffer, int start, int end)
        {
            java.util.zip.CRC32 crc = Crc.crc32();
            Crc.updateCrc32(crc, buffer, start, end);
            return (int) crc.getValue();
        }
    },
    /** CRC-32/ISCSI, unseeded (CRC-3); checksum bit set. */
    CRC32C("crc32c", true)
    {
        int compute(ByteBuffer buffer, int start, int end)
        {
            CRC32C crc = crc32c.get();
            crc.reset();
            int position = buffer.position();
            int limit = buffer.limit();
            buffer.limit(end).position(start);
            crc.update(buffer);
            buffer.limit(limit).position(position);
            return (int) crc.getValue();
        }
    };

    /** Bytes of the payload checksum after every payload (FMT-1). */
    static final int TRAILER_LENGTH = 4;

    /** One reusable CRC32C per thread, as {@link Crc} keeps one CRC32. */
    private static final FastThreadLocal<CRC32C> crc32c = new FastThreadLocal<CRC32C>()
    {
        @Override
        protected CRC32C initialValue()
        {
            return new CRC32C();
        }
    };

    /** The value's name in SUPPORTED's FRAME_CHECKSUMS and STARTUP's FRAME_CHECKSUM. */
    public final String wireName;
    /** Whether frames of this checksum have the checksum bit set (FMT-13). */
    public final boolean checksumBit;

    FrameChecksum(String wireName, boolean checksumBit)
    {
        this.wireName = wireName;
        this.checksumBit = checksumBit;
    }

    /** The checksum of {@code buffer}'s bytes [start, end); position and limit are kept. */
    abstract int compute(ByteBuffer buffer, int start, int end);

    /** The 4-byte little-endian trailer that ends at {@code end} (FMT-1). */
    static int readTrailer(ByteBuffer frame, int end)
    {
        int i = end - TRAILER_LENGTH;
        return (frame.get(i) & 0xff) | (frame.get(i + 1) & 0xff) << 8 | (frame.get(i + 2) & 0xff) << 16 | (frame.get(i + 3) & 0xff) << 24;
    }

    /** Writes {@code value} as the little-endian trailer at {@code index}, whatever the buffer's order. */
    static void writeTrailer(ByteBuffer frame, int index, int value)
    {
        for (int i = 0; i < TRAILER_LENGTH; i++)
            frame.put(index + i, (byte) (value >>> (8 * i)));
    }

    /** The checksum a FRAME_CHECKSUM value names, compared ASCII case-insensitively (NEG-5), or null. */
    public static FrameChecksum named(String value)
    {
        for (FrameChecksum c : values())
            if (c.isNamed(value))
                return c;
        return null;
    }

    /** ASCII only: Unicode case folding would let other letters match. */
    private boolean isNamed(String value)
    {
        if (value.length() != wireName.length())
            return false;
        for (int i = 0; i < value.length(); i++)
        {
            char c = value.charAt(i);
            if (c >= 'A' && c <= 'Z')
                c += 'a' - 'A';
            if (c != wireName.charAt(i))
                return false;
        }
        return true;
    }
}
