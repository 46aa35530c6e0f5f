package org.cqlframe.peers.java;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import java.util.function.IntSupplier;

/**
 * Last handler of the test pipeline. It drops what reaches it and keeps the first exception,
 * with how many frames and envelopes had been decoded at that moment: the driver
 * (InFlightHandler) closes the connection on such an error, so nothing after it counts, even
 * though BytesToSegmentDecoder would go on decoding the bytes it already has.
 */
final class PipelineTail extends ChannelInboundHandlerAdapter {

  private final IntSupplier frameCount;
  private final IntSupplier envelopeCount;
  Throwable firstError;
  int framesAtError;
  int envelopesAtError;

  PipelineTail(IntSupplier frameCount, IntSupplier envelopeCount) {
    this.frameCount = frameCount;
    this.envelopeCount = envelopeCount;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    ReferenceCountUtil.release(msg);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    if (firstError == null) {
      firstError = cause;
      framesAtError = frameCount.getAsInt();
      envelopesAtError = envelopeCount.getAsInt();
    }
  }
}
