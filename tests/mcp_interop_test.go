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
