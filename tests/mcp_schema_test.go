package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/internal/testutil"
)

// TestMCPBridgeWildSchemas bridges a server whose tools carry the schemas
// servers in the wild emit (no "type", {}, true, a type list, 2020-12
// keywords): every tool is on the mesh, each changed schema says what
// changed in its $comment, and the normalised schemas are enforced.
func TestMCPBridgeWildSchemas(t *testing.T) {
	entry := bridge.Entry{Namespace: "w", Server: bridge.ServerConfig{Command: mcpServerBin(t), Args: []string{"-wild"}}}
	b, c := startBridge(t, entry)
	cases := []struct {
		tool    string
		changed bool
		keeps   string // a fragment of the server's schema that must survive
	}{
		{"w.zero_empty", true, `"type":"object"`},
		{"w.zero_true", true, `"type":"object"`},
		{"w.props_notype", true, `"required":["q"]`},
		{"w.type_list", true, `"properties":{"n":{`},
		{"w.dialect_2020", false, `"$defs":{"addr":`},
	}
	for _, tc := range cases {
		if !slices.Contains(b.Tools(), tc.tool) {
			t.Fatalf("%s is not hosted; hosted: %v", tc.tool, b.Tools())
		}
		spec, err := c.Catalog().Describe(context.Background(), tc.tool)
		if err != nil {
			t.Fatal(err)
		}
		in := string(spec.InputSchema)
		if !strings.Contains(in, `"type":"object"`) || !strings.Contains(in, tc.keeps) ||
			strings.Contains(in, "toolmesh bridge:") != tc.changed {
			t.Errorf("%s input_schema = %s (changed %v, must keep %s)", tc.tool, in, tc.changed, tc.keeps)
		}
		if got, p := callBridged(t, c, tc.tool, map[string]any{"q": "x"}); tc.tool != "w.dialect_2020" && (p != nil || !strings.Contains(got, tc.tool[2:])) {
			t.Errorf("call %s = %s, %v", tc.tool, got, p)
		}
	}
	if _, p := callBridged(t, c, "w.props_notype", map[string]any{}); p == nil || p.Code != envelope.CodeInvalidInput {
		t.Errorf("w.props_notype without its required q: %v, want invalid_input", p)
	}
	if _, p := callBridged(t, c, "w.dialect_2020", map[string]any{"extra": 1}); p == nil || p.Code != envelope.CodeInvalidInput {
		t.Errorf("w.dialect_2020 with a member additionalProperties:false forbids: %v, want invalid_input", p)
	}
}

// TestMCPBridgeUnhostableTool: a tool the mesh cannot carry fails
// `toolmesh worker`'s start, naming the tool and why; listed under skip,
// the worker starts without it.
func TestMCPBridgeUnhostableTool(t *testing.T) {
	_, url := startDev(t)
	dir := t.TempDir()
	write := func(skip string) string {
		path := filepath.Join(dir, fmt.Sprintf("tools%d.yaml", len(skip)))
		yaml := fmt.Sprintf("tools:\n  - namespace: u\n    binding:\n      mcp: {command: %q, args: [-wild, -unhostable]%s}\n", mcpServerBin(t), skip)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	r := runCmd(t, "", "worker", "--config", write(""), "--server", url)
	if r.code != 78 || !strings.Contains(r.stderr, `\"stringy\"`) || !strings.Contains(r.stderr, `\"type\":\"string\"`) || !strings.Contains(r.stderr, "skip") {
		t.Fatalf("worker with an unhostable tool: code %d, stderr %s; want 78 naming stringy, why, and skip", r.code, r.stderr)
	}
	startProc(t, "worker", "--config", write(", skip: [stringy]"), "--server", url)
	testutil.WaitFor(t, "u.zero_empty on the mesh", func() bool {
		return runCmd(t, "", "call", "u.zero_empty", "--server", url).code == 0
	})
	if r := runCmd(t, "", "call", "u.stringy", "--server", url); r.code == 0 || !strings.Contains(r.stderr, "tool_not_found") {
		t.Fatalf("u.stringy was skipped, yet: %+v", r)
	}
}
