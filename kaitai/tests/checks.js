'use strict';
// Independent checksum and LZ4 block code for the Kaitai test runner (JavaScript).
// Written from the spec's catalogue (spec/framing_v6.adoc, "Checksums" and "LZ4 payloads"),
// not from the Rust reference: CRC24 (CRC-1), CRC32 seeded with FA 2D 55 CA (CRC-2),
// unseeded CRC32C (CRC-3), and a strict raw LZ4 block decoder (LZ4-1, LZ4-4, LZ4-6).

function crc24(data) {
  // width 24, poly 0x974F0B, init 0x875060, not reflected, xorout 0
  let crc = 0x875060;
  for (const b of data) {
    crc ^= b << 16;
    for (let k = 0; k < 8; k++) {
      crc <<= 1;
      if (crc & 0x1000000) crc ^= 0x1974f0b;
    }
  }
  return crc & 0xffffff;
}

function reflectedTable(polyReflected) {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ polyReflected : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

const CRC32_TABLE = reflectedTable(0xedb88320); // 0x04C11DB7 reflected
const CRC32C_TABLE = reflectedTable(0x82f63b78); // 0x1EDC6F41 reflected
const CRC32_SEED = Uint8Array.of(0xfa, 0x2d, 0x55, 0xca);

function crc32Reflected(table, ...parts) {
  let crc = 0xffffffff;
  for (const data of parts) {
    for (const b of data) crc = table[(crc ^ b) & 0xff] ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

const crc32Seeded = (payload) => crc32Reflected(CRC32_TABLE, CRC32_SEED, payload); // CRC-2
const crc32c = (payload) => crc32Reflected(CRC32C_TABLE, payload); // CRC-3

function payloadChecksum(algorithm, payload) {
  return { crc32: crc32Seeded, crc32c }[algorithm](payload);
}

const ascii = (s) => Uint8Array.from(s, (c) => c.charCodeAt(0));
// Catalogue check values (spec, "Checksums"): [name, function, input, expected]
const CATALOGUE = [
  ['crc24 check value', crc24, ascii('123456789'), 0x4b3f02],
  ['crc32 seeded check value', crc32Seeded, ascii('123456789'), 0xe2a261a7],
  ['crc32 seeded, empty payload', crc32Seeded, new Uint8Array(0), 0x44777ed3],
  ['crc32c check value', crc32c, ascii('123456789'), 0xe3069283],
  ['crc32 unseeded (ISO-HDLC) check value', (d) => crc32Reflected(CRC32_TABLE, d), ascii('123456789'), 0xcbf43926],
];

class Lz4Malformed extends Error {} // the sender broke LZ4-1; the receiver fails LZ4-4
class Lz4LengthMismatch extends Error {} // LZ4-4
class Lz4EndOfBlock extends Error {} // the last match too near the end: the sender broke LZ4-5; LZ4-6

// A 4-bit length of a sequence's token, extended when it is 15: adds the bytes from block[i] on,
// up to and including the first that is not 255. Returns [length, next i].
function extendedLength(block, i, length, what) {
  if (length === 15) {
    for (;;) {
      if (i >= block.length) throw new Lz4Malformed(`${what} length runs past the block`);
      const b = block[i++];
      length += b;
      if (b !== 255) break;
    }
  }
  return [length, i];
}

// Decodes one raw LZ4 block into exactly `declared` bytes, bounds-checked.
function lz4BlockDecompress(block, declared) {
  const out = new Uint8Array(declared);
  let o = 0;
  let i = 0;
  const n = block.length;
  if (n === 0) throw new Lz4Malformed('empty block');
  let lastMatch = null;
  for (;;) {
    // The block ended after a match: its last sequence must be literals only.
    if (i >= n) throw new Lz4Malformed('block ends where a token is expected');
    const token = block[i++];
    let lit;
    [lit, i] = extendedLength(block, i, token >> 4, 'literal');
    if (i + lit > n) throw new Lz4Malformed('literals run past the block');
    if (o + lit > declared) throw new Lz4LengthMismatch('output would exceed the declared length');
    out.set(block.subarray(i, i + lit), o);
    o += lit;
    i += lit;
    if (i === n) break; // the last sequence carries literals only
    if (i + 2 > n) throw new Lz4Malformed('match offset runs past the block');
    const offset = block[i] | (block[i + 1] << 8);
    i += 2;
    if (offset === 0 || offset > o) throw new Lz4Malformed('match offset outside the decompressed output');
    let mlen;
    [mlen, i] = extendedLength(block, i, token & 15, 'match');
    mlen += 4;
    if (o + mlen > declared) throw new Lz4LengthMismatch('output would exceed the declared length');
    lastMatch = [o, o + mlen];
    for (let k = 0; k < mlen; k++, o++) out[o] = out[o - offset]; // matches may overlap
  }
  if (o !== declared) throw new Lz4LengthMismatch(`block yields ${o} bytes, header declares ${declared}`);
  // LZ4's end-of-block rules: the last match starts 12 or more, and ends 5 or more, bytes before the end
  if (lastMatch && (lastMatch[0] + 12 > declared || lastMatch[1] + 5 > declared)) {
    throw new Lz4EndOfBlock(`last match over ${lastMatch[0]}..${lastMatch[1]} of ${declared} bytes`);
  }
  return out;
}

module.exports = {
  crc24, crc32Seeded, crc32c, payloadChecksum, CATALOGUE,
  Lz4Malformed, Lz4LengthMismatch, Lz4EndOfBlock, lz4BlockDecompress,
};
