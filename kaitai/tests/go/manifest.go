package main

// The golden vectors' manifest (vectors/manifest.json) and the comparison of a decode with a
// case's `expected`, field by field as run_python.py compares them.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

type blob struct {
	Hex    *string `json:"hex"`
	Sha256 string  `json:"sha256"`
	Length int     `json:"length"`
}

// same reports whether data is the blob (by hex, or by SHA-256 for long ones).
func (b blob) same(data []byte) bool {
	if b.Length != len(data) {
		return false
	}
	if b.Hex != nil {
		return *b.Hex == hex.EncodeToString(data)
	}
	sum := sha256.Sum256(data)
	return b.Sha256 == hex.EncodeToString(sum[:])
}

type expectedFrame struct {
	Offset             int     `json:"offset"`
	SelfContained      bool    `json:"self_contained"`
	PayloadLength      uint64  `json:"payload_length"`
	UncompressedLength *uint64 `json:"uncompressed_length"`
	ChecksumBit        bool    `json:"checksum_bit"`
	Reserved           uint64  `json:"reserved"`
	HeaderCrc24        string  `json:"header_crc24"`
	PayloadChecksum    string  `json:"payload_checksum"`
	Payload            blob    `json:"payload"`
	Content            blob    `json:"content"`
}

type expectedEnvelope struct {
	Version    uint8  `json:"version"`
	Flags      uint8  `json:"flags"`
	Stream     int16  `json:"stream"`
	Opcode     int    `json:"opcode"`
	OpcodeName string `json:"opcode_name"`
	Length     int32  `json:"length"`
	Body       blob   `json:"body"`
}

type manifestCase struct {
	ID              string `json:"id"`
	Kind            string `json:"kind"`
	Format          string `json:"format"`
	Checksum        string `json:"checksum"`
	Valid           bool   `json:"valid"`
	MaxEnvelopeBody int64  `json:"max_envelope_body"`
	Input           struct {
		File string `json:"file"`
	} `json:"input"`
	Expected struct {
		Frames    []expectedFrame    `json:"frames"`
		Envelopes []expectedEnvelope `json:"envelopes"`
		Error     *struct {
			Rule string `json:"rule"`
		} `json:"error"`
	} `json:"expected"`
}

type manifest struct {
	Cases []manifestCase `json:"cases"`
}

func optional(v *uint64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

// compareFrames lists the differences of the decoded frames from the expected ones; with
// whole false only the frames decoded before an error are compared, not their number.
func compareFrames(got []frameRecord, want []expectedFrame, whole bool) []string {
	var problems []string
	if whole && len(got) != len(want) {
		problems = append(problems, fmt.Sprintf("%d frames, expected %d", len(got), len(want)))
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		g, w := got[i], want[i]
		fields := []struct {
			name      string
			got, want any
		}{
			{"offset", g.Offset, w.Offset},
			{"self_contained", g.SelfContained, w.SelfContained},
			{"payload_length", g.PayloadLength, w.PayloadLength},
			{"uncompressed_length", optional(g.UncompressedLength), optional(w.UncompressedLength)},
			{"checksum_bit", g.ChecksumBit, w.ChecksumBit},
			{"reserved", g.Reserved, w.Reserved},
			{"header_crc24", g.HeaderCrc24, w.HeaderCrc24},
			{"payload_checksum", g.PayloadChecksum, w.PayloadChecksum},
		}
		for _, f := range fields {
			if f.got != f.want {
				problems = append(problems, fmt.Sprintf("frame %d %s: %v != %v", i, f.name, f.got, f.want))
			}
		}
		if !w.Payload.same(g.Payload) {
			problems = append(problems, fmt.Sprintf("frame %d payload differs", i))
		}
		if !w.Content.same(g.Content) {
			problems = append(problems, fmt.Sprintf("frame %d content differs", i))
		}
	}
	return problems
}

func compareEnvelopes(got []envelopeRecord, want []expectedEnvelope) []string {
	var problems []string
	if len(got) != len(want) {
		problems = append(problems, fmt.Sprintf("%d envelopes, expected %d", len(got), len(want)))
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		g, w := got[i], want[i]
		gotFields := fmt.Sprint(g.Version, g.Flags, g.Stream, g.Opcode, g.OpcodeName, g.Length)
		wantFields := fmt.Sprint(w.Version, w.Flags, w.Stream, w.Opcode, w.OpcodeName, w.Length)
		if gotFields != wantFields {
			problems = append(problems, fmt.Sprintf("envelope %d (version flags stream opcode name length): %s != %s", i, gotFields, wantFields))
		}
		if !w.Body.same(g.Body) {
			problems = append(problems, fmt.Sprintf("envelope %d body differs", i))
		}
	}
	return problems
}
