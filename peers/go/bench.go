// Command bench times gocql v2's protocol v5 segment (frame) codec on the kit's benchmark
// inputs (reference/cqlframe/benches/gen_data.py) and writes JSON results.
//
//	go run . -data build/bench/data -out build/bench/go.json [-runs N] [-benchtime 300ms]
//
// gocql keeps its segment functions unexported (they run inside Conn), so they are reached with
// //go:linkname: readUncompressedSegment / readCompressedSegment (header CRC24, payload CRC32,
// LZ4 decompression, each into a fresh payload slice, as Conn.recvSegment calls them) and
// newUncompressedSegment / newCompressedSegment (what the driver's framer uses to write).
// Compression is gocql's own lz4.LZ4Compressor. Envelope extraction is harness code: gocql
// parses envelope headers inside Conn.processFrame (readHeader, then dispatches the body to a
// stream), so the loop here reads each 9-byte header and slices the body, the same work.
// gocql has no CRC32C: those cases are not run.
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	_ "unsafe" // go:linkname

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/apache/cassandra-gocql-driver/v2/lz4"
)

//go:linkname readUncompressedSegment github.com/apache/cassandra-gocql-driver/v2.readUncompressedSegment
func readUncompressedSegment(r io.Reader) ([]byte, bool, error)

//go:linkname readCompressedSegment github.com/apache/cassandra-gocql-driver/v2.readCompressedSegment
func readCompressedSegment(r io.Reader, compressor gocql.Compressor) ([]byte, bool, error)

//go:linkname newUncompressedSegment github.com/apache/cassandra-gocql-driver/v2.newUncompressedSegment
func newUncompressedSegment(payload []byte, isSelfContained bool) ([]byte, error)

//go:linkname newCompressedSegment github.com/apache/cassandra-gocql-driver/v2.newCompressedSegment
func newCompressedSegment(uncompressedPayload []byte, isSelfContained bool, compressor gocql.Compressor) ([]byte, error)

type manifestCase struct {
	Name         string `json:"name"`
	Format       string `json:"format"`
	Checksum     string `json:"checksum"`
	Size         int    `json:"size"`
	EnvelopeFile string `json:"envelope_file"`
	FrameFile    string `json:"frame_file"`
	StreamFile   string `json:"stream_file"`
	Frames       int    `json:"frames"`
}

type result struct {
	Impl       string    `json:"impl"`
	Op         string    `json:"op"`
	Format     string    `json:"format"`
	Checksum   string    `json:"checksum"`
	Size       int       `json:"size"`
	NsPerFrame float64   `json:"ns_per_frame"`
	Runs       []float64 `json:"runs_ns_per_frame"`
}

// envelopes walks the envelopes of a self-contained payload: 9-byte header, body slice.
func envelopes(p []byte) (n int, err error) {
	for len(p) > 0 {
		if len(p) < 9 {
			return n, fmt.Errorf("partial envelope header")
		}
		length := int(int32(binary.BigEndian.Uint32(p[5:9])))
		if length < 0 || 9+length > len(p) {
			return n, fmt.Errorf("partial envelope body")
		}
		body := p[9 : 9+length]
		n += len(body)
		p = p[9+length:]
	}
	return n, nil
}

func decodeStream(stream []byte, compressor gocql.Compressor) (int, error) {
	r := bytes.NewReader(stream)
	total := 0
	for r.Len() > 0 {
		var payload []byte
		var sc bool
		var err error
		if compressor != nil {
			payload, sc, err = readCompressedSegment(r, compressor)
		} else {
			payload, sc, err = readUncompressedSegment(r)
		}
		if err != nil {
			return 0, err
		}
		if !sc {
			return 0, fmt.Errorf("unexpected non-self-contained frame")
		}
		n, err := envelopes(payload)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func main() {
	dataDir := flag.String("data", "build/bench/data", "benchmark inputs (gen_data.py)")
	out := flag.String("out", "", "JSON results file (default: stdout)")
	runs := flag.Int("runs", 5, "testing.Benchmark runs per case (the median is reported)")
	benchtime := flag.String("benchtime", "300ms", "time per testing.Benchmark run")
	flag.Parse()
	testing.Init()
	flag.Set("test.benchtime", *benchtime)

	raw, err := os.ReadFile(filepath.Join(*dataDir, "manifest.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var manifest struct {
		Cases []manifestCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var results []result
	for _, c := range manifest.Cases {
		if c.Checksum != "crc32" {
			continue // gocql has CRC32 only
		}
		read := func(name string) []byte {
			b, err := os.ReadFile(filepath.Join(*dataDir, name))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			return b
		}
		envelope, frame, stream := read(c.EnvelopeFile), read(c.FrameFile), read(c.StreamFile)
		var compressor gocql.Compressor
		if c.Format == "lz4" {
			compressor = lz4.LZ4Compressor{}
		}
		// Check before timing: the stream decodes to the right envelopes.
		n, err := decodeStream(stream, compressor)
		if err != nil || n != (c.Size-9)*c.Frames {
			fmt.Fprintf(os.Stderr, "%s: decode check failed: %v (%d bytes)\n", c.Name, err, n)
			os.Exit(1)
		}
		encodeOnce := func() ([]byte, error) {
			if compressor != nil {
				return newCompressedSegment(envelope, true, compressor)
			}
			return newUncompressedSegment(envelope, true)
		}
		enc, err := encodeOnce()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if got, _ := decodeStream(enc, compressor); got != c.Size-9 {
			fmt.Fprintf(os.Stderr, "%s: encode check failed\n", c.Name)
			os.Exit(1)
		}
		if compressor == nil && !bytes.Equal(enc, frame) {
			fmt.Fprintf(os.Stderr, "%s: encoded frame differs from the reference's\n", c.Name)
			os.Exit(1)
		}
		for _, op := range []string{"decode", "encode"} {
			var per []float64
			for i := 0; i < *runs; i++ {
				runtime.GC()
				var br testing.BenchmarkResult
				if op == "decode" {
					br = testing.Benchmark(func(b *testing.B) {
						for j := 0; j < b.N; j++ {
							if _, err := decodeStream(stream, compressor); err != nil {
								b.Fatal(err)
							}
						}
					})
					per = append(per, float64(br.T.Nanoseconds())/float64(br.N)/float64(c.Frames))
				} else {
					br = testing.Benchmark(func(b *testing.B) {
						for j := 0; j < b.N; j++ {
							if _, err := encodeOnce(); err != nil {
								b.Fatal(err)
							}
						}
					})
					per = append(per, float64(br.T.Nanoseconds())/float64(br.N))
				}
			}
			r := result{Impl: "go", Op: op, Format: c.Format, Checksum: c.Checksum, Size: c.Size,
				NsPerFrame: median(per), Runs: per}
			fmt.Fprintf(os.Stderr, "  go %s %s-%s/%d: %.1f ns/frame\n", op, c.Format, c.Checksum, c.Size, r.NsPerFrame)
			results = append(results, r)
		}
	}
	doc := map[string]any{
		"impl":    "go",
		"package": "github.com/apache/cassandra-gocql-driver/v2 v2.1.2",
		"go":      runtime.Version(),
		"results": results,
	}
	b, _ := json.MarshalIndent(doc, "", " ")
	if *out == "" {
		os.Stdout.Write(append(b, '\n'))
	} else if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
