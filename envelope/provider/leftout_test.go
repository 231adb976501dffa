package provider

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// surfaceSpec is a bridged MCP server's surface tool as mcp/bridge makes
// it: "<namespace>._mcp.<op>", tagged wire.MCPSurfaceTag.
func surfaceSpec(ns, op string) envelope.ToolSpec {
	return envelope.ToolSpec{Name: wire.MCPSurfaceName(ns, op), Title: op + " of MCP server " + ns,
		InputSchema: json.RawMessage(`{"type":"object"}`), Tags: []string{"mcp", wire.MCPSurfaceTag}}
}

// exportedMeshNames are the mesh tools an export declares (its name map).
func exportedMeshNames(ts *Toolset) map[string]bool {
	out := map[string]bool{}
	for _, mesh := range ts.Names.toMesh {
		out[mesh] = true
	}
	return out
}

// Surface tools are MCP methods, not tools for a model: no provider's
// export declares them, deferred or not, and the export stays complete,
// with one note saying how many were left out.
func TestExportLeavesOutMCPSurfaceTools(t *testing.T) {
	specs := append(fixtureSpecs(t), surfaceSpec("fs", wire.MCPResourcesRead), surfaceSpec("fs", wire.MCPPromptsList),
		surfaceSpec("memory", wire.MCPResourcesList))
	for _, p := range providers() {
		for _, deferred := range []bool{false, true} {
			t.Run(string(p)+map[bool]string{true: "/deferred"}[deferred], func(t *testing.T) {
				ts, err := Export(specs, ExportOptions{Provider: p, Defer: deferred})
				if err != nil {
					t.Fatal(err)
				}
				whole := exportFixture(t, ExportOptions{Provider: p, Defer: deferred})
				for mesh := range exportedMeshNames(ts) {
					if strings.Contains(mesh, "._mcp.") {
						t.Errorf("surface tool %s exported", mesh)
					}
				}
				if ts.Names.size() != whole.Names.size() || ts.Complete != whole.Complete {
					t.Errorf("exported %d tools (complete %v), want the fixture's %d (complete %v)", ts.Names.size(), ts.Complete, whole.Names.size(), whole.Complete)
				}
				if all := strings.Join(rawStrings(ts.Tools), "\n"); strings.Contains(all, "_mcp") {
					t.Errorf("a declaration names a surface tool: %s", all)
				}
				if !hasNote(ts, "", "left out 3 MCP surface tools") {
					t.Errorf("no note of the 3 surface tools left out: %+v", ts.Notes)
				}
			})
		}
	}
}

func hasNote(ts *Toolset, tool, substr string) bool {
	for _, n := range ts.Notes {
		if n.Tool == tool && strings.Contains(n.Message, substr) {
			return true
		}
	}
	return false
}

// A mesh tool whose provider name is the deferred export's tool search
// (tool_search as it is, or tool.search where dots become underscores)
// would have the model's calls to it taken for searches: a deferred
// export leaves it out as a gap (Complete false, a note naming it), and an
// export without deferred loading, which adds no search, keeps it.
func TestDeferredExportSkipsTheSearchToolsNamesake(t *testing.T) {
	for _, tc := range []struct {
		provider Provider
		mesh     string
		deferred bool
		exported bool
	}{
		{Anthropic, "tool_search", true, false},
		{Anthropic, "tool.search", true, false},
		{OpenAIResponses, "tool_search", true, false},
		{OpenAIResponses, "tool.search", true, false},
		{Anthropic, "tool_search", false, true},
		{OpenAIResponses, "tool_search", false, true},
		{OpenAI, "tool_search", true, true}, // Chat Completions defers nothing: no search is added
	} {
		t.Run(string(tc.provider)+"/"+tc.mesh+map[bool]string{true: "/deferred"}[tc.deferred], func(t *testing.T) {
			spec := envelope.ToolSpec{Name: tc.mesh, Description: "a mesh tool that happens to share the name",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}
			ts, err := Export(append(fixtureSpecs(t), spec), ExportOptions{Provider: tc.provider, Defer: tc.deferred})
			if err != nil {
				t.Fatal(err)
			}
			if got := exportedMeshNames(ts)[tc.mesh]; got != tc.exported {
				t.Fatalf("%s exported = %v, want %v (notes %+v)", tc.mesh, got, tc.exported, ts.Notes)
			}
			if tc.exported {
				return
			}
			if ts.Complete || !hasNote(ts, tc.mesh, "is the deferred export's tool search") {
				t.Fatalf("complete %v, notes %+v: want a gap naming %s", ts.Complete, ts.Notes, tc.mesh)
			}
			if ts.SearchTool != searchToolName || countNamed(t, ts, searchToolName) != 1 {
				t.Fatalf("want exactly one tool named %q (the search), got %d", searchToolName, countNamed(t, ts, searchToolName))
			}
		})
	}
}

// countNamed counts the declarations (namespaces' functions included)
// named name, or of type name (the Responses tool search).
func countNamed(t *testing.T, ts *Toolset, name string) int {
	t.Helper()
	n := 0
	var walk func(raws []json.RawMessage)
	walk = func(raws []json.RawMessage) {
		for _, raw := range raws {
			var h struct {
				Type, Name string
				Tools      []json.RawMessage
			}
			if err := json.Unmarshal(raw, &h); err != nil {
				t.Fatal(err)
			}
			if h.Name == name || (h.Name == "" && h.Type == name) {
				n++
			}
			walk(h.Tools)
		}
	}
	walk(ts.Tools)
	return n
}
