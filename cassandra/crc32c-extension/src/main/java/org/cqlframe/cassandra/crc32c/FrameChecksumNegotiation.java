package org.cqlframe.cassandra.crc32c;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.AttributeKey;
import org.apache.cassandra.net.BufferPoolAllocator;
import org.apache.cassandra.net.ChecksumFrameDecoderCrc;
import org.apache.cassandra.net.ChecksumFrameDecoderLZ4;
import org.apache.cassandra.net.ChecksumFrameEncoderCrc;
import org.apache.cassandra.net.ChecksumFrameEncoderLZ4;
import org.apache.cassandra.net.FrameChecksum;
import org.apache.cassandra.net.FrameDecoder;
import org.apache.cassandra.net.FrameEncoder;
import org.apache.cassandra.transport.ProtocolException;
import org.apache.cassandra.transport.ProtocolVersion;
import org.apache.cassandra.transport.messages.StartupMessage;

/**
 * The spec's payload-checksum negotiation (NEG-3 to NEG-8) on Cassandra's client connections:
 * what SUPPORTED lists, how STARTUP's FRAME_CHECKSUM is judged, and which frame codec the
 * framed pipeline gets. {@link Hooks} calls these from inside Cassandra's own methods.
 */
public final class FrameChecksumNegotiation
{
    /** SUPPORTED's key listing the accepted payload checksums (NEG-3). */
    public static final String SUPPORTED_KEY = "FRAME_CHECKSUMS";
    /** STARTUP's option selecting one (NEG-5); Cassandra upper-cases STARTUP keys. */
    public static final String STARTUP_KEY = "FRAME_CHECKSUM";

    /** The checksum a connection's accepted STARTUP chose; absent means CRC32 (LIFE-8). */
    private static final AttributeKey<FrameChecksum> NEGOTIATED = AttributeKey.valueOf("cqlframe.frameChecksum");

    /** The checksum of the connection whose framed pipeline this thread is configuring. */
    private static final ThreadLocal<FrameChecksum> CONFIGURING = new ThreadLocal<>();

    private FrameChecksumNegotiation() {}

    /** Adds FRAME_CHECKSUMS, every accepted checksum in lower case, to a SUPPORTED map. */
    public static void advertise(Map<String, List<String>> supported)
    {
        supported.put(SUPPORTED_KEY, acceptedNames());
    }

    /**
     * The checksum a STARTUP asks for: CRC32 when FRAME_CHECKSUM is absent or the protocol
     * version is unframed (NEG-7). An unknown value is refused with PROTOCOL_ERROR (NEG-6).
     */
    public static FrameChecksum requested(Object message)
    {
        StartupMessage startup = (StartupMessage) message;
        String value = startup.options.get(STARTUP_KEY);
        if (value == null || !startup.getSource().header.version.isGreaterOrEqualTo(ProtocolVersion.V5))
            return FrameChecksum.CRC32;
        FrameChecksum checksum = FrameChecksum.named(value);
        if (checksum == null)
            throw new ProtocolException(String.format("Unknown %s value '%s': this node accepts %s (spec NEG-6)",
                                                      STARTUP_KEY, value, String.join(", ", acceptedNames())));
        return checksum;
    }

    /** The names of the checksums this node accepts, as SUPPORTED lists them. */
    private static List<String> acceptedNames()
    {
        List<String> names = new ArrayList<>();
        for (FrameChecksum c : FrameChecksum.values())
            names.add(c.wireName);
        return names;
    }

    /** Records the checksum of a STARTUP that was answered with READY or AUTHENTICATE. */
    public static void accepted(Object startup, FrameChecksum checksum)
    {
        ((StartupMessage) startup).connection().channel().attr(NEGOTIATED).set(checksum);
    }

    /** Called as Cassandra starts configuring the framed pipeline of {@code ctx}'s channel. */
    public static void configuring(ChannelHandlerContext ctx)
    {
        Channel channel = ctx.channel();
        FrameChecksum checksum = channel.attr(NEGOTIATED).get();
        CONFIGURING.set(checksum == null ? FrameChecksum.CRC32 : checksum);
    }

    /** Called when that configuration has ended, normally or not. */
    public static void configured()
    {
        CONFIGURING.remove();
    }

    private static FrameChecksum current()
    {
        FrameChecksum checksum = CONFIGURING.get();
        return checksum == null ? FrameChecksum.CRC32 : checksum;
    }

    private static boolean isLz4(String compression)
    {
        return "lz4".equalsIgnoreCase(compression);
    }

    /** The frame decoder for the connection being configured, or null to leave an unknown compression to Cassandra. */
    public static FrameDecoder decoder(String compression, BufferPoolAllocator allocator)
    {
        if (compression == null)
            return new ChecksumFrameDecoderCrc(allocator, current());
        return isLz4(compression) ? new ChecksumFrameDecoderLZ4(allocator, current()) : null;
    }

    /** The frame encoder for the connection being configured, or null to leave an unknown compression to Cassandra. */
    public static FrameEncoder encoder(String compression)
    {
        if (compression == null)
            return ChecksumFrameEncoderCrc.of(current());
        return isLz4(compression) ? ChecksumFrameEncoderLZ4.of(current()) : null;
    }
}
