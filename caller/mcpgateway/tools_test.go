package mcpgateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

func TestFilter(t *testing.T) {
	f, err := newFilter([]string{"fs.*", " git.status "}, []string{"fs.delete"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		want bool
	}{
		{"fs.read", true}, {"fs.delete", false}, {"git.status", true}, {"git.push", false}, {"echo", false},
	}
	for _, c := range cases {
		if got := f.allows(c.name); got != c.want {
			t.Errorf("allows(%q) = %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := newFilter([]string{"fs.[" /* bad glob */}, nil); err == nil {
		t.Fatal("a malformed pattern must be refused")
	}
	open, _ := newFilter(nil, []string{"x"})
	if !open.allows("anything") || open.allows("x") {
		t.Fatal("an empty allow list serves everything not denied")
	}
}

func TestOutputSchemaAndStructured(t *testing.T) {
	cases := []struct {
		schema, wantSchema string
		data, wantData     string
	}{
		{`{"type":"object"}`, `{"type":"object"}`, `{"a":1}`, `{"a":1}`},
		{`{"type":"array"}`, `{"properties":{"result":{"type":"array"}},"required":["result"],"type":"object"}`, `[1,2]`, `{"result":[1,2]}`},
		{`{"type":"string"}`, `{"properties":{"result":{"type":"string"}},"required":["result"],"type":"object"}`, `"x"`, `{"result":"x"}`},
	}
	for _, c := range cases {
		got, err := outputSchema(json.RawMessage(c.schema))
		if err != nil || string(got) != c.wantSchema {
			t.Errorf("outputSchema(%s) = %s, %v", c.schema, got, err)
		}
		if got := structured(json.RawMessage(c.data)); string(got) != c.wantData {
			t.Errorf("structured(%s) = %s", c.data, got)
		}
	}
}

func TestProblemLine(t *testing.T) {
	cases := []struct {
		p    *envelope.Problem
		want []string
	}{
		{envelope.NewProblem(envelope.CodeInvalidInput, "bad\npath"), []string{"invalid_input: bad path", "Fix:", "do not retry"}},
		{envelope.NewProblem(envelope.CodeWorkerLost, "gone"), []string{"worker_lost: gone", "Retry after 1s."}},
	}
	for _, c := range cases {
		line := problemLine(c.p)
		for _, w := range c.want {
			if !strings.Contains(line, w) || strings.Contains(line, "\n") {
				t.Errorf("problemLine = %q, want it to contain %q on one line", line, w)
			}
		}
	}
}

func TestOriginAllowed(t *testing.T) {
	cases := []struct {
		origin string
		want   bool
	}{
		{"", true}, {"http://localhost:5173", true}, {"http://127.0.0.1", true}, {"http://[::1]:8080", true},
		{"https://app.example.com", true}, {"https://evil.example", false}, {"null", false}, {"file://x", false},
	}
	for _, c := range cases {
		if got := originAllowed(c.origin, []string{"https://app.example.com/"}); got != c.want {
			t.Errorf("originAllowed(%q) = %v, want %v", c.origin, got, c.want)
		}
	}
}
