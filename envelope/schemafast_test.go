package envelope

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Schemas the project's own tools produce: the echo tool, the demo tools,
// and what worker.InferSchema makes of typed arguments (count's and
// sleep's, and a struct of every scalar field kind).
const (
	echoSchema   = `{"type":"object","properties":{"message":{"type":"string"}}}`
	demoEcho     = `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`
	inferCount   = `{"type":"object","properties":{"n":{"type":"integer","description":"how many deltas to send","default":5,"minimum":0,"maximum":100000},"interval_ms":{"type":"integer","description":"milliseconds between deltas","default":200,"minimum":0,"maximum":10000}},"additionalProperties":false}`
	inferSleep   = `{"type":"object","properties":{"seconds":{"type":"number","description":"how long to sleep","minimum":0,"maximum":3600}},"required":["seconds"],"additionalProperties":false}`
	inferScalars = `{"type":"object","properties":{"s":{"type":"string"},"b":{"type":"boolean"},"p":{"type":["null","integer"]},"u":{"type":"integer","minimum":0,"maximum":255},"m":{"type":"string","enum":["fast","slow"]},"f":{"type":"number"}},"required":["b","p","u","m","f"],"additionalProperties":false}`
)

func TestSchemaFastPathSubset(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		fast   bool
	}{
		{"echo", echoSchema, true},
		{"demo echo", demoEcho, true},
		{"inferred count", inferCount, true},
		{"inferred sleep", inferSleep, true},
		{"inferred scalars", inferScalars, true},
		{"untyped object", `{"type":"object"}`, true},
		{"map of any", `{"type":"object","additionalProperties":true}`, true},
		{"empty struct", `{"type":"object","additionalProperties":false}`, true},
		{"no properties, closed", `{"type":"object","properties":{},"additionalProperties":false}`, true},
		{"annotations", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"urn:x","title":"t","description":"d","$comment":"c","type":"object","properties":{"a":{"title":"a","examples":[1],"deprecated":true,"readOnly":true,"writeOnly":false,"default":{"x":[1]}}}}`, true},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"integer","exclusiveMinimum":0}}}`, true},
		{"draft 2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"a":{"const":"x"}}}`, true},
		{"draft-06", `{"$schema":"http://json-schema.org/draft-06/schema#","type":"object","properties":{"a":{"maxLength":3}}}`, true},
		{"property true", `{"type":"object","properties":{"a":true}}`, true},
		{"required only", `{"type":"object","required":["a"]}`, true},
		{"enum of scalars", `{"type":"object","properties":{"a":{"enum":[null,true,1.5,"x"]}}}`, true},
		{"no root type", `{"properties":{"a":{"type":"string"}}}`, true},

		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"integer","minimum":0,"exclusiveMinimum":true}}}`, false},
		{"pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"^a"}}}`, false},
		{"format", `{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`, false},
		{"ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/p"}},"$defs":{"p":{"type":"integer"}}}`, false},
		{"nested object", `{"type":"object","properties":{"a":{"type":"object"}}}`, false},
		{"array", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, false},
		{"oneOf", `{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]}`, false},
		{"enum with an object", `{"type":"object","properties":{"a":{"enum":[{"x":1}]}}}`, false},
		{"multipleOf", `{"type":"object","properties":{"a":{"type":"number","multipleOf":2}}}`, false},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"string"}}`, false},
		{"root not object", `{"type":"array"}`, false},
		{"root type list", `{"type":["object","null"]}`, false},
		{"false property", `{"type":"object","properties":{"a":false}}`, false},
		{"unknown keyword", `{"type":"object","properties":{"a":{"type":"string","x-flag":true}}}`, false},
		{"minProperties", `{"type":"object","minProperties":1}`, false},
		{"huge bound", `{"type":"object","properties":{"a":{"maximum":1e999}}}`, false},
		{"fractional minLength", `{"type":"object","properties":{"a":{"minLength":1.0}}}`, false},
		{"boolean root", `true`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CompileSchema(json.RawMessage(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.fast != nil; got != tc.fast {
				t.Fatalf("fast path = %v, want %v", got, tc.fast)
			}
		})
	}
}

