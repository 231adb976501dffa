package envelope

import (
	"strings"
	"testing"
)

// ParseToolSpecs checks every spec's shape as the decoder does, but
// leaves the schemas uncompiled: a schema that only compiling can fault
// parses, and its Compile (and UnmarshalJSON) still refuse it.
func TestParseToolSpecs(t *testing.T) {
	cases := []struct {
		name, in   string
		wantErr    string // "" when ParseToolSpecs accepts in
		compileErr string // for an accepted spec: what Compile says ("" when it compiles)
	}{
		{"plain", `[{"name":"a.b","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}]`, "", ""},
		{"no schema", `[{"name":"a"}]`, "", ""},
		{"output boolean", `[{"name":"a","output_schema":true}]`, "", ""},
		{"compile faults", `[{"name":"a","input_schema":{"type":"object","minProperties":"x"}}]`, "", "input_schema"},
		{"remote ref", `[{"name":"a","input_schema":{"type":"object","$ref":"https://example.com/s.json"}}]`, "", "input_schema"},
		{"bad name", `[{"name":"a b"}]`, "name", ""},
		{"input not object schema", `[{"name":"a","input_schema":{"type":"string"}}]`, "input_schema", ""},
		{"input not object", `[{"name":"a","input_schema":[1]}]`, "input_schema", ""},
		{"output a number", `[{"name":"a","output_schema":5}]`, "output_schema", ""},
		{"binding not a member", `[{"name":"a","binding":{"cli":{}}}]`, "", ""}, // a binding stays in the worker (worker/cli); none is read here
		{"bad timeout", `[{"name":"a","timeout":"soon"}]`, "tool specs", ""},
		{"not an array", `{"name":"a"}`, "tool specs", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specs, err := ParseToolSpecs([]byte(c.in))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("ParseToolSpecs(%s) = %v, want an error naming %q", c.in, err, c.wantErr)
				}
				return
			}
			if err != nil || len(specs) != 1 {
				t.Fatalf("ParseToolSpecs(%s) = %d specs, %v", c.in, len(specs), err)
			}
			_, _, err = specs[0].Compile()
			switch {
			case c.compileErr == "" && err != nil:
				t.Fatalf("Compile: %v", err)
			case c.compileErr != "" && (err == nil || !strings.Contains(err.Error(), c.compileErr)):
				t.Fatalf("Compile = %v, want an error naming %q", err, c.compileErr)
			}
		})
	}
}
