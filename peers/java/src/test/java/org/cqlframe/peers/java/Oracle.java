package org.cqlframe.peers.java;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.zip.CRC32;

/**
 * Test-side framing written from the spec, independent of the driver: expected bytes are built
 * here, never by asking the code under test.
 */
final class Oracle {

  private Oracle() {}

  static final HexFormat HEX = HexFormat.of();

  /** CRC24 over the low n bytes of data, LSB first: init 0x875060, poly 0x1974F0B. */
  static int crc24(long data, int n) {
    int crc = 0x875060;
    for (int i = 0; i < n; i++) {
      crc ^= (int) ((data >>> (8 * i)) & 0xFF) << 16;
      for (int bit = 0; bit < 8; bit++) {
        crc <<= 1;
        if ((crc & 0x1000000) != 0) {
          crc ^= 0x1974F0B;
        }
      }
    }
    return crc & 0xFFFFFF;
  }

  /** IEEE CRC-32 with FA 2D 55 CA fed first. */
  static int crc32(byte[] bytes) {
    CRC32 crc = new CRC32();
    crc.update(new byte[] {(byte) 0xFA, 0x2D, 0x55, (byte) 0xCA});
    crc.update(bytes);
    return (int) crc.getValue();
  }

  static byte[] le(long value, int n) {
    byte[] out = new byte[n];
    for (int i = 0; i < n; i++) {
      out[i] = (byte) (value >>> (8 * i));
    }
    return out;
  }

  static long readLe(byte[] b, int off, int n) {
    long v = 0;
    for (int i = 0; i < n; i++) {
      v |= (b[off + i] & 0xFFL) << (8 * i);
    }
    return v;
  }

  /** Uncompressed frame; padding goes into header bits 18-23. */
  static byte[] frame(byte[] payload, boolean selfContained, int padding) {
    long word = payload.length | (selfContained ? 1L << 17 : 0) | ((long) padding << 18);
    return concat(le(word, 3), le(crc24(word, 3), 3), payload, le(crc32(payload), 4));
  }

  static byte[] frame(byte[] payload, boolean selfContained) {
    return frame(payload, selfContained, 0);
  }

  /** LZ4-format frame around already-encoded bytes; uncompressedLength 0 = stored raw. */
  static byte[] lz4Frame(byte[] wire, int uncompressedLength, boolean selfContained, int padding) {
    long word =
        wire.length
            | ((long) uncompressedLength << 17)
            | (selfContained ? 1L << 34 : 0)
            | ((long) padding << 35);
    return concat(le(word, 5), le(crc24(word, 5), 3), wire, le(crc32(wire), 4));
  }

  /** CQL envelope: 9-byte big-endian header, then body; length is the body's unless overridden. */
  static byte[] envelope(int version, int flags, int stream, int opcode, int length, byte[] body) {
    ByteBuffer b = ByteBuffer.allocate(9 + body.length);
    b.put((byte) version).put((byte) flags).putShort((short) stream).put((byte) opcode);
    b.putInt(length).put(body);
    return b.array();
  }

  /** A v5 response the driver's client decoders accept: READY (empty body). */
  static byte[] ready(int stream) {
    return envelope(0x85, 0, stream, 0x02, 0, new byte[0]);
  }

  /** A v5 AUTH_SUCCESS response: its body is a [bytes] token, so it can carry any content. */
  static byte[] authSuccess(int stream, byte[] token) {
    byte[] body = concat(ByteBuffer.allocate(4).putInt(token.length).array(), token);
    return envelope(0x85, 0, stream, 0x10, body.length, body);
  }

  /** size bytes of text-like data, which LZ4 shrinks well. */
  static byte[] compressible(int size) {
    byte[] out = new byte[size];
    byte[] words = "select * from ks.table where key = ? limit 100; ".getBytes();
    for (int i = 0; i < size; i++) {
      out[i] = (byte) (words[i % words.length] + (i / 4096) % 3);
    }
    return out;
  }

  static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  static byte[] slice(byte[] b, int from, int to) {
    return java.util.Arrays.copyOfRange(b, from, to);
  }

  static String hex(byte[] b) {
    return HEX.formatHex(b);
  }
}
