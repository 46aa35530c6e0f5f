package main

// The grammar's enums, read from the .ksy files themselves: Go enums are plain integer types
// whose member names the generated code does not keep at run time.

import (
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// enumTable maps "ksy_id::enum" to the members' values by name.
type enumTable map[string]map[string]int

// member is one enum entry of a .ksy: a bare name or a map with `id` (and `doc`).
type member struct{ ID string }

func (m *member) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.ScalarNode {
		m.ID = node.Value
		return nil
	}
	var full struct {
		ID string `yaml:"id"`
	}
	err := node.Decode(&full)
	m.ID = full.ID
	return err
}

// loadEnums reads the enums of every kaitai/*.ksy.
func loadEnums(root string) (enumTable, error) {
	files, err := filepath.Glob(filepath.Join(root, "kaitai", "*.ksy"))
	if err != nil {
		return nil, err
	}
	table := enumTable{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var ksy struct {
			Meta struct {
				ID string `yaml:"id"`
			} `yaml:"meta"`
			Enums map[string]map[int]member `yaml:"enums"`
		}
		if err := yaml.Unmarshal(data, &ksy); err != nil {
			return nil, err
		}
		for name, members := range ksy.Enums {
			values := map[string]int{}
			for value, m := range members {
				values[m.ID] = value
			}
			table[ksy.Meta.ID+"::"+name] = values
		}
	}
	return table, nil
}

// names gives the upper-case member name of each value of one enum, as the manifest spells them.
func (t enumTable) names(enum string) map[int]string {
	names := map[int]string{}
	for name, value := range t[enum] {
		names[value] = strings.ToUpper(name)
	}
	return names
}
