package org.apache.cassandra.net;

import java.nio.ByteBuffer;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Factory;
import org.apache.cassandra.io.compress.BufferType;
import org.apache.cassandra.utils.ByteBufferUtil;

/**
 * Client frames of the LZ4 format with the negotiated payload checksum: the header carries the
 * checksum bit (bit 35, FMT-9), the trailer that checksum of the on-wire payload, compressed or
 * stored (CRC-4). A payload that does not shrink is stored (uncompressed length 0, LZ4-2).
 */
@ChannelHandler.Sharable
public final class ChecksumFrameEncoderLZ4 extends FrameEncoder
{
    private static final int HEADER_LENGTH = 8;
    private static final ChecksumFrameEncoderLZ4 crc32 = new ChecksumFrameEncoderLZ4(FrameChecksum.CRC32);
    private static final ChecksumFrameEncoderLZ4 crc32c = new ChecksumFrameEncoderLZ4(FrameChecksum.CRC32C);

    private final FrameChecksum checksum;
    private final LZ4Compressor compressor = LZ4Factory.fastestInstance().fastCompressor();

    private ChecksumFrameEncoderLZ4(FrameChecksum checksum)
    {
        this.checksum = checksum;
    }

    /** The (stateless, shared) encoder for {@code checksum}. */
    public static ChecksumFrameEncoderLZ4 of(FrameChecksum checksum)
    {
        return checksum == FrameChecksum.CRC32C ? crc32c : crc32;
    }

    ByteBuf encode(boolean isSelfContained, ByteBuffer in)
    {
        ByteBuffer frame = null;
        try
        {
            int uncompressedLength = in.remaining();
            if (uncompressedLength >= 1 << 17)
                throw new IllegalArgumentException("Maximum uncompressed payload size is 128KiB");
            int maxCompressedLength = compressor.maxCompressedLength(uncompressedLength);
            frame = bufferPool.getAtLeast(HEADER_LENGTH + maxCompressedLength + FrameChecksum.TRAILER_LENGTH, BufferType.OFF_HEAP);
            int compressedLength = compressor.compress(in, in.position(), uncompressedLength, frame, HEADER_LENGTH, maxCompressedLength);
            if (compressedLength >= uncompressedLength)
            {
                ByteBufferUtil.copyBytes(in, in.position(), frame, HEADER_LENGTH, uncompressedLength);
                compressedLength = uncompressedLength;
                uncompressedLength = 0;
            }
            long header5b = compressedLength | (long) uncompressedLength << 17;
            if (isSelfContained)
                header5b |= 1L << 34;
            if (checksum.checksumBit)
                header5b |= 1L << 35;
            ChecksumFrameEncoderCrc.putLittleEndian(frame, 0, header5b | (long) Crc.crc24(header5b, 5) << 40, HEADER_LENGTH);
            int payloadEnd = HEADER_LENGTH + compressedLength;
            FrameChecksum.writeTrailer(frame, payloadEnd, checksum.compute(frame, HEADER_LENGTH, payloadEnd));
            frame.limit(payloadEnd + FrameChecksum.TRAILER_LENGTH);
            frame.position(0);
            bufferPool.putUnusedPortion(frame);
            return GlobalBufferPoolAllocator.wrap(frame);
        }
        catch (Throwable t)
        {
            if (frame != null)
                bufferPool.put(frame);
            throw t;
        }
        finally
        {
            bufferPool.put(in);
        }
    }
}
