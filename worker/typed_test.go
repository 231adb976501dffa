package worker

import (
	"encoding/json"
	"testing"
)

// FuzzTypedDefaults: applying schema defaults to any bytes never panics,
// and what it returns is JSON whenever its input was.
func FuzzTypedDefaults(f *testing.F) {
	type nested struct {
		P string `json:"p" toolmesh:"default=!"`
	}
	type args struct {
		N     int      `json:"n" toolmesh:"default=5"`
		Tags  []string `json:"tags,omitempty"`
		Inner nested   `json:"inner,omitzero"`
	}
	raw, err := InferSchema[args]()
	if err != nil {
		f.Fatal(err)
	}
	d, err := resolveDefaults(raw)
	if err != nil || d.resolved == nil {
		f.Fatalf("resolve: %v", err)
	}
	for _, s := range []string{`{}`, `{"n":1}`, `{"inner":5}`, `{"inner":{}}`, `[1]`, `null`, `{"n":12345678901234567890}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := d.apply(b)
		if json.Valid(b) && !json.Valid(out) {
			t.Fatalf("apply(%s) = %s, not JSON", b, out)
		}
	})
}
