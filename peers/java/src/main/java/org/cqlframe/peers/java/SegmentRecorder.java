package org.cqlframe.peers.java;

import com.datastax.oss.protocol.internal.Segment;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.ArrayList;
import java.util.List;

/**
 * Sits between BytesToSegmentDecoder and SegmentToFrameDecoder and copies each segment (a
 * "frame" in the spec's words) the driver decoded, without touching its reader index.
 */
final class SegmentRecorder extends ChannelInboundHandlerAdapter {

  /** One decoded frame: the flag and the payload after any decompression. */
  record Captured(boolean selfContained, byte[] payload) {}

  final List<Captured> segments = new ArrayList<>();
  private final boolean forward;

  /** forward=false ends the pipeline here (the "frames" layer) and releases the segments. */
  SegmentRecorder(boolean forward) {
    this.forward = forward;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    @SuppressWarnings("unchecked")
    Segment<ByteBuf> segment = (Segment<ByteBuf>) msg;
    byte[] payload = new byte[segment.payload.readableBytes()];
    segment.payload.getBytes(segment.payload.readerIndex(), payload);
    segments.add(new Captured(segment.isSelfContained, payload));
    if (forward) {
      ctx.fireChannelRead(msg);
    } else {
      segment.payload.release();
    }
  }
}
