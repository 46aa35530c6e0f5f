package main

// The kst-like cases of kaitai/tests/kst (kaitai_struct_tests' shape: id, data, asserts or
// exception), evaluated on the generated Go types by reflection: a path `a.b[1].c_d` reads the
// field or calls the instance method A, B (element 1), CD; `size` is a slice's length; an
// expected `x::y::z` is the value of that enum member in the grammar (enums.go).

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"cqlframe-kaitai-go/cqlframe"
)

type kstCase struct {
	ID        string `yaml:"id"`
	Format    string `yaml:"format"`
	Data      string `yaml:"data"`
	DataHex   string `yaml:"data-hex"`
	Exception string `yaml:"exception"`
	Asserts   []struct {
		Actual   string `yaml:"actual"`
		Expected any    `yaml:"expected"`
	} `yaml:"asserts"`
}

// top adapts parse to the kst: any top-level type, read whole.
func top[T any, P topLevel[T]](data []byte) (any, error) { return parse[T, P]("kst", data) }

// kstTypes reads each top-level type of the grammar.
var kstTypes = map[string]func([]byte) (any, error){
	"cql_envelope":            top[cqlframe.CqlEnvelope],
	"cql_envelopes":           top[cqlframe.CqlEnvelopes],
	"cql_frame_uncompressed":  top[cqlframe.CqlFrameUncompressed],
	"cql_frame_lz4":           top[cqlframe.CqlFrameLz4],
	"cql_frames_uncompressed": top[cqlframe.CqlFramesUncompressed],
	"cql_frames_lz4":          top[cqlframe.CqlFramesLz4],
}

func camel(snake string) string {
	var out strings.Builder
	for _, word := range strings.Split(snake, "_") {
		if word != "" {
			out.WriteString(strings.ToUpper(word[:1]) + word[1:])
		}
	}
	return out.String()
}

// evaluate follows a kst path from a parsed value.
func evaluate(root any, path string) (reflect.Value, error) {
	v := reflect.ValueOf(root)
	for _, part := range strings.Split(path, ".") {
		index := -1
		if open := strings.IndexByte(part, '['); open >= 0 && strings.HasSuffix(part, "]") {
			i, err := strconv.ParseInt(part[open+1:len(part)-1], 0, 64)
			if err != nil {
				return v, err
			}
			part, index = part[:open], int(i)
		}
		switch method := v.MethodByName(camel(part)); {
		case part == "size" && v.Kind() == reflect.Slice:
			v = reflect.ValueOf(v.Len())
		case method.IsValid(): // an instance: (value, error)
			out := method.Call(nil)
			if err, _ := out[1].Interface().(error); err != nil {
				return v, err
			}
			v = out[0]
		default: // a seq field
			field := reflect.Indirect(v).FieldByName(camel(part))
			if !field.IsValid() {
				return v, fmt.Errorf("no %s in %s", part, v.Type())
			}
			v = field
		}
		if index >= 0 {
			if index >= v.Len() {
				return v, fmt.Errorf("%s[%d] out of range (%d)", part, index, v.Len())
			}
			v = v.Index(index)
		}
	}
	return v, nil
}

// matches reports whether an evaluated value equals a case's expected value.
func matches(actual reflect.Value, expected any, enums enumTable) bool {
	switch want := expected.(type) {
	case bool:
		return actual.Kind() == reflect.Bool && actual.Bool() == want
	case int:
		return integer(actual, int64(want))
	case []any:
		got, ok := actual.Interface().([]byte)
		if !ok || len(got) != len(want) {
			return false
		}
		for i, b := range want {
			if n, ok := b.(int); !ok || int(got[i]) != n {
				return false
			}
		}
		return true
	case string:
		cut := strings.LastIndex(want, "::")
		value, ok := enums[want[:max(cut, 0)]][want[cut+2:]]
		return cut > 0 && ok && integer(actual, int64(value))
	}
	return false
}

func integer(v reflect.Value, want int64) bool {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == want
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return want >= 0 && v.Uint() == uint64(want)
	}
	return false
}

// runKst runs one case; it returns the problems found (none: passed).
func runKst(file, vectors string, enums enumTable) (string, []string, error) {
	var c kstCase
	if err := readYAML(file, &c); err != nil {
		return "", nil, err
	}
	name := "kst " + c.ID
	data, err := hex.DecodeString(c.DataHex)
	if c.Data != "" {
		data, err = os.ReadFile(filepath.Join(vectors, c.Data))
	}
	if err != nil {
		return name, nil, err
	}
	read, ok := kstTypes[c.Format]
	if !ok {
		return name, []string{"unknown format " + c.Format}, nil
	}
	parsed, err := read(data)
	if err != nil {
		if g, ok := err.(*grammarError); ok && g.name == c.Exception {
			return name, nil, nil
		}
		return name, []string{err.Error()}, nil
	}
	if c.Exception != "" {
		return name, []string{"parsed, expected " + c.Exception}, nil
	}
	var problems []string
	for _, a := range c.Asserts {
		actual, err := evaluate(parsed, a.Actual)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", a.Actual, err))
		case !matches(actual, a.Expected, enums):
			problems = append(problems, fmt.Sprintf("%s = %v, expected %v", a.Actual, actual, a.Expected))
		}
	}
	return name, problems, nil
}