// TestSchemaFastPathVerdicts checks what the fast path vouches for, and
// that the library agrees each time it does.
func TestSchemaFastPathVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name, schema, doc string
		fast              bool // the fast path vouches for doc
	}{
		{"echo", echoSchema, `{"message":"hi"}`, true},
		{"echo, spaces", echoSchema, " {\n \"message\" : \"hi\" ,\t\"other\":[1,{\"x\":null}] } ", true},
		{"echo, empty", echoSchema, `{}`, true},
		{"echo, wrong type", echoSchema, `{"message":1}`, false},
		{"echo, escaped value", echoSchema, `{"message":"a\"b\u00e9"}`, true},
		{"escaped name", echoSchema, `{"mess\u0061ge":1}`, false},
		{"duplicate name", echoSchema, `{"message":"a","message":"b"}`, false},
		{"trailing data", echoSchema, `{"message":"a"} x`, false},
		{"two documents", echoSchema, `{}{}`, false},
		{"not an object", echoSchema, `["message"]`, false},
		{"bad nested", echoSchema, `{"x":[1,}`, false},
		{"control char", echoSchema, "{\"message\":\"a\nb\"}", false},
		{"bad escape", echoSchema, `{"message":"\x"}`, false},
		{"leading zero", inferSleep, `{"seconds":01}`, false},
		{"required missing", demoEcho, `{}`, false},
		{"closed, extra", inferSleep, `{"seconds":1,"x":1}`, false},
		{"closed, required but not declared", `{"type":"object","required":["a"],"additionalProperties":false}`, `{"a":1}`, false},
		{"open, required but not declared", `{"type":"object","required":["a"]}`, `{"a":{"b":[]}}`, true},
		{"number in range", inferSleep, `{"seconds":3599.999}`, true},
		{"number at max", inferSleep, `{"seconds":36e2}`, true},
		{"number above max", inferSleep, `{"seconds":3600.0000001}`, false},
		{"negative zero", inferSleep, `{"seconds":-0.0}`, true},
		{"below min", inferSleep, `{"seconds":-1e-300}`, false},
		{"integer", inferCount, `{"n":100000,"interval_ms":0}`, true},
		{"integer 1.0", inferCount, `{"n":1.0}`, true},
		{"integer 15e-1", inferCount, `{"n":15e-1}`, false},
		{"integer too large", inferCount, `{"n":100001}`, false},
		{"integer, many digits", inferCount, `{"n":1.00000000000000000000000000000000000000000001}`, false},
		{"nullable", inferScalars, `{"b":false,"p":null,"u":255,"m":"slow","f":-2.5e3}`, true},
		{"enum miss", inferScalars, `{"b":false,"p":null,"u":255,"m":"medium","f":1}`, false},
		{"enum escaped", inferScalars, `{"b":true,"p":1,"u":0,"m":"f\u0061st","f":1}`, false},
		{"min length in code points", `{"type":"object","properties":{"a":{"minLength":2,"maxLength":2}}}`, `{"a":"éé"}`, true},
		{"max length exceeded", `{"type":"object","properties":{"a":{"maxLength":1}}}`, `{"a":"éé"}`, false},
		{"length of a number", `{"type":"object","properties":{"a":{"maxLength":1}}}`, `{"a":12345}`, true},
		{"const number", `{"type":"object","properties":{"a":{"const":10}}}`, `{"a":1e1}`, true},
		{"enum and const", `{"type":"object","properties":{"a":{"enum":[1,2],"const":2}}}`, `{"a":1}`, false},
		{"exclusive bounds", `{"type":"object","properties":{"a":{"exclusiveMinimum":0,"exclusiveMaximum":1}}}`, `{"a":0}`, false},
		{"exclusive inside", `{"type":"object","properties":{"a":{"exclusiveMinimum":0,"exclusiveMaximum":1}}}`, `{"a":0.5}`, true},
		{"true literal", `{"type":"object","properties":{"a":{"type":"boolean"}}}`, `{"a":true}`, true},
		{"truncated literal", `{"type":"object","properties":{"a":{"type":"boolean"}}}`, `{"a":tru}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := must(CompileSchema(json.RawMessage(tc.schema)))
			if s.fast == nil {
				t.Fatal("no fast path")
			}
			if got := s.fast.valid([]byte(tc.doc)); got != tc.fast {
				t.Fatalf("fast path vouches = %v, want %v", got, tc.fast)
			}
			if lib := s.validateLibrary(json.RawMessage(tc.doc)); tc.fast && len(lib) > 0 {
				t.Fatalf("fast path vouched, the library says %v", lib)
			}
		})
	}
}

// TestSchemaFastPathAllocs: a valid one-property call costs no allocation.
func TestSchemaFastPathAllocs(t *testing.T) {
	s := must(CompileSchema(json.RawMessage(echoSchema)))
	doc := json.RawMessage(`{"message":"hello, world"}`)
	if n := testing.AllocsPerRun(100, func() {
		if v := s.Validate(doc); v != nil {
			t.Fatal(v)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per Validate, want 0", n)
	}
	sleep := must(CompileSchema(json.RawMessage(inferScalars)))
	doc = json.RawMessage(`{"b":false,"p":7,"u":255,"m":"slow","f":-2.5e3}`)
	if n := testing.AllocsPerRun(100, func() { _ = sleep.Validate(doc) }); n != 0 {
		t.Fatalf("%v allocations per Validate of the scalar struct, want 0", n)
	}
}

// fuzzSchemas are the schemas FuzzSchemaFastPath validates documents
// against: the project's shapes, a few outside the subset, and a property
// "a" under every combination of a type, a constraint and a root shape.
func fuzzSchemas() []string {
	out := []string{
		echoSchema, demoEcho, inferCount, inferSleep, inferScalars,
		`{"type":"object"}`,
		`{"type":"object","additionalProperties":false}`,
		`{"type":"object","properties":{"a":{"minLength":1,"maxLength":3,"enum":["a","é","ab","abc","\u00e9\u00e9"]}}}`,
		`{"type":"object","properties":{"a":{"const":0.1},"b":{"enum":[null,false,1e-3,"x"]},"c":true},"required":["c"]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"integer","exclusiveMinimum":0}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"integer","minimum":0,"exclusiveMinimum":true}}}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^a"}}}`,
	}
	types := []string{``, `"type":"string",`, `"type":"number",`, `"type":"integer",`, `"type":["null","integer"],`, `"type":["string","boolean"],`}
	constraints := []string{`"title":"t"`, `"enum":[null,true,0,-1.5,1e2,"a","é"]`, `"const":100`, `"minimum":-1.5,"maximum":1e2`,
		`"exclusiveMinimum":0,"exclusiveMaximum":0.3`, `"minLength":1,"maxLength":2`, `"const":"ab","maxLength":2`}
	roots := []string{``, `,"required":["a"]`, `,"additionalProperties":false`, `,"required":["a","z"],"additionalProperties":false`}
	for _, ty := range types {
		for _, c := range constraints {
			for _, r := range roots {
				out = append(out, `{"type":"object","properties":{"a":{`+ty+c+`},"b":{"type":"string"}}`+r+`}`)
			}
		}
	}
	return out
}

