package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
)

// Defects once found in what the toolmesh command reports, each checked
// against the built binary and a real `toolmesh dev` mesh.

// An echo result with a member named success (or id) is a successful
// call: it arrives whole under "result" and the command exits 0.
func TestCommandResultCollision(t *testing.T) {
	_, url := startDev(t)
	for _, args := range []string{`{"message":"m","success":"yes"}`, `{"message":"m","id":"mine"}`} {
		r := runCmd(t, "", "call", "echo", "--server", url, "--args", args)
		var resp struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &resp) != nil || !resp.Success || string(resp.Result) != args {
			t.Errorf("echo %s: want exit 0 and the result whole: %+v", args, r)
		}
	}
}

// `toolmesh version` prints what --version prints, and the MCP gateway's
// serverInfo.version is the binary's version, not the literal "toolmesh".
func TestCommandVersionEverywhere(t *testing.T) {
	flag, sub := runCmd(t, "", "--version"), runCmd(t, "", "version")
	if sub.code != 0 || sub.stdout != flag.stdout || !strings.HasPrefix(sub.stdout, "toolmesh version ") {
		t.Fatalf("version printed %+v, --version %+v", sub, flag)
	}
	modVersion := strings.Fields(sub.stdout)[2] // toolmesh version <module version> commit …
	_, url := startDev(t)
	mc := connectMCP(t, &mcp.CommandTransport{Command: exec.Command(toolmeshBin(t), "mcp", "--server", url)}, protocolVersions[0])
	info := mc.cs.InitializeResult().ServerInfo
	if info == nil || info.Version == "toolmesh" || !strings.HasPrefix(info.Version, modVersion) {
		t.Fatalf("serverInfo %+v, want a version starting %q", info, modVersion)
	}
}

// A CLI tool that maps its exit code to invalid_input keeps its own fix
// through `toolmesh call` (not the command's usage fix, and no pointer to
// violations it does not have), and pretty mode prints the stderr tail
// the Problem carries.
func TestCommandKeepsTheToolsFixAndShowsStderr(t *testing.T) {
	_, url := startDev(t)
	tools := filepath.Join(t.TempDir(), "tools.yaml")
	yaml := `tools:
  - name: picky
    binding: {cli: {cmd: sh, args: ["-c", "echo 'picky: --level must be 1-3' >&2; exit 3"], exit_code_map: {3: invalid_input}}}
`
	if err := os.WriteFile(tools, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc(t, "worker", "--config", tools, "--server", url)
	var r result
	testutil.WaitFor(t, "picky on the mesh", func() bool {
		r = runCmd(t, "", "call", "picky", "--server", url, "--format", "json")
		return r.code != 3 // tool_not_found until the worker has joined
	})
	p := stderrProblem(t, r.stderr)
	want := envelope.NewProblem(envelope.CodeInvalidInput, "").SuggestedFix.Description
	if p.Code != envelope.CodeInvalidInput || p.SuggestedFix == nil || p.SuggestedFix.Description != want {
		t.Fatalf("the tool's invalid_input reached the user as %s with fix %+v, want the fix it was sent with (%q)", p.Code, p.SuggestedFix, want)
	}
	r = runCmd(t, "", "call", "picky", "--server", url, "--format", "pretty")
	if !strings.Contains(r.stderr, "stderr (tail):\n    picky: --level must be 1-3\n") || strings.Contains(r.stderr, "violations") {
		t.Fatalf("pretty stderr %q: want the program's stderr tail under its heading", r.stderr)
	}
}

// catalogue is what `toolmesh tools list --format json` prints.
type catalogue struct {
	Tools []struct {
		Spec struct{ Name string } `json:"spec"`
	} `json:"tools"`
	Workers  int  `json:"workers"`
	Complete bool `json:"complete"`
}

func listTools(t *testing.T, url string) catalogue {
	t.Helper()
	r := runCmd(t, "", "tools", "list", "--server", url, "--json")
	var c catalogue
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &c) != nil {
		t.Fatalf("tools list: %+v", r)
	}
	return c
}

// A worker whose tools file fails to load after it has joined the mesh (an
// MCP server's command not on PATH: exit 78) leaves nothing behind: the catalogue stays
// complete with the one worker that serves. A tools file that only bridges
// MCP servers starts no empty worker of its own.
func TestCommandWorkerLeavesNoPhantom(t *testing.T) {
	_, url := startDev(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	yaml := "tools:\n  - name: fine\n    binding: {cli: {cmd: \"true\"}}\n  - namespace: gone\n    binding:\n      mcp: {command: no-such-program-on-path-21}\n"
	if err := os.WriteFile(bad, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCmd(t, "", "worker", "--config", bad, "--server", url); r.code != 78 {
		t.Fatalf("worker with a missing program: %+v, want exit 78", r)
	}
	if c := listTools(t, url); c.Workers != 1 || !c.Complete {
		t.Fatalf("after the failed worker: %d workers, complete %v; want the dev worker alone, complete", c.Workers, c.Complete)
	}

	bridgeOnly := filepath.Join(dir, "bridge.yaml")
	yaml = fmt.Sprintf("tools:\n  - namespace: fake\n    binding:\n      mcp: {command: %q}\n", mcpServerBin(t))
	if err := os.WriteFile(bridgeOnly, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc(t, "worker", "--config", bridgeOnly, "--server", url)
	var c catalogue
	testutil.WaitFor(t, "the bridged tools in the catalogue", func() bool {
		c = listTools(t, url)
		return c.Complete && len(c.Tools) > 4
	})
	if c.Workers != 2 {
		t.Fatalf("dev and a bridge-only tools file: %d workers, want 2 (the dev worker and the bridge's)", c.Workers)
	}
}
