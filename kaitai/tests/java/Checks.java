import java.util.List;
import java.util.function.ToLongFunction;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;

/**
 * The receiver's checks the grammar cannot express, independent of the Rust reference: CRC24
 * (CRC-1) written from the spec's catalogue, CRC32 and CRC32C from java.util.zip (CRC-2 seeded
 * with FA 2D 55 CA, CRC-3 unseeded), LZ4 blocks from lz4-java's bounds-checked decoder
 * after a walk over their sequences (LZ4's end-of-block rules).
 */
final class Checks {
    private Checks() {}

    private static final byte[] CRC32_SEED = {(byte) 0xFA, 0x2D, 0x55, (byte) 0xCA};
    private static final LZ4SafeDecompressor LZ4 = LZ4Factory.safeInstance().safeDecompressor();

    /** CRC-1: width 24, poly 0x974F0B, init 0x875060, not reflected, no final XOR. */
    static long crc24(byte[] data) {
        int crc = 0x875060;
        for (byte b : data) {
            crc ^= (b & 0xFF) << 16;
            for (int i = 0; i < 8; i++) {
                crc <<= 1;
                if ((crc & 0x1000000) != 0) crc ^= 0x1974F0B;
            }
        }
        return crc & 0xFFFFFF;
    }

    /** CRC-2: CRC-32/ISO-HDLC over FA 2D 55 CA, then the payload. */
    static long crc32Seeded(byte[] payload) {
        CRC32 crc = new CRC32();
        crc.update(CRC32_SEED);
        crc.update(payload);
        return crc.getValue();
    }

    /** CRC-3: CRC-32/ISCSI over the payload, no seed. */
    static long crc32c(byte[] payload) {
        CRC32C crc = new CRC32C();
        crc.update(payload);
        return crc.getValue();
    }

    static long crc32Unseeded(byte[] data) {
        CRC32 crc = new CRC32();
        crc.update(data);
        return crc.getValue();
    }

    static long payloadChecksum(String algorithm, byte[] payload) {
        return switch (algorithm) {
            case "crc32" -> crc32Seeded(payload);
            case "crc32c" -> crc32c(payload);
            default -> throw new IllegalArgumentException("unknown checksum " + algorithm);
        };
    }

    /** One check value of the spec's checksum catalogue. */
    record Entry(String name, ToLongFunction<byte[]> fn, String input, long want) {}

    static final List<Entry> CATALOGUE = List.of(
            new Entry("crc24 check value", Checks::crc24, "123456789", 0x4B3F02L),
            new Entry("crc32 seeded check value", Checks::crc32Seeded, "123456789", 0xE2A261A7L),
            new Entry("crc32 seeded, empty payload", Checks::crc32Seeded, "", 0x44777ED3L),
            new Entry("crc32c check value", Checks::crc32c, "123456789", 0xE3069283L),
            new Entry("crc32 unseeded (ISO-HDLC) check value", Checks::crc32Unseeded, "123456789", 0xCBF43926L));

    /** A broken block, or one of another length than declared: fails LZ4-4 (LZ4-1 binds senders). */
    static final class Lz4Failure extends Exception {
        Lz4Failure(String message) {
            super(message);
        }
    }

    /**
     * A block that decodes to the declared length but whose last match starts less than 12 or ends
     * less than 5 bytes before the end: fails LZ4-6 (LZ4-5 binds senders).
     */
    static final class Lz4EndOfBlock extends Exception {
        Lz4EndOfBlock(long start, long end, int declared) {
            super("last match over " + start + ".." + end + " of " + declared + " bytes");
        }
    }

    /**
     * Decodes one raw LZ4 block into exactly {@code declared} bytes. lz4-java's pure-Java decoder
     * refuses some blocks that break LZ4's end-of-block rules as it refuses broken ones and accepts
     * others, so the block's sequences are walked first to tell LZ4-6 from LZ4-4.
     */
    static byte[] lz4Decompress(byte[] block, int declared) throws Lz4Failure, Lz4EndOfBlock {
        long[] walk = lz4Sequences(block);
        if (walk[0] != declared) throw new Lz4Failure("block yields " + walk[0] + " bytes, declared " + declared);
        if (walk[1] >= 0 && (walk[1] + 12 > declared || walk[2] + 5 > declared)) {
            throw new Lz4EndOfBlock(walk[1], walk[2], declared);
        }
        byte[] out = new byte[declared];
        int n;
        try {
            n = LZ4.decompress(block, 0, block.length, out, 0, declared);
        } catch (LZ4Exception e) {
            throw new Lz4Failure(e.getMessage());
        }
        if (n != declared) throw new Lz4Failure(n + " bytes, declared " + declared);
        return out;
    }

    /**
     * Walks a block's sequences without decoding them: {bytes it yields, start of its last match,
     * end of it} (-1 without a match), or why it is no block.
     */
    private static long[] lz4Sequences(byte[] block) throws Lz4Failure {
        int[] at = {0};
        long produced = 0, start = -1, end = -1;
        while (true) {
            if (at[0] >= block.length) throw new Lz4Failure("the block ends without a last sequence");
            int token = block[at[0]++] & 0xFF;
            long literals = sequenceLength(block, at, token >>> 4);
            if (literals > block.length - at[0]) throw new Lz4Failure("literals run past the block");
            at[0] += (int) literals;
            produced += literals;
            if (at[0] == block.length) return new long[] {produced, start, end};
            if (at[0] + 2 > block.length) throw new Lz4Failure("a match offset runs past the block");
            int offset = (block[at[0]] & 0xFF) | (block[at[0] + 1] & 0xFF) << 8;
            at[0] += 2;
            if (offset == 0 || offset > produced) throw new Lz4Failure("match offset " + offset + " outside the output");
            start = produced;
            produced += sequenceLength(block, at, token & 15) + 4;
            end = produced;
        }
    }

    /** A literal or match length: the token's 4 bits, extended by bytes while they reach 15, then 255. */
    private static long sequenceLength(byte[] block, int[] at, int nibble) throws Lz4Failure {
        long n = nibble;
        if (nibble != 15) return n;
        while (true) {
            if (at[0] >= block.length) throw new Lz4Failure("a length runs past the block");
            int b = block[at[0]++] & 0xFF;
            n += b;
            if (b != 255) return n;
        }
    }
}
