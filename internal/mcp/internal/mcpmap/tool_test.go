package mcpmap

import (
	"encoding/json"
	"flag"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
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
		testutil.Golden(t, c.golden, got, *update)
	}
}

// TestListedKeepsTheServersHints holds Listed to the server's own words:
// a hint the server wrote false stays false, one it left out stays unset
// (the SDK decodes both as false), and the definition and position are
// recorded as given.
func TestListedKeepsTheServersHints(t *testing.T) {
	def := json.RawMessage(`{"name":"w","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":true},"execution":{"taskSupport":"forbidden"}}`)
	var tool mcp.Tool
	if err := json.Unmarshal(def, &tool); err != nil {
		t.Fatal(err)
	}
	s, _, err := Spec("fs", &tool)
	if err != nil {
		t.Fatal(err)
	}
	Listed(&s, def, 3)
	a := s.Annotations
	if a == nil || a.ReadOnly == nil || *a.ReadOnly || a.Idempotent != nil || a.Destructive == nil || !*a.Destructive {
		t.Fatalf("annotations = %+v, want read_only false, idempotent unset, destructive true", a)
	}
	if s.MCP == nil || s.MCP.Position != 3 || string(s.MCP.Definition) != string(def) {
		t.Fatalf("mcp = %+v, want the definition at position 3", s.MCP)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	Listed(&s, nil, 0) // a transport the bridge cannot tap: hints as Spec made them
	if s.MCP == nil || s.MCP.Definition != nil || s.Annotations == nil || s.Annotations.ReadOnly == nil {
		t.Fatalf("without a definition: mcp %+v, annotations %+v", s.MCP, s.Annotations)
	}
}
