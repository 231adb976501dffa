package provider

import (
	"encoding/json"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// gemini-2.0 gets every object's property order spelled out, in the
// schema's own order (not sorted), in subschemas too; keywords that hold
// data, and an ordering the schema already has, are left alone.
func TestPropertyOrdering(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"flat, schema order",
			`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"}}}`,
			`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"}},"propertyOrdering":["zeta","alpha"]}`},
		{"nested in properties, items, anyOf and $defs",
			`{"type":"object","properties":{"b":{"type":"object","properties":{"y":{},"x":{}}},"a":{"type":"array","items":{"properties":{"q":{},"p":{}}}}},
			  "anyOf":[{"properties":{"n":{},"m":{}}}],"$defs":{"d":{"properties":{"2":{},"1":{}}}}}`,
			`{"type":"object","properties":{"b":{"type":"object","properties":{"y":{},"x":{}},"propertyOrdering":["y","x"]},"a":{"type":"array","items":{"properties":{"q":{},"p":{}},"propertyOrdering":["q","p"]}}},"propertyOrdering":["b","a"],
			  "anyOf":[{"properties":{"n":{},"m":{}},"propertyOrdering":["n","m"]}],"$defs":{"d":{"properties":{"2":{},"1":{}},"propertyOrdering":["2","1"]}}}`},
		{"data keywords untouched",
			`{"type":"object","properties":{"k":{"enum":[{"properties":{"b":1,"a":2}}],"default":{"properties":{"d":{},"c":{}}}}}}`,
			`{"type":"object","properties":{"k":{"enum":[{"properties":{"b":1,"a":2}}],"default":{"properties":{"d":{},"c":{}}}}},"propertyOrdering":["k"]}`},
		{"own ordering kept",
			`{"type":"object","properties":{"a":{},"b":{}},"propertyOrdering":["b","a"]}`,
			`{"type":"object","properties":{"a":{},"b":{}},"propertyOrdering":["b","a"]}`},
		{"a property named like a keyword",
			`{"type":"object","properties":{"items":{"type":"string"},"enum":{"type":"object","properties":{"s":{},"r":{}}}}}`,
			`{"type":"object","properties":{"items":{"type":"string"},"enum":{"type":"object","properties":{"s":{},"r":{}},"propertyOrdering":["s","r"]}},"propertyOrdering":["items","enum"]}`},
		{"no properties", `{"type":"string"}`, `{"type":"string"}`},
		{"boolean schema", `true`, `true`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := withPropertyOrdering(json.RawMessage(c.in))
			if !wire.Same(got, []byte(c.want)) {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if _, err := envelope.CompileSchema(got); err != nil {
				t.Errorf("the ordered schema no longer compiles: %v", err)
			}
		})
	}
}

// The capability table sends gemini-2.0 the ordered JSON Schema, current
// models the schema as given, and the retired gemini-1 models the legacy
// subset.
func TestGeminiFormatByModel(t *testing.T) {
	rf := envelope.ResponseFormat{Type: envelope.FormatJSONSchema, JSONSchema: &envelope.JSONSchemaFormat{Name: "w",
		Schema: json.RawMessage(`{"type":"object","properties":{"temp":{"type":"number"},"city":{"type":"string"}}}`)}}
	cases := []struct {
		model    string
		strategy string
		member   string
		ordering bool
	}{
		{"gemini-2.0-flash", formatOrderedSchema, "responseJsonSchema", true},
		{"gemini-2.0-flash-lite", formatOrderedSchema, "responseJsonSchema", true},
		{"gemini-2.5-flash", formatNative, "responseJsonSchema", false},
		{"gemini-3-pro-preview", formatNative, "responseJsonSchema", false},
		{"gemini-1.5-pro", formatLegacySchema, "responseSchema", false},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			l, err := LowerResponseFormat(rf, ExportOptions{Provider: Gemini, Model: c.model})
			if err != nil {
				t.Fatal(err)
			}
			var gc map[string]json.RawMessage
			if err := json.Unmarshal(l.Request["generationConfig"], &gc); err != nil {
				t.Fatal(err)
			}
			if l.Strategy != c.strategy || gc[c.member] == nil {
				t.Fatalf("strategy %s, generationConfig %s; want %s with %s", l.Strategy, l.Request["generationConfig"], c.strategy, c.member)
			}
			var s struct {
				Ordering []string `json:"propertyOrdering"`
			}
			_ = json.Unmarshal(gc[c.member], &s)
			if got := len(s.Ordering) > 0; got != c.ordering {
				t.Errorf("propertyOrdering %v, want present=%v", s.Ordering, c.ordering)
			} else if got && (s.Ordering[0] != "temp" || s.Ordering[1] != "city") {
				t.Errorf("propertyOrdering %v, want the schema's order [temp city]", s.Ordering)
			}
		})
	}
}
