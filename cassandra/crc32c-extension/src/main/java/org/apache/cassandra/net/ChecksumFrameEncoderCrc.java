package org.apache.cassandra.net;

import java.nio.ByteBuffer;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;

/**
 * Client frames of the uncompressed format with the negotiated payload checksum: the header
 * carries the checksum bit (bit 18, FMT-13), the trailer that checksum of the payload. The payload
 * buffer is laid out by {@link FrameEncoderCrc}'s allocator (6 header and 4 trailer bytes reserved).
 */
@ChannelHandler.Sharable
public final class ChecksumFrameEncoderCrc extends FrameEncoder
{
    private static final int HEADER_LENGTH = FrameEncoderCrc.HEADER_LENGTH;
    private static final ChecksumFrameEncoderCrc crc32 = new ChecksumFrameEncoderCrc(FrameChecksum.CRC32);
    private static final ChecksumFrameEncoderCrc crc32c = new ChecksumFrameEncoderCrc(FrameChecksum.CRC32C);

    private final FrameChecksum checksum;

    private ChecksumFrameEncoderCrc(FrameChecksum checksum)
    {
        this.checksum = checksum;
    }

    /** The (stateless, shared) encoder for {@code checksum}. */
    public static ChecksumFrameEncoderCrc of(FrameChecksum checksum)
    {
        return checksum == FrameChecksum.CRC32C ? crc32c : crc32;
    }

    @Override
    public PayloadAllocator allocator()
    {
        return FrameEncoderCrc.allocator;
    }

    ByteBuf encode(boolean isSelfContained, ByteBuffer frame)
    {
        try
        {
            int frameLength = frame.remaining();
            int payloadLength = frameLength - HEADER_LENGTH - FrameChecksum.TRAILER_LENGTH;
            if (payloadLength >= 1 << 17)
                throw new IllegalArgumentException("Maximum payload size is 128KiB");
            int header3b = payloadLength;
            if (isSelfContained)
                header3b |= 1 << 17;
            if (checksum.checksumBit)
                header3b |= 1 << 18;
            putLittleEndian(frame, 0, header3b, 3);
            putLittleEndian(frame, 3, Crc.crc24(header3b, 3), 3);
            int payloadEnd = HEADER_LENGTH + payloadLength;
            FrameChecksum.writeTrailer(frame, payloadEnd, checksum.compute(frame, HEADER_LENGTH, payloadEnd));
            return GlobalBufferPoolAllocator.wrap(frame);
        }
        catch (Throwable t)
        {
            bufferPool.put(frame);
            throw t;
        }
    }

    /** The low {@code length} bytes of {@code value} at {@code index}, least significant first. */
    static void putLittleEndian(ByteBuffer frame, int index, long value, int length)
    {
        for (int i = 0; i < length; i++)
            frame.put(index + i, (byte) (value >>> (8 * i)));
    }
}
