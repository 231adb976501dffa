package mcpmap

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

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
		if got := Structured(json.RawMessage(c.data)); string(got) != c.wantData {
			t.Errorf("Structured(%s) = %s", c.data, got)
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
		tool, err := Tool("mesh_"+c.spec.Name, c.spec)
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
