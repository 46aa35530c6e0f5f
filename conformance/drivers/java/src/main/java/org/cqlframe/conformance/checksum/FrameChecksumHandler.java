package org.cqlframe.conformance.checksum;

import com.datastax.oss.protocol.internal.Frame;
import com.datastax.oss.protocol.internal.Message;
import com.datastax.oss.protocol.internal.request.Options;
import com.datastax.oss.protocol.internal.request.Startup;
import com.datastax.oss.protocol.internal.response.Authenticate;
import com.datastax.oss.protocol.internal.response.Ready;
import com.datastax.oss.protocol.internal.response.Supported;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import java.nio.channels.ClosedChannelException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One channel's negotiation, between the driver's frame decoder and its in-flight handler (so it
 * sees the handshake's frames both ways). It adds FRAME_CHECKSUM to a framed STARTUP when the
 * SUPPORTED received on this channel listed the wanted checksum (NEG-4, NEG-5); on a channel where
 * the driver sends no OPTIONS (every channel of a session but the first), it sends one itself
 * before the STARTUP, on the STARTUP's stream, and keeps its answer from the driver. Then it lets
 * the driver switch to framing with the negotiated codec, and leaves the pipeline.
 */
final class FrameChecksumHandler extends ChannelDuplexHandler {
  static final String NAME = "frameChecksum";

  private final FrameChecksumContext context;
  /** Whether this channel's SUPPORTED listed the wanted checksum; null before one arrived. */
  private Boolean offered;
  /** A STARTUP held back until the answer to our own OPTIONS, with the driver's promise. */
  private Frame heldStartup;
  private ChannelPromise heldPromise;
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
      if (offered == null) {
        heldStartup = frame;
        heldPromise = promise;
        ctx.writeAndFlush(withMessage(frame, Options.INSTANCE));
        return;
      }
      msg = startup(frame);
    }
    ctx.write(msg, promise);
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (msg instanceof Frame) {
      Frame frame = (Frame) msg;
      if (heldStartup != null && frame.streamId == heldStartup.streamId) {
        Frame startup = heldStartup;
        heldStartup = null;
        if (frame.message instanceof Supported) {
          offered = lists((Supported) frame.message);
          ctx.writeAndFlush(startup(startup), heldPromise);
          return;
        }
        // Anything else (a version refusal) is the driver's answer to its STARTUP.
        heldPromise.trySuccess();
      } else if (frame.message instanceof Supported) {
        offered = lists((Supported) frame.message);
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

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    if (heldStartup != null) {
      heldStartup = null;
      heldPromise.tryFailure(new ClosedChannelException());
    }
    ctx.fireChannelInactive();
  }

  private boolean lists(Supported supported) {
    List<String> names = supported.options.get("FRAME_CHECKSUMS");
    return names != null && names.stream().anyMatch(context.wanted().wireName::equalsIgnoreCase);
  }

  /** The STARTUP to send: with FRAME_CHECKSUM when this channel's node offered it. */
  private Frame startup(Frame frame) {
    startupStream = frame.streamId;
    asked = offered ? context.wanted() : PayloadChecksum.CRC32;
    if (asked == PayloadChecksum.CRC32) {
      return frame;
    }
    Map<String, String> options = new HashMap<>(((Startup) frame.message).options);
    options.put("FRAME_CHECKSUM", asked.wireName);
    return withMessage(frame, new Startup(options));
  }

  private static Frame withMessage(Frame frame, Message message) {
    return new Frame(
        frame.protocolVersion,
        frame.beta,
        frame.streamId,
        frame.tracing,
        frame.tracingId,
        frame.size,
        frame.compressedSize,
        frame.customPayload,
        frame.warnings,
        message);
  }
}
