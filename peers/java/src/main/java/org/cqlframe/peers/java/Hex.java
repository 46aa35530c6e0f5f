package org.cqlframe.peers.java;

import java.util.HexFormat;

/** Lower-case hex without separators, the JSON contract's byte encoding. */
final class Hex {

  private static final HexFormat HEX = HexFormat.of();

  private Hex() {}

  static byte[] decode(String hex) {
    return HEX.parseHex(hex);
  }

  static String encode(byte[] bytes) {
    return HEX.formatHex(bytes);
  }
}
