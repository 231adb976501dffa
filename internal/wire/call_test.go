package wire_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// call is the call body as the worker and the caller use it: page and
// response format are envelope's types.
type call = wire.Call[envelope.Page, envelope.ResponseFormat]

// parseCall is wire.ParseCall of such a body.
func parseCall(data []byte) (call, error) {
	return wire.ParseCall[envelope.Page, envelope.ResponseFormat](data)
}

// goldenFile compares got with testdata/name, rewriting it under -update.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, name, got, *wire.UpdateGolden)
}

// TestGoldenCalls pins the call body's wire form (docs/protocol.md) and
// checks it decodes back to the same bytes.
func TestGoldenCalls(t *testing.T) {
	cases := []struct {
		name string
		call call
	}{
		{"call_minimal.json", call{Args: json.RawMessage(`{"message":"hi"}`)}},
		{"call_full.json", call{Args: json.RawMessage(`{"q":"x"}`), DryRun: true, Page: &envelope.Page{All: true},
			ResponseFormat: &envelope.ResponseFormat{Type: envelope.FormatJSONSchema, JSONSchema: &envelope.JSONSchemaFormat{
				Name: "answer", Schema: json.RawMessage(`{"type":"object"}`), Strict: true}}}},
		{"call_cursor.json", call{Args: json.RawMessage(`{}`), Page: &envelope.Page{Cursor: "abc"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.call)
			if err != nil {
				t.Fatal(err)
			}
			goldenFile(t, c.name, b)
			var back call
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("decode own output: %v", err)
			}
			again, _ := json.Marshal(back)
			if !bytes.Equal(again, b) {
				t.Errorf("round trip changed the bytes:\n %s\n %s", b, again)
			}
		})
	}
}

// Each malformed call body is rejected with an error that names the field.
func TestCallRejects(t *testing.T) {
	cases := []struct{ name, in, wantField string }{
		{"missing args", `{"dry_run":true}`, "args"},
		{"args not object", `{"args":[1]}`, "args"},
		{"page both", `{"args":{},"page":{"all":true,"cursor":"x"}}`, "page"},
		{"page empty", `{"args":{},"page":{}}`, "page"},
		{"bad format", `{"args":{},"response_format":{"type":"yaml"}}`, "type"},
		{"dry_run not boolean", `{"args":{},"dry_run":"yes"}`, "dry_run"},
		{"not object", `[1]`, "object"},
		{"invalid UTF-8", "{\"args\":{\"s\":\"\xff\"}}", "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, decode := range []func([]byte) error{
				func(b []byte) error { return json.Unmarshal(b, new(call)) },
				func(b []byte) error { _, err := parseCall(b); return err },
			} {
				err := decode([]byte(c.in))
				if err == nil {
					t.Fatalf("decoded %s without error", c.in)
				}
				if !strings.Contains(err.Error(), c.wantField) {
					t.Errorf("error %q does not name %q", err, c.wantField)
				}
			}
		})
	}
}

// Escaped member names mean the same strings as plain ones: the
// allocation-free fast path must not reject or miss them.
func TestParseCallEscapedNames(t *testing.T) {
	c, err := parseCall([]byte(`{"\u0061rgs":{"x":1},"dry_run":true}`))
	if err != nil {
		t.Fatalf("escaped call: %v", err)
	}
	if string(c.Args) != `{"x":1}` || !c.DryRun {
		t.Errorf("escaped call decoded as %+v", c)
	}
}

// ParseCall aliases the input; UnmarshalJSON copies it, so the caller may
// reuse its buffer.
func TestUnmarshalCallCopiesParseAliases(t *testing.T) {
	buf := []byte(`{"args":{"n":1}}`)
	var copied call
	if err := copied.UnmarshalJSON(buf); err != nil {
		t.Fatal(err)
	}
	aliased, err := parseCall(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf[bytes.Index(buf, []byte(`{"n":1}`)):], `{"n":2}`)
	if string(copied.Args) != `{"n":1}` {
		t.Errorf("UnmarshalJSON result changed with the input buffer: %s", copied.Args)
	}
	if string(aliased.Args) != `{"n":2}` {
		t.Errorf("ParseCall copied the args: %s", aliased.Args)
	}
}

// FuzzCall: whatever decodes re-encodes and decodes again to the same
// bytes (no panic, no drift), and ParseCall agrees with UnmarshalJSON.
func FuzzCall(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "call_*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{``, `null`, `{}`, `[]`, `{"args":null}`, "{\"args\":{\"a\":\"\x00\"}}",
		`{"args":{},"page":{"cursor":"x"},"response_format":{"type":"free"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c call
		err := json.Unmarshal(data, &c)
		if _, perr := parseCall(data); (perr == nil) != (err == nil) && json.Valid(data) {
			t.Fatalf("ParseCall err %v, UnmarshalJSON err %v for %q", perr, err, data)
		}
		if err != nil {
			return
		}
		enc, err := json.Marshal(&c)
		if err != nil {
			return
		}
		var back call
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("own output %s does not decode: %v", enc, err)
		}
		if again, err := json.Marshal(&back); err != nil || string(again) != string(enc) {
			t.Fatalf("unstable round trip:\n %s\n %s (%v)", enc, again, err)
		}
	})
}
