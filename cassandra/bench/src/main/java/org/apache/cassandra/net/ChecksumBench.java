package org.apache.cassandra.net;

import java.nio.ByteBuffer;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The payload checksum alone, as the extended node computes it for a frame
 * ({@link FrameChecksum#compute}: Cassandra's seeded CRC32, or java.util.zip.CRC32C), over a
 * direct buffer of the blob sizes that cassandra/bench/e2e reads. Its ns per byte, times the
 * bytes a request makes the node checksum, is the checksum's share of the node's CPU per request.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = { "-Xms256m", "-Xmx256m" })
@State(Scope.Thread)
public class ChecksumBench
{
    @Param({ "16384", "131072" })
    public int bytes;

    @Param
    public FrameChecksum checksum;

    private ByteBuffer payload;

    @Setup
    public void setup()
    {
        byte[] random = new byte[bytes];
        ThreadLocalRandom.current().nextBytes(random);
        payload = ByteBuffer.allocateDirect(bytes);
        payload.put(random).flip();
    }

    @Benchmark
    public int compute()
    {
        return checksum.compute(payload, 0, bytes);
    }
}
