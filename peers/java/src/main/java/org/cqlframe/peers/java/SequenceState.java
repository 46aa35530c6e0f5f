package org.cqlframe.peers.java;

import com.datastax.oss.driver.internal.core.protocol.SegmentToFrameDecoder;
import java.lang.reflect.Field;
import java.util.List;

/**
 * The reassembly state of a SegmentToFrameDecoder, read from its private fields.
 *
 * <p>The driver keeps a partly received envelope sequence there and simply waits for more
 * segments; reflection is the only way to tell, at end of input, that something is pending.
 * Read-only: the decoder's behaviour is not changed.
 */
record SequenceState(int targetLength, int accumulatedLength, int slices) {

  /** SegmentToFrameDecoder.UNKNOWN_LENGTH: no sequence in progress. */
  static final int UNKNOWN_LENGTH = Integer.MIN_VALUE;

  static SequenceState of(SegmentToFrameDecoder decoder) {
    try {
      return new SequenceState(
          field(decoder, "targetLength", Integer.class),
          field(decoder, "accumulatedLength", Integer.class),
          field(decoder, "accumulatedSlices", List.class).size());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("SegmentToFrameDecoder internals changed: " + e, e);
    }
  }

  boolean pending() {
    return targetLength != UNKNOWN_LENGTH || slices > 0 || accumulatedLength != 0;
  }

  /** Why the input ended in the middle of a sequence, in words. */
  String describe() {
    String where = slices + " non-self-contained frame(s)";
    if (accumulatedLength > targetLength) {
      return "envelope sequence overshoot: "
          + accumulatedLength
          + " bytes received in "
          + where
          + " for a "
          + targetLength
          + "-byte envelope; the driver never completes it and keeps buffering";
    }
    return "incomplete envelope sequence: "
        + accumulatedLength
        + " of "
        + targetLength
        + " bytes received in "
        + where
        + " (the driver would wait for more frames)";
  }

  private static <T> T field(Object target, String name, Class<T> type)
      throws ReflectiveOperationException {
    Field f = SegmentToFrameDecoder.class.getDeclaredField(name);
    f.setAccessible(true);
    return type.cast(f.get(target));
  }
}
