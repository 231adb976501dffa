package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// The npm packages the interop test installs, pinned so a run is
// reproducible: the official TypeScript SDK and the reference server.
const (
	npmSDK        = "@modelcontextprotocol/sdk@1.32.2"
	npmEverything = "@modelcontextprotocol/server-everything@2026.8.31"
)

// interopDir installs the npm packages into a temporary directory and
// copies the TypeScript client there, so its imports resolve. The test
// runs only under `make interop-mcp` (TOOLMESH_INTEROP_MCP=1): plain
// `go test ./...` needs nothing but Go.
func interopDir(t *testing.T, extra ...string) string {
	t.Helper()
	dir := npmDir(t, append([]string{npmSDK, npmEverything}, extra...)...)
	for _, script := range []string{"client.mjs", "equal.mjs"} {
		src, err := os.ReadFile(filepath.Join("testdata", "mcp-interop", script))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, script), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tsSummary is what client.mjs prints.
type tsSummary struct {
	Tools []string `json:"tools"`
	Echo  struct {
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	} `json:"echo"`
	Count struct {
		StructuredContent map[string]any `json:"structuredContent"`
	} `json:"count"`
	Progress []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	} `json:"progress"`
	Denied     string `json:"denied"`
	CountError struct {
		IsError bool   `json:"isError"`
		Thrown  string `json:"thrown"`
	} `json:"countError"`
}

func runTSClient(t *testing.T, dir string, args ...string) tsSummary {
	t.Helper()
	return runNodeScript[tsSummary](t, dir, "client.mjs", args...)
}

// runNodeScript runs a Node script in dir (beside the installed npm
// packages) and decodes the JSON summary it prints on stdout.
func runNodeScript[T any](t *testing.T, dir, script string, args ...string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s %v: %v\n%s", script, args, err, stderr.String())
	}
	var s T
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("%s output %q: %v", script, out, err)
	}
	return s
}

func checkTSSummary(t *testing.T, s tsSummary, denied bool) {
	t.Helper()
	if !slices.Contains(s.Tools, "echo") || !slices.Contains(s.Tools, "count") || slices.Contains(s.Tools, "sleep") == denied {
		t.Fatalf("tools/list = %v (sleep denied: %v)", s.Tools, denied)
	}
	if s.Echo.IsError || s.Echo.StructuredContent["message"] != "hi from typescript" {
		t.Fatalf("echo = %+v", s.Echo)
	}
	if s.Count.StructuredContent["count"] != float64(3) || len(s.Progress) != 6 {
		t.Fatalf("count = %+v with %d progress notifications, want 6", s.Count, len(s.Progress))
	}
	if !s.CountError.IsError || s.CountError.Thrown != "" {
		t.Fatalf("count with bad args = %+v, want an isError result", s.CountError)
	}
	for i := 1; i < len(s.Progress); i++ {
		if s.Progress[i].Progress <= s.Progress[i-1].Progress {
			t.Fatalf("progress not increasing: %+v", s.Progress)
		}
	}
	if denied && !strings.Contains(s.Denied, "unknown tool") {
		t.Fatalf("denied tool: %q", s.Denied)
	}
}

func TestMCPInteropTypeScriptClient(t *testing.T) {
	dir := interopDir(t)
	_, url := startDev(t)
	t.Run("stdio", func(t *testing.T) {
		checkTSSummary(t, runTSClient(t, dir, "stdio", toolmeshBin(t), url), true)
	})
	t.Run("http", func(t *testing.T) {
		p := startProc(t, "mcp", "--server", url, "--http", "127.0.0.1:0")
		endpoint := p.waitLine(t, regexp.MustCompile(`serving MCP on (http://\S+)`))[1]
		checkTSSummary(t, runTSClient(t, dir, "http", endpoint), false)
	})
}

// bridgeEverything starts a `toolmesh worker` on the mesh at url that
// bridges server-everything (installed under dir) over stdio as namespace
// everything; binding adds to its mcp binding (", client_capabilities: …").
func bridgeEverything(t *testing.T, dir, url, binding string) {
	t.Helper()
	tools := filepath.Join(dir, "tools.yaml")
	server := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	yaml := fmt.Sprintf("tools:\n  - namespace: everything\n    binding:\n      mcp: {command: node, args: [%q, stdio]%s}\n", server, binding)
	if err := os.WriteFile(tools, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc(t, "worker", "--config", tools, "--server", url)
}

func TestMCPInteropServerEverything(t *testing.T) {
	dir := interopDir(t)
	_, url := startDev(t)
	bridgeEverything(t, dir, url, "")
	var r result
	testutil.WaitFor(t, "everything.echo on the mesh", func() bool {
		r = runCmd(t, "", "call", "everything.echo", "--server", url, "--args", `{"message":"hi"}`)
		return r.code == 0
	})
	if !strings.Contains(r.stdout, `"text":"Echo: hi"`) {
		t.Fatalf("everything.echo: %+v", r)
	}
	r = runCmd(t, "", "call", "everything.get-sum", "--server", url, "--args", `{"a":2,"b":3}`)
	if r.code != 0 || !strings.Contains(r.stdout, "5") {
		t.Fatalf("everything.get-sum: %+v", r)
	}
	r = runCmd(t, "", "call", "everything.echo", "--server", url, "--args", `{}`)
	if r.code == 0 || !strings.Contains(r.stderr, "invalid_input") {
		t.Fatalf("everything.echo without its required message must be refused by the schema: %+v", r)
	}
}

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

// elicitSummary is what elicit.mjs prints.
type elicitSummary struct {
	Asked []struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	} `json:"asked"`
	Result struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Thrown string `json:"thrown"`
}

