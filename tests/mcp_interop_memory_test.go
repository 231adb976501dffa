package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// npmMemory is the reference knowledge-graph server, pinned like npmSDK.
const npmMemory = "@modelcontextprotocol/server-memory@2026.8.31"

// The server-memory delete tools answer {"success":true,"message":…} on
// success. Through `toolmesh call` that result has members named like the
// Response's own, and must arrive whole, exit 0 — never internal_error
// after the deletion went through. (The bridge's result is the MCP result,
// so it arrives under "structuredContent"; a Go tool's colliding result
// arrives under "result", docs/protocol.md §5.6.)
func TestMCPInteropServerMemoryDeletes(t *testing.T) {
	dir := npmDir(t, npmMemory)
	_, url := startDev(t)
	server := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")
	yaml := fmt.Sprintf("tools:\n  - namespace: memory\n    binding:\n      mcp: {command: node, args: [%q], env: {MEMORY_FILE_PATH: %q}}\n",
		server, filepath.Join(dir, "memory.jsonl"))
	tools := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(tools, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc(t, "worker", "--config", tools, "--server", url)
	call := func(tool, args string) result {
		return runCmd(t, "", "call", "memory."+tool, "--server", url, "--args", args)
	}
	testutil.WaitFor(t, "memory.create_entities on the mesh", func() bool {
		return call("create_entities", `{"entities":[{"name":"a","entityType":"t","observations":["x","y"]},{"name":"b","entityType":"t","observations":[]}]}`).code == 0
	})
	if r := call("create_relations", `{"relations":[{"from":"a","to":"b","relationType":"knows"}]}`); r.code != 0 {
		t.Fatalf("create_relations: %+v", r)
	}
	for _, c := range []struct{ tool, args string }{
		{"delete_observations", `{"deletions":[{"entityName":"a","observations":["x"]}]}`},
		{"delete_relations", `{"relations":[{"from":"a","to":"b","relationType":"knows"}]}`},
		{"delete_entities", `{"entityNames":["a","b"]}`},
	} {
		r := call(c.tool, c.args)
		// A bridged tool's mesh result is the MCP result (mcp_result), so
		// the server's {"success":true,…} is its structuredContent.
		var resp struct {
			Success bool `json:"success"`
			Result  struct {
				Success bool `json:"success"`
			} `json:"structuredContent"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &resp) != nil || !resp.Success || !resp.Result.Success {
			t.Errorf("%s: want exit 0 and the tool's result whole under \"structuredContent\": %+v", c.tool, r)
		}
	}
	r := call("read_graph", `{}`)
	if r.code != 0 || strings.Contains(r.stdout, `"name":"a"`) {
		t.Fatalf("read_graph after the deletes: %+v", r)
	}
}
