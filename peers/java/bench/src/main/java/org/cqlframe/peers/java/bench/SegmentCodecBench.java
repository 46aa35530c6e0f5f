package org.cqlframe.peers.java.bench;

import com.datastax.oss.driver.api.core.context.DriverContext;
import com.datastax.oss.driver.internal.core.protocol.BuiltInCompressors;
import com.datastax.oss.driver.internal.core.protocol.ByteBufPrimitiveCodec;
import com.datastax.oss.protocol.internal.Compressor;
import com.datastax.oss.protocol.internal.CrcMismatchException;
import com.datastax.oss.protocol.internal.Segment;
import com.datastax.oss.protocol.internal.SegmentCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The Java driver's v5 framing on the kit's benchmark inputs (reference/cqlframe/benches/gen_data.py).
 *
 * <p>Driver code: {@code SegmentCodec} built as {@code DefaultDriverContext} builds it
 * ({@code ByteBufPrimitiveCodec(ByteBufAllocator.DEFAULT)}, {@code BuiltInCompressors} "none" or
 * "lz4"). {@code decode} walks a stream of identical frames in a direct buffer the way {@code
 * BytesToSegmentDecoder} (a Netty {@code LengthFieldBasedFrameDecoder}) does: {@code
 * decodeHeader} on a slice of the header (CRC24), a retained slice of payload and trailer, {@code
 * SegmentCodec.decode} (CRC32, LZ4). Envelope extraction is harness code doing what {@code
 * FrameCodec.decode} does before it hands the body to a CQL message decoder: read the 9-byte
 * header, take a retained slice of the body. {@code encode} is {@code SegmentCodec.encode} of one
 * self-contained segment (header, payload, trailer buffers, released after). The driver has no
 * CRC32C, so only the crc32 inputs are used. Results are per call: {@code decode} covers {@code
 * frames} frames (the runner divides).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class SegmentCodecBench {

  @Param({"uncompressed", "lz4"})
  public String format;

  @Param({"64", "2037", "16373", "131071"})
  public int size;

  @Param({"build/bench/data"})
  public String dataDir;

  private static final DriverContext CONTEXT =
      (DriverContext)
          Proxy.newProxyInstance(
              SegmentCodecBench.class.getClassLoader(),
              new Class<?>[] {DriverContext.class},
              (proxy, method, args) -> {
                if (method.getName().equals("getSessionName")) {
                  return "cqlframe-bench";
                }
                throw new UnsupportedOperationException("DriverContext." + method.getName());
              });

  private SegmentCodec<ByteBuf> codec;
  private int headerLength;
  private ByteBuf stream;
  private ByteBuf envelope;
  private int frames;
  private final List<Object> out = new ArrayList<>(3);

  @Setup(Level.Trial)
  public void setUp() throws IOException, CrcMismatchException {
    ByteBufPrimitiveCodec primitive = new ByteBufPrimitiveCodec(ByteBufAllocator.DEFAULT);
    Compressor<ByteBuf> compressor =
        BuiltInCompressors.newInstance(format.equals("lz4") ? "lz4" : "none", CONTEXT);
    codec = new SegmentCodec<>(primitive, compressor);
    headerLength = codec.headerLength() + SegmentCodec.CRC24_LENGTH;
    String name = format + "-crc32-" + size;
    byte[] streamBytes = Files.readAllBytes(Path.of(dataDir, "stream-" + name + ".bin"));
    byte[] frameBytes = Files.readAllBytes(Path.of(dataDir, "frame-" + name + ".bin"));
    byte[] envelopeBytes = Files.readAllBytes(Path.of(dataDir, "envelope-" + size + ".bin"));
    frames = streamBytes.length / frameBytes.length;
    stream = ByteBufAllocator.DEFAULT.directBuffer(streamBytes.length).writeBytes(streamBytes);
    envelope = ByteBufAllocator.DEFAULT.directBuffer(envelopeBytes.length).writeBytes(envelopeBytes);
    long bodies = decode();
    if (bodies != (long) (size - 9) * frames) {
      throw new IllegalStateException(name + ": decoded " + bodies + " body bytes");
    }
    encode();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    stream.release();
    envelope.release();
  }

  /** Frames in one {@link #decode} call. */
  public int frames() {
    return frames;
  }

  @Benchmark
  public long decode() throws CrcMismatchException {
    ByteBuf in = stream.duplicate();
    long bodies = 0;
    while (in.isReadable()) {
      SegmentCodec.Header header = codec.decodeHeader(in.slice(in.readerIndex(), headerLength));
      in.skipBytes(headerLength);
      ByteBuf payloadAndCrc = in.readRetainedSlice(header.payloadLength + SegmentCodec.CRC32_LENGTH);
      Segment<ByteBuf> segment = codec.decode(header, payloadAndCrc);
      ByteBuf payload = segment.payload;
      if (!segment.isSelfContained) {
        throw new IllegalStateException("unexpected non-self-contained frame");
      }
      do {
        int at = payload.readerIndex();
        int length = payload.getInt(at + 5);
        ByteBuf body = payload.retainedSlice(at + 9, length);
        payload.skipBytes(9 + length);
        bodies += body.readableBytes();
        body.release();
      } while (payload.isReadable());
      payload.release();
    }
    return bodies;
  }

  @Benchmark
  public int encode() {
    out.clear();
    codec.encode(new Segment<>(envelope.retainedDuplicate(), true), out);
    int n = 0;
    for (Object o : out) {
      ByteBuf b = (ByteBuf) o;
      n += b.readableBytes();
      b.release();
    }
    return n;
  }
}