// runElicitClient runs elicit.mjs (copied next to the installed SDK).
func runElicitClient(t *testing.T, dir string, args ...string) elicitSummary {
	t.Helper()
	src, err := os.ReadFile("testdata/mcp-interop/elicit.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "elicit.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return runNodeScript[elicitSummary](t, dir, "elicit.mjs", args...)
}

// TestMCPInteropElicitation, through the gateway: the official TypeScript
// client's elicitation handler answers `toolmesh dev`'s remove tool, which asks before it
// "deletes", through `toolmesh mcp` over stdio and HTTP; the answer
// reaches the handler. A client that does not declare elicitation gets
// the input_required Problem as an isError result.
func TestMCPInteropElicitation(t *testing.T) {
	dir := interopDir(t) // one npm install for both halves
	t.Run("gateway", func(t *testing.T) { elicitThroughGateway(t, dir) })
	t.Run("bridged", func(t *testing.T) { elicitBridged(t, dir) })
}

func elicitThroughGateway(t *testing.T, dir string) {
	_, url := startDev(t)
	p := startProc(t, "mcp", "--server", url, "--http", "127.0.0.1:0")
	endpoint := p.waitLine(t, regexp.MustCompile(`serving MCP on (http://\S+)`))[1]
	transports := map[string][]string{"stdio": {"stdio", toolmeshBin(t), url}, "http": {"http", endpoint}}
	for name, transport := range transports {
		t.Run(name, func(t *testing.T) {
			call := func(capability string) elicitSummary {
				return runElicitClient(t, dir, append([]string{capability, "remove", `{"path":"/tmp/ts"}`, `{"confirm":true}`}, transport...)...)
			}
			s := call("elicit")
			if s.Thrown != "" || s.Result.IsError || string(s.Result.StructuredContent) != `{"removed":"/tmp/ts"}` {
				t.Fatalf("with elicitation: %+v", s)
			}
			if len(s.Asked) != 1 || !strings.HasPrefix(s.Asked[0].Message, "Delete /tmp/ts?") || s.Asked[0].RequestedSchema["type"] != "object" {
				t.Fatalf("the client was asked %+v", s.Asked)
			}
			s = call("none")
			all := string(s.Result.StructuredContent)
			for _, c := range s.Result.Content {
				all += c.Text
			}
			if !s.Result.IsError || !strings.Contains(all, `"code":"input_required"`) || !strings.Contains(all, "Delete /tmp/ts?") {
				t.Fatalf("without elicitation: %+v, want an input_required isError result", s)
			}
		})
	}
}

// elicitBridged: server-everything, bridged onto the
// mesh, elicits in trigger-elicitation-request. A mesh caller (`toolmesh
// call --answer`) answers it; and end to end, the official TypeScript
// client's elicitation handler answers it through toolmesh mcp → mesh →
// bridge → server-everything and back.
func elicitBridged(t *testing.T, dir string) {
	_, url := startDev(t)
	bridgeEverything(t, dir, url, ", client_capabilities: [elicitation]")
	const tool = "everything.trigger-elicitation-request"
	var r result
	waitFor(t, tool+" on the mesh", func() bool {
		r = runCmd(t, "", "call", tool, "--server", url, "--answer", `{"name":"Ann Mesh","check":true}`)
		return r.code == 0
	})
	if !strings.Contains(r.stdout, "Name: Ann Mesh") || !strings.Contains(r.stdout, "Agreed to terms: true") {
		t.Fatalf("a mesh caller's answer did not reach server-everything: %+v", r)
	}
	r = runCmd(t, "", "call", tool, "--server", url, "--answer", "decline")
	if r.code != 0 || !strings.Contains(r.stdout, "declined") {
		t.Fatalf("a mesh caller's decline: %+v", r)
	}
	p := startProc(t, "mcp", "--server", url, "--http", "127.0.0.1:0")
	endpoint := p.waitLine(t, regexp.MustCompile(`serving MCP on (http://\S+)`))[1]
	for name, transport := range map[string][]string{"stdio": {"stdio", toolmeshBin(t), url}, "http": {"http", endpoint}} {
		t.Run(name, func(t *testing.T) {
			s := runElicitClient(t, dir, append([]string{"elicit", tool, `{}`, `{"name":"Ann TypeScript","check":false}`}, transport...)...)
			var text string
			for _, c := range s.Result.Content {
				text += c.Text
			}
			if s.Thrown != "" || s.Result.IsError || !strings.Contains(text+string(s.Result.StructuredContent), "Name: Ann TypeScript") {
				t.Fatalf("end to end: %+v", s)
			}
			if len(s.Asked) != 1 || s.Asked[0].Message != "Please provide inputs for the following fields:" || s.Asked[0].RequestedSchema["properties"] == nil {
				t.Fatalf("the TypeScript client was asked %+v", s.Asked)
			}
		})
	}
}
