package org.cqlframe.conformance.checksum;

import com.datastax.dse.driver.api.core.DseProtocolVersion;
import com.datastax.oss.driver.api.core.DefaultProtocolVersion;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.session.ProgrammaticArguments;
import com.datastax.oss.driver.internal.core.DefaultProtocolFeature;
import com.datastax.oss.driver.internal.core.channel.ChannelFactory;
import com.datastax.oss.driver.internal.core.context.DefaultDriverContext;
import com.datastax.oss.driver.internal.core.context.DefaultNettyOptions;
import com.datastax.oss.driver.internal.core.context.NettyOptions;
import com.datastax.oss.protocol.internal.SegmentCodec;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;

/**
 * The driver's context with a FRAME_CHECKSUM opt-in: every channel gets a {@link
 * FrameChecksumHandler} (through the driver's NettyOptions hook), and the segment codec the driver
 * takes when it switches a channel to framing is that channel's {@link ChecksumSegmentCodec}.
 *
 * <p>The driver builds a channel's segment encoder and decoder from {@link #getSegmentCodec()}
 * inside ProtocolInitHandler, while it handles the READY or AUTHENTICATE answering STARTUP, on the
 * channel's event loop; the handler marks that moment on the thread ({@link #switchingTo}).
 */
public class FrameChecksumContext extends DefaultDriverContext {
  private static final ThreadLocal<PayloadChecksum> SWITCHING = new ThreadLocal<>();

  private final PayloadChecksum wanted;

  private final Map<PayloadChecksum, SegmentCodec<ByteBuf>> codecs = new ConcurrentHashMap<>();

  /** How many channels switched to framing with each payload checksum. */
  private final Map<PayloadChecksum, LongAdder> switched = new ConcurrentHashMap<>();

  public FrameChecksumContext(
      DriverConfigLoader configLoader, ProgrammaticArguments arguments, PayloadChecksum wanted) {
    super(configLoader, arguments);
    this.wanted = wanted;
  }

  @Override
  protected NettyOptions buildNettyOptions() {
    return new DefaultNettyOptions(this) {
      @Override
      public void afterChannelInitialized(Channel channel) {
        super.afterChannelInitialized(channel);
        channel
            .pipeline()
            .addBefore(
                ChannelFactory.INFLIGHT_HANDLER_NAME,
                FrameChecksumHandler.NAME,
                new FrameChecksumHandler(FrameChecksumContext.this));
      }
    };
  }

  @Override
  public SegmentCodec<ByteBuf> getSegmentCodec() {
    PayloadChecksum checksum = SWITCHING.get();
    if (checksum == null) {
      return super.getSegmentCodec();
    }
    return codecs.computeIfAbsent(
        checksum, c -> new ChecksumSegmentCodec(getPrimitiveCodec(), getCompressor(), c));
  }

  /** Whether a STARTUP of this protocol version switches the connection to framing. */
  boolean isFramed(int protocolVersion) {
    return Stream.<ProtocolVersion>concat(
            Arrays.stream(DefaultProtocolVersion.values()),
            Arrays.stream(DseProtocolVersion.values()))
        .filter(v -> v.getCode() == protocolVersion)
        .anyMatch(
            v -> getProtocolVersionRegistry().supports(v, DefaultProtocolFeature.MODERN_FRAMING));
  }

  /** The checksum to ask for where the node offers it. */
  PayloadChecksum wanted() {
    return wanted;
  }

  /** Per payload checksum (wire name), how many channels this session has framed with it. */
  public Map<String, Long> framedChannels() {
    Map<String, Long> counts = new TreeMap<>();
    switched.forEach((checksum, n) -> counts.put(checksum.wireName, n.sum()));
    return counts;
  }

  void switchingTo(PayloadChecksum checksum, Runnable driverSwitch) {
    switched.computeIfAbsent(checksum, c -> new LongAdder()).increment();
    SWITCHING.set(checksum);
    try {
      driverSwitch.run();
    } finally {
      SWITCHING.remove();
    }
  }
}
