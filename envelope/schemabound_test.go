package envelope

import (
	"encoding/json"
	"strings"
	"testing"
)

// A number the library would turn into a huge exact fraction is refused
// before it gets there; ordinary numbers, and digits inside strings, pass.
func TestHugeNumbersAreRefusedBeforeValidation(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":10},"l":{"type":"array","items":{"type":"number"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc  string
		huge bool
	}{
		{`{"n":1e999999}`, true},
		{`{"n":-1E+1001}`, true},
		{`{"l":[1,2,1e-5000]}`, true},
		{`{"n":` + strings.Repeat("9", 1001) + `}`, true},
		{`{"n":1e1000}`, false},
		{`{"n":5}`, false},
		{`{"n":"1e999999"}`, false},
		{`{"n":"\"1e999999"}`, false},
		{`{"l":[1.5e-300]}`, false},
	} {
		v := s.Validate(json.RawMessage(c.doc))
		refused := len(v) == 1 && strings.Contains(v[0].Message, "exponent beyond")
		if refused != c.huge {
			t.Errorf("%.40s: violations %v, want refused=%v", c.doc, v, c.huge)
		}
	}
}

func FuzzBoundedNumbers(f *testing.F) {
	for _, s := range []string{`{"n":1e999999}`, `[1,2]`, `"\"1e9999"`, `-`, `1e`, `1e+`, `{"a":"x\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) { _ = boundedNumbers(doc) })
}
