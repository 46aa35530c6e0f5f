package org.cqlframe.cassandra.crc32c;

import java.util.List;
import java.util.Map;

import io.netty.channel.ChannelHandlerContext;
import net.bytebuddy.asm.Advice;
import org.apache.cassandra.net.BufferPoolAllocator;
import org.apache.cassandra.net.FrameChecksum;
import org.apache.cassandra.net.FrameDecoder;
import org.apache.cassandra.net.FrameEncoder;

/**
 * The Byte Buddy advice {@link Agent} weaves into Cassandra's methods: each one only hands over
 * to {@link FrameChecksumNegotiation}, so Cassandra's code stays as shipped around it.
 */
final class Hooks
{
    private Hooks() {}

    /** {@code SupportedMessage(Map)}: every SUPPORTED this node sends lists FRAME_CHECKSUMS. */
    static final class Supported
    {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) Map<String, List<String>> supported)
        {
            FrameChecksumNegotiation.advertise(supported);
        }
    }

    /**
     * {@code StartupMessage.execute}: FRAME_CHECKSUM judged first, recorded if the STARTUP is
     * accepted. The message is typed Object here: naming the class being woven would load it
     * while it is being defined.
     */
    static final class Startup
    {
        @Advice.OnMethodEnter
        static FrameChecksum enter(@Advice.This Object startup)
        {
            return FrameChecksumNegotiation.requested(startup);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.This Object startup, @Advice.Enter FrameChecksum checksum)
        {
            FrameChecksumNegotiation.accepted(startup, checksum);
        }
    }

    /** {@code PipelineConfigurator.configureModernPipeline}: the connection's checksum for the codec choice below. */
    static final class ModernPipeline
    {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(0) ChannelHandlerContext ctx)
        {
            FrameChecksumNegotiation.configuring(ctx);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit()
        {
            FrameChecksumNegotiation.configured();
        }
    }

    /** {@code PipelineConfigurator.frameDecoder}: the kit's decoder instead of Cassandra's, for a known format. */
    static final class Decoder
    {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static FrameDecoder enter(@Advice.Argument(0) String compression, @Advice.Argument(1) BufferPoolAllocator allocator)
        {
            return FrameChecksumNegotiation.decoder(compression, allocator);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter FrameDecoder ours, @Advice.Return(readOnly = false) FrameDecoder returned)
        {
            if (ours != null)
                returned = ours;
        }
    }

    /** {@code PipelineConfigurator.frameEncoder}: the kit's encoder instead of Cassandra's, for a known format. */
    static final class Encoder
    {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static FrameEncoder enter(@Advice.Argument(0) String compression)
        {
            return FrameChecksumNegotiation.encoder(compression);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter FrameEncoder ours, @Advice.Return(readOnly = false) FrameEncoder returned)
        {
            if (ours != null)
                returned = ours;
        }
    }
}
