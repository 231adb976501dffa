package gateway

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
	ns, _ := newFilter([]string{"fs.*", "git.*"}, []string{"fs.delete"})
	ns.namespace = "fs."
	for name, want := range map[string]bool{"fs.read": true, "fs.delete": false, "git.status": false, "fs": false, "fsx.read": false} {
		if got := ns.allows(name); got != want {
			t.Errorf("namespace fs: allows(%q) = %v, want %v", name, got, want)
		}
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

var update = flag.Bool("update", false, "rewrite the golden files")

// TestMCPToolMapping pins the MCP tool a mesh spec becomes, golden files
// under testdata/.
func TestMCPToolMapping(t *testing.T) {
	no, yes := false, true
	cases := []struct {
		golden string
		spec   envelope.ToolSpec
	}{
		{"tool_defaults.json", envelope.ToolSpec{Name: "fs.read"}},
		{"tool_full.json", envelope.ToolSpec{Name: "count", Title: "Count", Description: "d", Streaming: true,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`), OutputSchema: json.RawMessage(`{"type":"array"}`),
			Annotations: &envelope.Annotations{ReadOnly: &yes, Destructive: &no, Idempotent: &yes, OpenWorld: &no}}},
		// Only what the tool declared: no destructiveHint or openWorldHint invented.
		{"tool_readonly.json", envelope.ToolSpec{Name: "fs.read", Annotations: &envelope.Annotations{ReadOnly: &yes}}},
		// An MCP result's output schema describes structuredContent: verbatim.
		{"tool_mcp_result.json", envelope.ToolSpec{Name: "fs.stat", MCPResult: true,
			InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"properties":{"size":{"type":"integer"}}}`)}},
	}
	for _, c := range cases {
		tool, err := mcpTool("mesh_"+c.spec.Name, c.spec)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.MarshalIndent(tool, "", "  ")
		path := filepath.Join("testdata", c.golden)
		if *update {
			if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got)+"\n" != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", c.golden, got, want)
		}
	}
}
