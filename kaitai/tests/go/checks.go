package main

// The receiver's checks the grammar cannot express, independent of the Rust reference:
// CRC24 (CRC-1) written from the spec's catalogue, CRC32 and CRC32C from Go's hash/crc32
// (CRC-2 seeded with FA 2D 55 CA, CRC-3 unseeded), LZ4 blocks from pierrec/lz4 (LZ4-1, LZ4-4),
// which does not check LZ4's end-of-block rules, so lastMatch does (LZ4-6).

import (
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/pierrec/lz4/v4"
)

// crc24 is CRC-1: width 24, poly 0x974F0B, init 0x875060, not reflected, no final XOR.
func crc24(data []byte) uint32 {
	crc := uint32(0x875060)
	for _, b := range data {
		crc ^= uint32(b) << 16
		for i := 0; i < 8; i++ {
			crc <<= 1
			if crc&0x1000000 != 0 {
				crc ^= 0x1974F0B
			}
		}
	}
	return crc & 0xFFFFFF
}

var (
	crc32Seed     = []byte{0xFA, 0x2D, 0x55, 0xCA}
	castagnoli    = crc32.MakeTable(crc32.Castagnoli)
	checksumByAlg = map[string]func([]byte) uint32{"crc32": crc32Seeded, "crc32c": crc32c}
)

// crc32Seeded is CRC-2: CRC-32/ISO-HDLC over FA 2D 55 CA, then the payload.
func crc32Seeded(payload []byte) uint32 {
	return crc32.Update(crc32.ChecksumIEEE(crc32Seed), crc32.IEEETable, payload)
}

// crc32c is CRC-3: CRC-32/ISCSI over the payload, no seed.
func crc32c(payload []byte) uint32 { return crc32.Checksum(payload, castagnoli) }

// catalogueEntry is one check value of the spec's checksum catalogue.
type catalogueEntry struct {
	name  string
	fn    func([]byte) uint32
	input string
	want  uint32
}

var catalogue = []catalogueEntry{
	{"crc24 check value", crc24, "123456789", 0x4B3F02},
	{"crc32 seeded check value", crc32Seeded, "123456789", 0xE2A261A7},
	{"crc32 seeded, empty payload", crc32Seeded, "", 0x44777ED3},
	{"crc32c check value", crc32c, "123456789", 0xE3069283},
	{"crc32 unseeded (ISO-HDLC) check value", crc32.ChecksumIEEE, "123456789", 0xCBF43926},
}

// errLz4 is any LZ4 block failure; all of them fail LZ4-4 (LZ4-1 binds senders).
var errLz4 = errors.New("LZ4 block does not decode to the declared length")

// lz4Decompress decodes one raw LZ4 block into exactly `declared` bytes.
func lz4Decompress(block []byte, declared int) ([]byte, error) {
	out := make([]byte, declared)
	n, err := lz4.UncompressBlock(block, out)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errLz4, err)
	}
	if n != declared {
		return nil, fmt.Errorf("%w: %d bytes, declared %d", errLz4, n, declared)
	}
	return out, nil
}

// errEndOfBlock: the block decodes, but its last match starts less than 12 or ends less than
// 5 bytes before the end (LZ4-6; the sender broke LZ4-5).
var errEndOfBlock = errors.New("LZ4 block breaks the end-of-block rules")

// endOfBlock checks LZ4's end-of-block rules on a block that decoded to `declared` bytes: it
// walks the sequences' tokens and length bytes to find where the last match lies. A block that
// ends after a match gives errLz4 instead (broken, not merely too late: LZ4-4).
func endOfBlock(block []byte, declared int) error {
	at, produced, start, end := 0, 0, -1, -1
	length := func(nibble byte) int {
		n := int(nibble)
		for nibble == 15 && at < len(block) {
			b := block[at]
			at++
			n += int(b)
			if b != 255 {
				break
			}
		}
		return n
	}
	for at < len(block) {
		token := block[at]
		at++
		literals := length(token >> 4)
		at += literals
		produced += literals
		if at >= len(block) {
			break
		}
		at += 2 // the match offset
		start = produced
		produced += length(token&15) + 4
		end = produced
		if at >= len(block) {
			// LZ4 ends every block with literals (the sender broke LZ4-1): pierrec/lz4 accepts
			// such a block, so the walk rejects it, under LZ4-4 as every other broken block.
			return fmt.Errorf("%w: the block ends after a match", errLz4)
		}
	}
	if start >= 0 && (start+12 > declared || end+5 > declared) {
		return fmt.Errorf("%w: last match over %d..%d of %d bytes", errEndOfBlock, start, end, declared)
	}
	return nil
}
