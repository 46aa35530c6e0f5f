package org.apache.cassandra.net;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import org.apache.cassandra.config.Config;
import org.apache.cassandra.config.DataStorageSpec;
import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.io.compress.BufferType;
import org.apache.cassandra.utils.memory.BufferPool;
import org.apache.cassandra.utils.memory.BufferPools;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Encode and decode of one self-contained client frame by the node's own codecs, CRC32 against
 * CRC32C, in the shape of CASSANDRA-16360's FramingBench: the payload is copied into a pooled
 * buffer (as the node's message encoder and Netty's reads do), then encoded or decoded.
 * In org.apache.cassandra.net because encode and decode are package-private there.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 4, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = { "-Xms1g", "-Xmx1g" })
@State(Scope.Thread)
public class FramingBench
{
    /** The codecs compared: Cassandra's (CRC32 only) and the extension's with each checksum. */
    public enum Codec
    {
        CRC32_CASSANDRA, CRC32_KIT, CRC32C_KIT, LZ4_CRC32_CASSANDRA, LZ4_CRC32_KIT, LZ4_CRC32C_KIT;

        FrameEncoder encoder()
        {
            switch (this)
            {
                case CRC32_CASSANDRA: return FrameEncoderCrc.instance;
                case CRC32_KIT: return ChecksumFrameEncoderCrc.of(FrameChecksum.CRC32);
                case CRC32C_KIT: return ChecksumFrameEncoderCrc.of(FrameChecksum.CRC32C);
                case LZ4_CRC32_CASSANDRA: return FrameEncoderLZ4.fastInstance;
                case LZ4_CRC32_KIT: return ChecksumFrameEncoderLZ4.of(FrameChecksum.CRC32);
                default: return ChecksumFrameEncoderLZ4.of(FrameChecksum.CRC32C);
            }
        }

        FrameDecoder decoder(BufferPoolAllocator allocator)
        {
            switch (this)
            {
                case CRC32_CASSANDRA: return FrameDecoderCrc.create(allocator);
                case CRC32_KIT: return new ChecksumFrameDecoderCrc(allocator, FrameChecksum.CRC32);
                case CRC32C_KIT: return new ChecksumFrameDecoderCrc(allocator, FrameChecksum.CRC32C);
                case LZ4_CRC32_CASSANDRA: return FrameDecoderLZ4.fast(allocator);
                case LZ4_CRC32_KIT: return new ChecksumFrameDecoderLZ4(allocator, FrameChecksum.CRC32);
                default: return new ChecksumFrameDecoderLZ4(allocator, FrameChecksum.CRC32C);
            }
        }
    }

    /** 2037: the seed's small frame; 16373 and 131071 (the largest payload, SEND-1). */
    @Param({ "2037", "16373", "131071" })
    public int payloadSize;

    @Param
    public Codec codec;

    static
    {
        // The networking buffer pool sizes itself from the configuration: give it the node's default.
        DatabaseDescriptor.clientInitialization(true, () -> {
            Config config = new Config();
            config.networking_cache_size = new DataStorageSpec.IntMebibytesBound("128MiB");
            config.file_cache_size = new DataStorageSpec.IntMebibytesBound("0MiB");
            return config;
        });
    }

    private final BufferPool pool = BufferPools.forNetworking();
    private final ArrayDeque<FrameDecoder.Frame> frames = new ArrayDeque<>();
    private FrameEncoder encoder;
    private FrameDecoder decoder;
    private ByteBuffer payload;
    private ByteBuffer frame;

    @Setup(Level.Trial)
    public void setup()
    {
        encoder = codec.encoder();
        decoder = codec.decoder(GlobalBufferPoolAllocator.instance);
        payload = ByteBuffer.allocateDirect(payloadSize);
        payload.put(rowLike(payloadSize)).flip();
        ByteBuf encoded = encodeOnce();
        frame = ByteBuffer.allocateDirect(encoded.readableBytes());
        encoded.readBytes(frame);
        encoded.release();
        frame.flip();
    }

    /** Text like the rows of a result set: LZ4 compresses it, as it does real responses. */
    static byte[] rowLike(int size)
    {
        StringBuilder rows = new StringBuilder(size + 64);
        for (int i = 0; rows.length() < size; i++)
            rows.append("row ").append(i).append(": user_").append(i * 7919 % 10007).append(", ").append(i * 31L * 17).append(";");
        byte[] bytes = rows.toString().getBytes(StandardCharsets.US_ASCII);
        return java.util.Arrays.copyOf(bytes, size);
    }

    private ByteBuf encodeOnce()
    {
        FrameEncoder.Payload out = encoder.allocator().allocate(true, payloadSize);
        out.buffer.put(payload.duplicate());
        out.finish();
        return encoder.encode(true, out.buffer);
    }

    @Benchmark
    public int encode()
    {
        ByteBuf encoded = encodeOnce();
        int length = encoded.readableBytes();
        encoded.release();
        return length;
    }

    @Benchmark
    public int decode()
    {
        ByteBuffer in = pool.getAtLeast(frame.remaining(), BufferType.OFF_HEAP);
        in.put(frame.duplicate()).flip();
        decoder.decode(frames, ShareableBytes.wrap(in));
        FrameDecoder.Frame decoded = frames.poll();
        if (!(decoded instanceof FrameDecoder.IntactFrame))
            throw new IllegalStateException("the frame did not decode: " + decoded);
        int size = decoded.frameSize;
        decoded.release();
        return size;
    }
}
