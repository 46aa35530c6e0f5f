package org.apache.cassandra.net;

import java.nio.ByteBuffer;

import io.netty.channel.ChannelPipeline;

/**
 * Client frames of the uncompressed format (6-byte header) with the negotiated payload checksum.
 * The header is read and its CRC24 checked by {@link FrameDecoderCrc}'s own code; the checksum bit
 * (header bit 18, FMT-5) and the trailer are this class's.
 */
public final class ChecksumFrameDecoderCrc extends ChecksumFrameDecoder
{
    private static final long CHECKSUM_BIT = 1L << 18;
    private static final int HEADER_LENGTH = FrameDecoderCrc.HEADER_LENGTH;

    public ChecksumFrameDecoderCrc(BufferPoolAllocator allocator, FrameChecksum checksum)
    {
        super(allocator, checksum, HEADER_LENGTH);
    }

    long readHeader(ByteBuffer frame, int begin)
    {
        return FrameDecoderCrc.readHeader6b(frame, begin);
    }

    CorruptFrame verifyHeader(long header6b)
    {
        CorruptFrame corrupt = FrameDecoderCrc.verifyHeader6b(header6b);
        if (corrupt == null)
            verifyChecksumBit(header6b, CHECKSUM_BIT);
        return corrupt;
    }

    int frameLength(long header6b)
    {
        return HEADER_LENGTH + FrameDecoderCrc.payloadLength(header6b) + FrameChecksum.TRAILER_LENGTH;
    }

    Frame unpackFrame(ShareableBytes bytes, int begin, int end, long header6b)
    {
        ByteBuffer in = bytes.get();
        boolean isSelfContained = FrameDecoderCrc.isSelfContained(header6b);
        int payloadEnd = end - FrameChecksum.TRAILER_LENGTH;
        int read = FrameChecksum.readTrailer(in, end);
        int computed = checksum.compute(in, begin + HEADER_LENGTH, payloadEnd);
        if (read != computed)
            return CorruptFrame.recoverable(isSelfContained, payloadEnd - begin - HEADER_LENGTH, read, computed);
        return new IntactFrame(isSelfContained, bytes.slice(begin + HEADER_LENGTH, payloadEnd));
    }

    void addLastTo(ChannelPipeline pipeline)
    {
        pipeline.addLast("frameDecoderChecksumCrc", this);
    }
}
