package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// seedScan adds the envelope's golden documents (the shapes the hot paths
// scan) and a few hostile inputs.
func seedScan(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "envelope", "testdata", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{``, `null`, `{}`, `[]`, `"x"`, `{"type":null}`, `{"type":"progress","pct":1e400}`,
		`{"a\"b":"x\\"y","n":[1,{"z":"}"}],"e":{},"u":"\u00e9"}`, "{\"args\":{\"a\":\"\x00\"}}"} {
		f.Add([]byte(s))
	}
}

// FuzzScanMembers checks the hot-path object scanner against encoding/json:
// for every valid object both must see the same members with equal values.
func FuzzScanMembers(f *testing.F) {
	seedScan(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || !IsObject(data) {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(data, &want); err != nil {
			return
		}
		got := map[string]json.RawMessage{}
		err := ScanMembers(data, func(name string, v []byte) error {
			got[name] = append(json.RawMessage(nil), v...) // last wins, like encoding/json
			return nil
		})
		if err != nil {
			t.Fatalf("scan %q: %v", data, err)
		}
		if len(got) != len(want) {
			t.Fatalf("scan %q: %d members, encoding/json saw %d", data, len(got), len(want))
		}
		for k, v := range want {
			var a, b bytes.Buffer
			_ = json.Compact(&a, v)
			if err := json.Compact(&b, got[k]); err != nil {
				t.Fatalf("scan %q: member %q value %q is not JSON", data, k, got[k])
			}
			if a.String() != b.String() {
				t.Fatalf("scan %q: member %q = %s, encoding/json says %s", data, k, got[k], v)
			}
		}
	})
}

func TestAppendJSONFloatMatchesEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 1.5, 1e-6, 1e-7, 123456789, 1e20, 1e21, 1.2345e-9, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, _ := json.Marshal(f)
		got, ok := AppendFloat(nil, f)
		if !ok || string(got) != string(want) {
			t.Errorf("%v: got %s want %s", f, got, want)
		}
	}
}

// TestScanRawMembersRefusesNonObjects: ErrNotObject for every valid
// document that is not an object, so decoders can name the fault.
func TestScanRawMembersRefusesNonObjects(t *testing.T) {
	for _, doc := range []string{`[]`, `"x"`, `1`, `null`, ` true `} {
		err := ScanRawMembers([]byte(doc), func(_, _ []byte) error { return nil })
		if err != ErrNotObject {
			t.Errorf("%s: err = %v, want ErrNotObject", doc, err)
		}
	}
}

// TestCheck: nil for a valid document, a UTF-8 fault named as such, and
// encoding/json's syntax error otherwise.
func TestCheck(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"a":1}`, ""},
		{"\"\xc3\"", "UTF-8"},
		{`{"a":}`, "invalid character"},
	} {
		err := Check([]byte(c.doc))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.doc, err)
		case c.want != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want))):
			t.Errorf("%q: err = %v, want it to say %q", c.doc, err, c.want)
		}
	}
}
