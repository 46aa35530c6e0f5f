package main

// The receiver around the generated Go parsers: the generated stream type parses the whole
// input, then this file does what the grammar cannot (spec "Decoding procedure"), in the
// order of run_python.py.

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"cqlframe-kaitai-go/cqlframe"

	"github.com/kaitai-io/kaitai_struct_go_runtime/kaitai"
)

// frameView is what the receiver needs of one parsed frame, whichever the format.
type frameView struct {
	size               int
	payloadLength      uint64
	uncompressedLength *uint64 // nil for the uncompressed format
	selfContained      bool
	checksumBit        bool
	stored             bool // no LZ4 block to decode: uncompressed format or LZ4-2
	reserved           uint64
	headerCrc24        uint64
	crc24Input         []byte
	payload            []byte
	block              []byte
	envelopes          []*cqlframe.CqlEnvelope
	payloadChecksum    uint32
}

// frameRecord is one decoded frame, in the manifest's terms.
type frameRecord struct {
	Offset             int
	SelfContained      bool
	PayloadLength      uint64
	UncompressedLength *uint64
	ChecksumBit        bool
	Reserved           uint64
	HeaderCrc24        string
	PayloadChecksum    string
	Payload, Content   []byte
}

// envelopeRecord is one decoded envelope, in the manifest's terms.
type envelopeRecord struct {
	Version, Flags uint8
	Stream         int16
	Opcode         int
	OpcodeName     string
	Length         int32
	Body           []byte
}

// decoded is what a decode produced; outcome is how it ended: "" (accepted), "runner RULE" or "grammar STAGE EXCEPTION".
type decoded struct {
	frames    []frameRecord
	envelopes []envelopeRecord
	outcome   string
}

// grammarError is a Kaitai error of one parse stage ("frames", "content", "sequence").
type grammarError struct {
	stage, name string
	err         error
}

func (g *grammarError) Error() string { return fmt.Sprintf("%s: %s (%v)", g.stage, g.name, g.err) }

// kstName maps the Go runtime's errors to the kst names (nil: not a Kaitai error). The Go
// runtime reports the end of the stream as a wrapped io.EOF / io.ErrUnexpectedEOF, not as
// its EndOfStreamError type.
func kstName(err error) (string, bool) {
	switch {
	case errors.As(err, new(kaitai.EndOfStreamError)), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "EndOfStreamError", true
	case errors.As(err, new(kaitai.ValidationNotEqualError)):
		return "ValidationNotEqualError", true
	case errors.As(err, new(kaitai.ValidationLessThanError)):
		return "ValidationLessThanError", true
	case errors.As(err, new(kaitai.ValidationGreaterThanError)):
		return "ValidationGreaterThanError", true
	case errors.As(err, new(kaitai.ValidationExprError)):
		return "ValidationExprError", true
	}
	return "", false
}

// parseStage runs one generated parser over data; a Kaitai error becomes a grammarError.
func parseStage(stage string, data []byte, read func(*kaitai.Stream) error) error {
	err := read(kaitai.NewStream(bytes.NewReader(data)))
	if err == nil {
		return nil
	}
	if name, ok := kstName(err); ok {
		return &grammarError{stage, name, err}
	}
	return err
}

// topLevel is a generated type of a .ksy's own meta id: it is its own root.
type topLevel[T any] interface {
	*T
	Read(io *kaitai.Stream, parent kaitai.Struct, root *T) error
}

// parse reads data as the top-level type T at one parse stage.
func parse[T any, P topLevel[T]](stage string, data []byte) (P, error) {
	t := P(new(T))
	return t, parseStage(stage, data, func(io *kaitai.Stream) error { return t.Read(io, nil, t) })
}

// wireBytes are the instances every frame type has: the bytes its CRC24 covers and the
// payload as on the wire.
func wireBytes(h interface{ Crc24Input() ([]byte, error) }, p interface{ Bytes() ([]byte, error) }) (input, payload []byte, err error) {
	if input, err = h.Crc24Input(); err != nil {
		return nil, nil, err
	}
	payload, err = p.Bytes()
	return input, payload, err
}

// frameViews parses a whole input with the stream type S and views each of its frames.
func frameViews[S any, P topLevel[S], F any](data []byte, frames func(P) []F, view func(F) (frameView, error)) ([]frameView, error) {
	s, err := parse[S, P]("frames", data)
	if err != nil {
		return nil, err
	}
	var views []frameView
	for _, f := range frames(s) {
		v, err := view(f)
		if err != nil {
			return nil, err
		}
		views = append(views, v)
	}
	return views, nil
}

func uncompressedView(f *cqlframe.CqlFrameUncompressed) (frameView, error) {
	h := f.Header
	input, payload, err := wireBytes(h, f.Payload)
	return frameView{
		size: 6 + int(h.PayloadLength) + 4, payloadLength: h.PayloadLength,
		selfContained: h.SelfContained, checksumBit: h.ChecksumBit, stored: true,
		reserved: h.Reserved, headerCrc24: h.HeaderCrc24, crc24Input: input,
		payload: payload, envelopes: f.Payload.Envelopes, payloadChecksum: f.PayloadChecksum,
	}, err
}

func lz4View(f *cqlframe.CqlFrameLz4) (frameView, error) {
	h := f.Header
	input, payload, err := wireBytes(h, f.Payload)
	if err != nil {
		return frameView{}, err
	}
	stored, err := h.IsStored()
	uncompressed := h.UncompressedLength
	return frameView{
		size: 8 + int(h.CompressedLength) + 4, payloadLength: h.CompressedLength,
		uncompressedLength: &uncompressed, selfContained: h.SelfContained,
		checksumBit: h.ChecksumBit, stored: stored, reserved: h.Reserved,
		headerCrc24: h.HeaderCrc24, crc24Input: input, payload: payload, block: f.Payload.Block,
		envelopes: f.Payload.Envelopes, payloadChecksum: f.PayloadChecksum,
	}, err
}

