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
 * with FA 2D 55 CA, CRC-3 unseeded), LZ4 blocks from lz4-java's bounds-checked decoder.
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

    /** Any LZ4 block failure; all of them fail LZ4-4 (LZ4-1 binds senders). */
    static final class Lz4Failure extends Exception {
        Lz4Failure(String message) {
            super(message);
        }
    }

    /** Decodes one raw LZ4 block into exactly {@code declared} bytes. */
    static byte[] lz4Decompress(byte[] block, int declared) throws Lz4Failure {
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
}
