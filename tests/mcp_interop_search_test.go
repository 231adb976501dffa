package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// searchSummary is what search.mjs prints.
type searchSummary struct {
	Before         []string `json:"before"`
	IsError        bool     `json:"isError"`
	Found          []string `json:"found"`
	FirstHasSchema bool     `json:"firstHasSchema"`
	ListChanged    bool     `json:"listChanged"`
	After          []string `json:"after"`
}

// Progressive discovery through `toolmesh mcp --progressive` with the
// official TypeScript client, against a mesh of the real bridged
// server-filesystem and server-memory (npm) and the demo tools: the
// search tool answers "read a file" with fs.read_file first, as
// `toolmesh tools search` (catalog.Catalog.Search) does, and the found tools join
// the tool list with list_changed.
func TestMCPInteropProgressiveSearch(t *testing.T) {
	dir := npmDir(t, npmSDK, npmFilesystem, npmMemory)
	src, err := os.ReadFile("testdata/mcp-interop/search.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "search.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	_, url := startDev(t)
	modules := filepath.Join(dir, "node_modules", "@modelcontextprotocol")
	yaml := fmt.Sprintf("tools:\n"+
		"  - namespace: fs\n    binding:\n      mcp: {command: node, args: [%q, %q]}\n"+
		"  - namespace: memory\n    binding:\n      mcp: {command: node, args: [%q], env: {MEMORY_FILE_PATH: %q}}\n",
		filepath.Join(modules, "server-filesystem", "dist", "index.js"), t.TempDir(),
		filepath.Join(modules, "server-memory", "dist", "index.js"), filepath.Join(t.TempDir(), "memory.jsonl"))
	tools := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(tools, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc(t, "worker", "--config", tools, "--server", url)
	var cli []struct {
		Tool struct {
			Spec struct {
				Name string `json:"name"`
			} `json:"spec"`
		} `json:"tool"`
	}
	waitFor(t, "the bridged servers' tools in the catalogue", func() bool {
		r := runCmd(t, "", "tools", "list", "--server", url)
		return strings.Contains(r.stdout, "fs.read_file") && strings.Contains(r.stdout, "memory.read_graph") && strings.Contains(r.stdout, "echo")
	})
	r := runCmd(t, "", "tools", "search", "read a file", "--json", "--server", url)
	if err := json.Unmarshal([]byte(r.stdout), &cli); err != nil || len(cli) == 0 {
		t.Fatalf("tools search: %v %+v", err, r)
	}
	s := runNodeScript[searchSummary](t, dir, "search.mjs", toolmeshBin(t), url, "read a file")
	if !slices.Equal(s.Before, []string{"echo", "search_tools"}) {
		t.Fatalf("tools/list before a search = %v, want the pin and the search tool", s.Before)
	}
	if s.IsError || len(s.Found) == 0 || s.Found[0] != "fs.read_file" || s.Found[0] != cli[0].Tool.Spec.Name || !s.FirstHasSchema {
		t.Fatalf("search_tools %q = %+v; toolmesh tools search's first = %s", "read a file", s, cli[0].Tool.Spec.Name)
	}
	for _, name := range s.Found {
		if !slices.Contains(s.After, name) {
			t.Fatalf("after the search tools/list = %v, missing %s", s.After, name)
		}
	}
	if !s.ListChanged {
		t.Fatal("no list_changed after the search")
	}
}
