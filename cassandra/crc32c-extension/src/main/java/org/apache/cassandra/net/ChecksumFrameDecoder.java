package org.apache.cassandra.net;

import java.util.Collection;

import org.apache.cassandra.transport.ProtocolException;

/**
 * What the kit's client frame decoders add to Cassandra's: the payload checksum the connection
 * negotiated (not always CRC32), the checksum bit checked on every header (RECV-3), and framing
 * errors that are not CRC mismatches raised as a fatal PROTOCOL_ERROR, after which the decoder
 * drops everything (RECV-11): Cassandra's exception handler answers one framed ERROR on stream 0
 * and closes the connection.
 */
abstract class ChecksumFrameDecoder extends FrameDecoderWith8bHeader
{
    final FrameChecksum checksum;
    private final int headerLength;
    private boolean failed;

    ChecksumFrameDecoder(BufferPoolAllocator allocator, FrameChecksum checksum, int headerLength)
    {
        super(allocator);
        this.checksum = checksum;
        this.headerLength = headerLength;
    }

    /** Fails the connection when {@code header}'s checksum bit ({@code bit}) disagrees with the negotiation. */
    final void verifyChecksumBit(long header, long bit)
    {
        boolean set = (header & bit) != 0;
        if (set != checksum.checksumBit)
            throw framingError(String.format("frame checksum bit is %d but the connection negotiated %s (FRAME_CHECKSUM; spec RECV-3)",
                                             set ? 1 : 0, checksum.wireName));
    }

    /** A framing error the client is told about with PROTOCOL_ERROR before the close. */
    static ProtocolException framingError(String message)
    {
        return ProtocolException.toFatalException(new ProtocolException(message));
    }

    @Override
    final void decode(Collection<Frame> into, ShareableBytes bytes)
    {
        if (failed)
        {
            bytes.release();
            return;
        }
        try
        {
            decode(into, bytes, headerLength);
        }
        catch (ProtocolException e)
        {
            failed = true;
            discard();
            throw e;
        }
    }
}
