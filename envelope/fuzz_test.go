package envelope

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// seedCorpus adds every golden file and a few hostile inputs.
func seedCorpus(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{``, `null`, `{}`, `[]`, `"x"`, `{"type":null}`, `{"type":"progress","pct":1e400}`,
		`{"type":"error","code":"x","details":[]}`, `{"id":"1","success":true,"":1}`, "{\"args\":{\"a\":\"\x00\"}}",
		`{"cmd":"x","exit_code_map":{"-1":"y","+2":"z"}}`, `{"name":"a","input_schema":{"type":"object","$ref":"#"}}`} {
		f.Add([]byte(s))
	}
}

// fuzzDecoder decodes data into a fresh T; whatever decodes must re-encode
// and decode again to the same bytes (no panic, no drift).
func fuzzDecoder[T any](f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			return
		}
		enc, err := json.Marshal(&v)
		if err != nil {
			return // e.g. a problem extension that decoded but cannot encode is impossible; tolerate encoder refusals
		}
		var w T
		if err := json.Unmarshal(enc, &w); err != nil {
			t.Fatalf("own output %s does not decode: %v", enc, err)
		}
		again, err := json.Marshal(&w)
		if err != nil || string(again) != string(enc) {
			t.Fatalf("unstable round trip:\n %s\n %s (%v)", enc, again, err)
		}
	})
}

func FuzzToolEvent(f *testing.F)      { fuzzDecoder[ToolEvent](f) }
func FuzzResponse(f *testing.F)       { fuzzDecoder[Response](f) }
func FuzzProblem(f *testing.F)        { fuzzDecoder[Problem](f) }
func FuzzResponseFormat(f *testing.F) { fuzzDecoder[ResponseFormat](f) }
func FuzzToolSpec(f *testing.F)       { fuzzDecoder[ToolSpec](f) }
