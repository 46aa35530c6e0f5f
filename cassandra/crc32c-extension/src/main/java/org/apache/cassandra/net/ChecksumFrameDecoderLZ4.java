package org.apache.cassandra.net;

import java.nio.ByteBuffer;

import io.netty.channel.ChannelPipeline;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;

/**
 * Client frames of the LZ4 format (8-byte header: 5 bytes of fields and their CRC24, FMT-7 to
 * FMT-11) with the negotiated payload checksum over the on-wire payload (CRC-4). A block that is
 * malformed or yields another length than its header declares is a framing error (LZ4-4).
 */
public final class ChecksumFrameDecoderLZ4 extends ChecksumFrameDecoder
{
    private static final int HEADER_LENGTH = 8;
    private static final long CHECKSUM_BIT = 1L << 35;
    private static final int LENGTH_MASK = 0x1FFFF;

    private final LZ4SafeDecompressor decompressor = LZ4Factory.fastestInstance().safeDecompressor();

    public ChecksumFrameDecoderLZ4(BufferPoolAllocator allocator, FrameChecksum checksum)
    {
        super(allocator, checksum, HEADER_LENGTH);
    }

    private static int compressedLength(long header8b)
    {
        return (int) header8b & LENGTH_MASK;
    }

    private static int uncompressedLength(long header8b)
    {
        return (int) (header8b >>> 17) & LENGTH_MASK;
    }

    private static boolean isSelfContained(long header8b)
    {
        return (header8b & (1L << 34)) != 0;
    }

    long readHeader(ByteBuffer frame, int begin)
    {
        long header8b = frame.getLong(begin);
        return frame.order() == java.nio.ByteOrder.BIG_ENDIAN ? Long.reverseBytes(header8b) : header8b;
    }

    CorruptFrame verifyHeader(long header8b)
    {
        int read = (int) (header8b >>> 40) & 0xFFFFFF;
        int computed = Crc.crc24(header8b, 5);
        if (read != computed)
            return CorruptFrame.unrecoverable(read, computed);
        verifyChecksumBit(header8b, CHECKSUM_BIT);
        return null;
    }

    int frameLength(long header8b)
    {
        return HEADER_LENGTH + compressedLength(header8b) + FrameChecksum.TRAILER_LENGTH;
    }

    Frame unpackFrame(ShareableBytes bytes, int begin, int end, long header8b)
    {
        ByteBuffer in = bytes.get();
        boolean isSelfContained = isSelfContained(header8b);
        int uncompressedLength = uncompressedLength(header8b);
        int payloadStart = begin + HEADER_LENGTH;
        int payloadEnd = end - FrameChecksum.TRAILER_LENGTH;
        int read = FrameChecksum.readTrailer(in, end);
        int computed = checksum.compute(in, payloadStart, payloadEnd);
        if (read != computed)
            return CorruptFrame.recoverable(isSelfContained, uncompressedLength == 0 ? payloadEnd - payloadStart : uncompressedLength, read, computed);
        if (uncompressedLength == 0)
            return new IntactFrame(isSelfContained, bytes.slice(payloadStart, payloadEnd));

        ByteBuffer out = allocator.get(uncompressedLength);
        try
        {
            int produced = decompressor.decompress(in, payloadStart, payloadEnd - payloadStart, out, 0, uncompressedLength);
            if (produced != uncompressedLength)
                throw framingError(String.format("LZ4 block yields %d bytes, its frame header declares %d (spec LZ4-4)", produced, uncompressedLength));
            return new IntactFrame(isSelfContained, ShareableBytes.wrap(out));
        }
        catch (LZ4Exception e)
        {
            allocator.put(out);
            throw framingError("malformed LZ4 block (spec LZ4-4): " + e.getMessage());
        }
        catch (Throwable t)
        {
            allocator.put(out);
            throw t;
        }
    }

    void addLastTo(ChannelPipeline pipeline)
    {
        pipeline.addLast("frameDecoderChecksumLZ4", this);
    }
}
