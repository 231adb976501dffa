package provider

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// obeysStrict is the test's own reading of OpenAI's strict-mode rules,
// written apart from checkStrict so the two check each other.
func obeysStrict(t *testing.T, where string, schema json.RawMessage) {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if root["type"] != "object" || root["anyOf"] != nil {
		t.Errorf("%s: root is not a plain object schema", where)
	}
	allowed := []string{"type", "description", "enum", "pattern", "format", "multipleOf", "maximum",
		"exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems",
		"properties", "required", "additionalProperties", "items", "anyOf", "$ref"}
	var walk func(v any, path string, top bool)
	walk = func(v any, path string, top bool) {
		m, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s%s: not a schema object", where, path)
			return
		}
		if _, ok := m["$ref"]; ok && len(m) != 1 {
			t.Errorf("%s%s: $ref with siblings", where, path)
		}
		for k, sub := range m {
			switch {
			case (k == "$defs" || k == "definitions") && top:
				for name, d := range sub.(map[string]any) {
					walk(d, path+"/"+k+"/"+name, false)
				}
			case !slices.Contains(allowed, k):
				t.Errorf("%s%s: keyword %q breaks strict mode", where, path, k)
			case k == "items":
				walk(sub, path+"/items", false)
			case k == "anyOf":
				for i, b := range sub.([]any) {
					walk(b, fmt.Sprintf("%s/anyOf/%d", path, i), false)
				}
			}
		}
		props, isObj := m["properties"].(map[string]any)
		types := fmt.Sprint(m["type"])
		if !isObj && types != "object" && types != "[object null]" {
			return
		}
		if m["additionalProperties"] != false {
			t.Errorf("%s%s: object not closed", where, path)
		}
		var keys, req []string
		for k, p := range props {
			keys = append(keys, k)
			walk(p, path+"/properties/"+k, false)
		}
		for _, r := range m["required"].([]any) {
			req = append(req, r.(string))
		}
		sort.Strings(keys)
		sort.Strings(req)
		if !slices.Equal(keys, req) {
			t.Errorf("%s%s: required %v is not every property %v", where, path, req, keys)
		}
	}
	walk(root, "", true)
}

// Every schema exported strict:true — tools for both OpenAI APIs and
// strict response formats — obeys the strict rules.
func TestEveryStrictExportObeysTheRules(t *testing.T) {
	strict := 0
	for _, p := range []Provider{OpenAI, OpenAIResponses} {
		ts := exportFixture(t, ExportOptions{Provider: p})
		for _, raw := range ts.Tools {
			var tool struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
				Strict     bool            `json:"strict"`
				Function   *struct {
					Name       string          `json:"name"`
					Parameters json.RawMessage `json:"parameters"`
					Strict     bool            `json:"strict"`
				} `json:"function"`
			}
			if err := json.Unmarshal(raw, &tool); err != nil {
				t.Fatal(err)
			}
			if f := tool.Function; f != nil {
				tool.Name, tool.Parameters, tool.Strict = f.Name, f.Parameters, f.Strict
			}
			if tool.Strict {
				strict++
				obeysStrict(t, string(p)+" "+tool.Name, tool.Parameters)
				if v := checkStrict(tool.Parameters); len(v) > 0 {
					t.Errorf("%s %s: checkStrict: %v", p, tool.Name, v)
				}
			}
		}
	}
	for _, fc := range formatCases() {
		if fc.rf.JSONSchema == nil {
			continue
		}
		if r := makeStrict(fc.rf.JSONSchema.Schema); r.Strict {
			strict++
			obeysStrict(t, "format "+fc.name, r.Schema)
		}
	}
	if strict < 6 {
		t.Fatalf("only %d strict schemas checked; the fixtures should give at least 6", strict)
	}
}

