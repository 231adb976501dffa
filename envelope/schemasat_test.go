package envelope

import "testing"

// TestUnsatisfiable: each contradiction the check decides is named, and
// schemas some value meets — however odd — are never refused.
func TestUnsatisfiable(t *testing.T) {
	never := []string{
		`false`,
		`{"not":{}}`,
		`{"not":true}`,
		`{"enum":[]}`,
		`{"type":[]}`,
		`{"type":"string","const":3}`,
		`{"const":1,"enum":[2,3]}`,
		`{"type":"string","enum":[1,null]}`,
		`{"type":"number","minimum":5,"maximum":1}`,
		`{"type":"integer","exclusiveMinimum":3,"maximum":3}`,
		`{"type":"string","minLength":4,"maxLength":2}`,
		`{"type":"array","minItems":3,"maxItems":1}`,
		`{"allOf":[{"type":"string"},{"type":"number"}]}`,
		`{"allOf":[true,{"not":{}}]}`,
		`{"anyOf":[{"enum":[]},false]}`,
		`{"oneOf":[]}`,
		`{"type":"object","required":["n"],"properties":{"n":{"type":"number","minimum":5,"maximum":1}}}`,
		`{"type":"object","required":["n"],"additionalProperties":false}`,
		`{"$defs":{"no":{"enum":[]}},"type":"object","required":["a"],"properties":{"a":{"$ref":"#/$defs/no"}}}`,
	}
	for _, s := range never {
		if why := unsatisfiable([]byte(s)); why == "" {
			t.Errorf("%s: not refused", s)
		}
	}
	some := []string{
		`true`, `{}`, `{"$ref":"#"}`,
		`{"minimum":5,"maximum":1}`,
		`{"type":["number","string"],"minimum":5,"maximum":1}`,
		`{"type":"object","properties":{"n":{"type":"number","minimum":5,"maximum":1}}}`,
		`{"type":"integer","enum":[1.0]}`,
		`{"type":"number","const":2}`,
		`{"allOf":[{"type":"number"},{"type":"integer"}]}`,
		`{"anyOf":[{"enum":[]},{"type":"string"}]}`,
		`{"not":{"type":"string"}}`,
		`{"type":"object","required":["a"],"additionalProperties":false,"patternProperties":{"^a$":{}}}`,
		`{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#"}}}}`,
		`{"type":"number","minimum":1,"exclusiveMaximum":1.5}`,
	}
	for _, s := range some {
		if why := unsatisfiable([]byte(s)); why != "" {
			t.Errorf("%s: refused (%s), though a value meets it", s, why)
		}
	}
}