// viewsByFormat parses a whole input of each frame format.
var viewsByFormat = map[string]func([]byte) ([]frameView, error){
	"uncompressed": func(data []byte) ([]frameView, error) {
		return frameViews[cqlframe.CqlFramesUncompressed](data,
			func(s *cqlframe.CqlFramesUncompressed) []*cqlframe.CqlFrameUncompressed { return s.Frames }, uncompressedView)
	},
	"lz4": func(data []byte) ([]frameView, error) {
		return frameViews[cqlframe.CqlFramesLz4](data,
			func(s *cqlframe.CqlFramesLz4) []*cqlframe.CqlFrameLz4 { return s.Frames }, lz4View)
	},
}

// receiver decodes one direction of a connection as the manifest's case describes it.
type receiver struct {
	opcodeNames map[int]string
	algorithm   string
	maxBody     int64
}

func (r *receiver) decode(format string, data []byte) (*decoded, error) {
	out := &decoded{}
	err := r.run(format, data, out)
	var g *grammarError
	if errors.As(err, &g) {
		out.outcome = "grammar " + g.stage + " " + g.name
		return out, nil
	}
	return out, err
}

// runnerRule ends a decode on a rule the runner's own checks found.
type runnerRule string

func (r runnerRule) Error() string { return string(r) }

func (r *receiver) run(format string, data []byte, out *decoded) error {
	views, ok := viewsByFormat[format]
	if !ok {
		return fmt.Errorf("unknown frame format %q", format)
	}
	frames, err := views(data)
	if err != nil {
		return err
	}
	err = r.receive(frames, len(data), out)
	var rule runnerRule
	if errors.As(err, &rule) {
		out.outcome = "runner " + string(rule)
		return nil
	}
	return err
}

func (r *receiver) receive(views []frameView, length int, out *decoded) error {
	offset := 0
	var sequence []byte
	inSequence := false
	for _, f := range views {
		if uint64(crc24(f.crc24Input)) != f.headerCrc24 {
			return runnerRule("RECV-1")
		}
		if f.checksumBit != (r.algorithm == "crc32c") {
			return runnerRule("RECV-3")
		}
		if checksumByAlg[r.algorithm](f.payload) != f.payloadChecksum {
			return runnerRule("RECV-2")
		}
		content := f.payload
		if !f.stored {
			var err error
			if content, err = lz4Decompress(f.block, int(*f.uncompressedLength)); err != nil {
				return runnerRule("LZ4-4")
			}
			if err := endOfBlock(f.block, int(*f.uncompressedLength)); errors.Is(err, errLz4) {
				return runnerRule("LZ4-4")
			} else if err != nil {
				return runnerRule("LZ4-6")
			}
		}
		out.frames = append(out.frames, frameRecord{
			Offset: offset, SelfContained: f.selfContained, PayloadLength: f.payloadLength,
			UncompressedLength: f.uncompressedLength, ChecksumBit: f.checksumBit, Reserved: f.reserved,
			HeaderCrc24: fmt.Sprintf("%06x", f.headerCrc24), PayloadChecksum: fmt.Sprintf("%08x", f.payloadChecksum),
			Payload: f.payload, Content: content,
		})
		offset += f.size
		if f.selfContained {
			if inSequence {
				return runnerRule("RECV-8")
			}
			envelopes := f.envelopes
			if !f.stored {
				s, err := parse[cqlframe.CqlEnvelopes]("content", content)
				if err != nil {
					return err
				}
				envelopes = s.Envelopes
			}
			for _, e := range envelopes {
				if int64(e.Header.BodyLength) > r.maxBody {
					return runnerRule("RECV-12")
				}
				out.envelopes = append(out.envelopes, r.record(e))
			}
			continue
		}
		if len(content) == 0 {
			return runnerRule("RECV-10") // the grammar catches it first
		}
		sequence, inSequence = append(sequence, content...), true
		if len(sequence) < 9 {
			continue
		}
		h := cqlframe.NewCqlEnvelope_Header()
		if err := parseStage("sequence", sequence[:9], func(io *kaitai.Stream) error { return h.Read(io, nil, nil) }); err != nil {
			return err
		}
		if int64(h.BodyLength) > r.maxBody {
			return runnerRule("RECV-12")
		}
		total := 9 + int(h.BodyLength)
		if len(sequence) > total {
			return runnerRule("RECV-7")
		}
		if len(sequence) == total {
			e, err := parse[cqlframe.CqlEnvelope]("sequence", sequence)
			if err != nil {
				return err
			}
			out.envelopes = append(out.envelopes, r.record(e))
			sequence, inSequence = nil, false
		}
	}
	if offset != length {
		return fmt.Errorf("frames cover %d of %d bytes", offset, length)
	}
	if inSequence {
		return runnerRule("RECV-9")
	}
	return nil
}

// record is an envelope in the manifest's terms. Go enums carry no names: opcodeNames comes
// from the grammar's own enum (kaitai/cql_envelope.ksy).
func (r *receiver) record(e *cqlframe.CqlEnvelope) envelopeRecord {
	h := e.Header
	code := int(h.Opcode)
	name, ok := r.opcodeNames[code]
	if !ok {
		name = fmt.Sprintf("0x%02x", code)
	}
	return envelopeRecord{h.Version, h.Flags, h.Stream, code, name, h.BodyLength, e.Body}
}