// Each way of breaking the rules is caught by checkStrict, and makeStrict
// either repairs the schema or says strict:false with a reason.
func TestStrictRefusesWhatItCannotRepair(t *testing.T) {
	cases := []struct {
		name, schema string
		repairable   bool
	}{
		{"open object", `{"type":"object","properties":{"a":{"type":"string"}}}`, true},
		{"zero arguments", `{"type":"object"}`, true},
		{"zero arguments, empty properties", `{"type":"object","properties":{}}`, true},
		{"open root map", `{"type":"object","additionalProperties":{"type":"string"}}`, false},
		{"optional property", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, true},
		{"dropped keyword", `{"type":"object","properties":{"a":{"type":"string","minLength":2}},"required":["a"],"additionalProperties":false}`, true},
		{"ref with siblings", `{"type":"object","properties":{"a":{"$ref":"#/$defs/x","description":"d"}},"required":["a"],"additionalProperties":false,"$defs":{"x":{"type":"string"}}}`, true},
		{"open map", `{"type":"object","properties":{"m":{"type":"object","additionalProperties":true}},"required":["m"]}`, false},
		{"pattern properties", `{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, false},
		{"any value", `{"type":"object","properties":{"a":{}},"required":["a"],"additionalProperties":false}`, false},
		{"recursive ref with siblings", `{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"required":["n"],"additionalProperties":false,"$defs":{"n":{"type":"object","properties":{"k":{"$ref":"#/$defs/n","description":"child"}},"required":["k"],"additionalProperties":false}}}`, false},
		{"tuple", `{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"}]}},"required":["t"],"additionalProperties":false}`, false},
		{"root not object", `{"type":"array","items":{"type":"string"}}`, false},
		{"too deep", deepSchema(12), false},
		{"too many enum values", bigEnum(1001, 1), false},
		{"too many enum characters", bigEnum(100, 200), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if v := checkStrict(json.RawMessage(tc.schema)); len(v) == 0 {
				t.Fatalf("checkStrict accepts a schema that breaks the rules")
			}
			r := makeStrict(json.RawMessage(tc.schema))
			if r.Strict != tc.repairable {
				t.Fatalf("Strict = %v (%s), want %v", r.Strict, r.Reason, tc.repairable)
			}
			if r.Strict {
				obeysStrict(t, tc.name, r.Schema)
			} else if r.Reason == "" || string(r.Schema) != tc.schema {
				t.Fatalf("strict:false must keep the schema and give a reason: %q", r.Reason)
			}
		})
	}
}

// bigEnum is a closed object with one enum of n strings of size characters.
func bigEnum(n, size int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf("%q", fmt.Sprintf("%0*d", size, i))
	}
	return `{"type":"object","properties":{"e":{"enum":[` + strings.Join(vals, ",") + `]}},"required":["e"],"additionalProperties":false}`
}

func deepSchema(n int) string {
	s := `{"type":"string"}`
	for i := 0; i < n; i++ {
		s = `{"type":"object","properties":{"x":` + s + `},"required":["x"],"additionalProperties":false}`
	}
	return s
}

// FuzzStrict: whatever the schema, makeStrict never marks strict a schema
// that breaks the rules, and never panics.
func FuzzStrict(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x","title":"t"}},"$defs":{"x":{"type":"object","properties":{"y":{"$ref":"#"}}}}}`,
		`{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"const":1}]}},"additionalProperties":false}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"enum":[1,null]}}},"additionalProperties":false}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		if l, err := toLegacy(json.RawMessage(schema)); err == nil && !json.Valid(l.Schema) {
			t.Fatalf("Legacy produced invalid JSON: %s", l.Schema)
		}
		r := makeStrict(json.RawMessage(schema))
		if r.Strict {
			if v := checkStrict(r.Schema); len(v) > 0 {
				t.Fatalf("strict:true on a schema that breaks the rules: %v\n%s", v, r.Schema)
			}
			obeysStrict(t, "fuzz", r.Schema)
		}
	})
}

// A schema whose $refs fan out is refused, not expanded exponentially.
func TestInliningIsBounded(t *testing.T) {
	defs := `"d0":{"type":"string"}`
	for i := 1; i <= 30; i++ {
		defs += fmt.Sprintf(`,"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d","title":"x"},"b":{"$ref":"#/$defs/d%d","title":"y"}},"required":["a","b"],"additionalProperties":false}`, i, i-1, i-1)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"top":{"$ref":"#/$defs/d30","title":"t"}},"required":["top"],"additionalProperties":false,"$defs":{` + defs + `}}`)
	if r := makeStrict(schema); r.Strict {
		t.Fatal("a 2^30-node expansion was marked strict")
	}
	if _, err := toLegacy(schema); err == nil {
		t.Fatal("Legacy expanded 2^30 nodes")
	}
}