// FuzzSchemaFastPath checks the fast path against the library: whenever
// it vouches for a document the library accepts it too, and Validate's
// violations are always the library's.
func FuzzSchemaFastPath(f *testing.F) {
	raws := fuzzSchemas()
	for i, doc := range []string{`{"message":"hi"}`, `{"n":1.0,"interval_ms":2}`, `{"seconds":3600}`,
		`{"b":true,"p":null,"u":0,"m":"fast","f":0}`, `{"x":{"y":[1,"2"]}}`, `{}`, `{"a":"é"}`, `{"a":-1.5}`,
		`{"a":0.10,"b":0.001,"c":[]}`, `{"a":1}`, `{"a":"ab"}`, `{"a":"\u0061"}`} {
		for j := range 16 {
			f.Add(uint16(i+j*37), []byte(doc))
		}
	}
	schemas := make([]*Schema, len(raws))
	for i, raw := range raws {
		schemas[i] = must(CompileSchema(json.RawMessage(raw)))
	}
	f.Fuzz(func(t *testing.T, which uint16, doc []byte) {
		i := int(which) % len(schemas)
		s := schemas[i]
		lib := s.validateLibrary(doc)
		if s.fast != nil && s.fast.valid(doc) && len(lib) > 0 {
			t.Fatalf("schema %s: fast path vouched for %q, the library says %v", raws[i], doc, lib)
		}
		if got := s.Validate(doc); !reflect.DeepEqual(got, lib) {
			t.Fatalf("Validate = %v, library = %v", got, lib)
		}
	})
}

// BenchmarkSchemaValidate is Validate of a one-property call on the fast
// path beside the library alone.
func BenchmarkSchemaValidate(b *testing.B) {
	s := must(CompileSchema(json.RawMessage(echoSchema)))
	doc := json.RawMessage(`{"message":"hello, world"}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s.Validate(doc) != nil {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s.validateLibrary(doc) != nil {
				b.Fatal("invalid")
			}
		}
	})
}
