package org.cqlframe.conformance.checksum;

import com.datastax.oss.protocol.internal.Frame;
import com.datastax.oss.protocol.internal.request.Startup;
import com.datastax.oss.protocol.internal.response.Authenticate;
import com.datastax.oss.protocol.internal.response.Ready;
import com.datastax.oss.protocol.internal.response.Supported;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import java.util.HashMap;
import java.util.Map;

/**
 * One channel's negotiation, between the driver's frame decoder and its in-flight handler (so it
 * sees the handshake's frames both ways): it remembers what the node lists in FRAME_CHECKSUMS,
 * adds FRAME_CHECKSUM to a framed STARTUP when this node listed the wanted checksum (NEG-4,
 * NEG-5), and lets the driver switch to framing with the negotiated codec. Done after the switch.
 */
final class FrameChecksumHandler extends ChannelDuplexHandler {
  static final String NAME = "frameChecksum";

  private final FrameChecksumContext context;
  private int startupStream = -1;
  private PayloadChecksum asked = PayloadChecksum.CRC32;

  FrameChecksumHandler(FrameChecksumContext context) {
    this.context = context;
  }

  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
    if (msg instanceof Frame
        && ((Frame) msg).message instanceof Startup
        && context.isFramed(((Frame) msg).protocolVersion)) {
      Frame frame = (Frame) msg;
      startupStream = frame.streamId;
      asked = context.checksumFor(ctx.channel().remoteAddress());
      if (asked != PayloadChecksum.CRC32) {
        Map<String, String> options = new HashMap<>(((Startup) frame.message).options);
        options.put("FRAME_CHECKSUM", asked.wireName);
        msg =
            new Frame(
                frame.protocolVersion,
                frame.beta,
                frame.streamId,
                frame.tracing,
                frame.tracingId,
                frame.size,
                frame.compressedSize,
                frame.customPayload,
                frame.warnings,
                new Startup(options));
      }
    }
    ctx.write(msg, promise);
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (msg instanceof Frame) {
      Frame frame = (Frame) msg;
      if (frame.message instanceof Supported) {
        context.rememberOffer(
            ctx.channel().remoteAddress(), ((Supported) frame.message).options.get("FRAME_CHECKSUMS"));
      } else if (frame.streamId == startupStream
          && (frame.message instanceof Ready || frame.message instanceof Authenticate)) {
        // The driver switches to framing while it handles this response (on this event loop).
        context.switchingTo(asked, () -> ctx.fireChannelRead(msg));
        ctx.pipeline().remove(this);
        return;
      }
    }
    ctx.fireChannelRead(msg);
  }
}
