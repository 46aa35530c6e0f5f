// Command kaitai-go runs the Kaitai Struct parsers generated for Go against the golden
// vectors: the checks of run_python.py (see its docstring), with the Go runtime
// (github.com/kaitai-io/kaitai_struct_go_runtime) and Go's own checksum code. kaitai/test.sh
// builds it with the generated package as cqlframe-kaitai-go/cqlframe.
//
//	kaitai-go -root REPO [-verbose]
//
// The last line is `kaitai-go: N passed, M failed`.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// negative is one line of vector_negatives.yaml: who catches an invalid case.
type negative struct {
	Rule      string `yaml:"rule"`
	Exception string `yaml:"exception"`
	Stage     string `yaml:"stage"`
	Runner    string `yaml:"runner"`
}

// want is the outcome the table gives, as decoded.outcome spells it.
func (n negative) want() string {
	if n.Runner != "" {
		return "runner " + n.Rule
	}
	return "grammar " + n.Stage + " " + n.Exception
}

func readYAML(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, into)
}

func main() {
	root := flag.String("root", ".", "the repository")
	verbose := flag.Bool("verbose", false, "print every result, not only failures")
	flag.Parse()
	if err := run(*root, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "kaitai-go:", err)
		os.Exit(2)
	}
}

func run(root string, verbose bool) error {
	vectors := filepath.Join(root, "vectors")
	var m manifest
	data, err := os.ReadFile(filepath.Join(vectors, "manifest.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	var negatives map[string]map[string]negative
	if err := readYAML(filepath.Join(root, "kaitai/tests/vector_negatives.yaml"), &negatives); err != nil {
		return err
	}
	enums, err := loadEnums(root)
	if err != nil {
		return err
	}
	names := enums.names("cql_envelope::opcode")

	passed, failed := 0, 0
	report := func(ok bool, name string, problems []string) {
		if ok {
			passed++
		} else {
			failed++
		}
		if !ok || verbose {
			status := "ok  "
			if !ok {
				status = "FAIL"
			}
			detail := strings.Join(problems, "; ")
			if detail != "" {
				detail = ": " + detail
			}
			fmt.Printf("%s %s%s\n", status, name, detail)
		}
	}

	// 1. the runner's own checksum code against the spec's catalogue
	for _, c := range catalogue {
		got := c.fn([]byte(c.input))
		var problems []string
		if got != c.want {
			problems = append(problems, fmt.Sprintf("%#x != %#x", got, c.want))
		}
		report(got == c.want, "catalogue: "+c.name, problems)
	}

	// 2. the golden vectors
	used := map[string]bool{}
	for _, c := range m.Cases {
		if c.Kind != "frames" {
			continue
		}
		input, err := os.ReadFile(filepath.Join(vectors, c.Input.File))
		if err != nil {
			return err
		}
		r := &receiver{opcodeNames: names, algorithm: c.Checksum, maxBody: c.MaxEnvelopeBody}
		got, err := r.decode(c.Format, input)
		if err != nil { // a crash is a failed test
			report(false, c.ID, []string{err.Error()})
			continue
		}
		if c.Valid {
			var problems []string
			if got.outcome != "" {
				problems = append(problems, "unexpected error "+got.outcome)
			}
			problems = append(problems, compareFrames(got.frames, c.Expected.Frames, true)...)
			problems = append(problems, compareEnvelopes(got.envelopes, c.Expected.Envelopes)...)
			report(len(problems) == 0, c.ID, problems)
			continue
		}
		short := strings.SplitN(c.ID, ".", 3)[2]
		entry, ok := negatives[c.Format][short]
		if !ok {
			report(false, c.ID, []string{"no entry in vector_negatives.yaml"})
			continue
		}
		used[c.Format+"."+short] = true
		var problems []string
		if c.Expected.Error == nil || entry.Rule != c.Expected.Error.Rule {
			problems = append(problems, fmt.Sprintf("table says %s, manifest %+v", entry.Rule, c.Expected.Error))
		}
		if entry.Runner != "" {
			problems = append(problems, compareFrames(got.frames, c.Expected.Frames, false)...)
		}
		if got.outcome != entry.want() {
			problems = append(problems, fmt.Sprintf("outcome %q, expected %q", got.outcome, entry.want()))
		}
		report(len(problems) == 0, c.ID, problems)
	}
	for format, entries := range negatives {
		for short := range entries {
			if !used[format+"."+short] {
				report(false, "vector_negatives.yaml "+format+"."+short, []string{"no such invalid case"})
			}
		}
	}

	// 3. kst-like cases
	files, err := filepath.Glob(filepath.Join(root, "kaitai/tests/kst/*.kst"))
	if err != nil {
		return err
	}
	for _, file := range files {
		name, problems, err := runKst(file, vectors, enums)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		report(len(problems) == 0, name, problems)
	}

	fmt.Printf("kaitai-go: %d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
	return nil
}
