module cqlframe-kaitai-go

go 1.23.0

require (
	github.com/kaitai-io/kaitai_struct_go_runtime v0.11.0
	github.com/pierrec/lz4/v4 v4.1.22
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/text v0.28.0 // indirect
