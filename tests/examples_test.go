package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// buildExample builds examples/<name> and returns the binary's path.
func buildExample(t *testing.T, name string) string {
	t.Helper()
	bin, err := testutil.BuildBinary("../examples/"+name, "example-"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(bin)) })
	return bin
}

// exampleServer is a mesh's server listening on loopback, as `toolmesh
// dev` would run it, for example programs in processes of their own.
func exampleServer(t *testing.T) *embedded.Server {
	t.Helper()
	return meshtest.StartServer(t, embedded.Config{Listen: "127.0.0.1:0"})
}

// runExample runs bin to its end with env added, returning its stdout;
// a non-zero exit fails t with its stderr.
func runExample(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// The worker example serves on the URL its flag names; the caller example,
// finding the server through $NATS_URL, prints its stream's events in
// order; and the worker drains and exits 0 on SIGTERM.
func TestExampleWorkerAndCaller(t *testing.T) {
	workerBin, callerBin := buildExample(t, "worker"), buildExample(t, "caller")
	url := exampleServer(t).ClientURL()
	w := startExec(t, workerBin, "-server", url)
	w.waitLine(t, regexp.MustCompile(`^serving greet and count on `+regexp.QuoteMeta(url)+`$`))

	got := runExample(t, callerBin, []string{"NATS_URL=" + url})
	want := `greet: Hello, Ada
start
progress 0% counting 1 of 3
delta {"n":1}
progress 33% counting 2 of 3
delta {"n":2}
progress 66% counting 3 of 3
delta {"n":3}
result {"sum":6}
bad call: invalid_input exit code 2
`
	if got != want {
		t.Errorf("the caller printed:\n%s\nwant:\n%s", got, want)
	}
	if code := w.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("the worker exited %d after SIGTERM, want 0 (a drain)", code)
	}
}

// The meshtest example's own tests pass under go test, and its main
// serves the tool they test.
func TestExampleMeshtest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "../examples/meshtest").CombinedOutput()
	if err != nil {
		t.Fatalf("go test ./examples/meshtest: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestWordsCount ", "--- PASS: TestWordsCountRefusesBadInput "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("go test ./examples/meshtest did not print %q:\n%s", want, out)
		}
	}

	srv := exampleServer(t)
	w := startExec(t, buildExample(t, "meshtest"), "-server", srv.ClientURL())
	w.waitLine(t, regexp.MustCompile(`^serving words.count$`))
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	type counted struct {
		Words   int    `json:"words"`
		Longest string `json:"longest"`
	}
	got, err := caller.CallAs[counted](ctx, c, "words.count", map[string]string{"text": "a mesh of tools"})
	if err != nil || got != (counted{Words: 4, Longest: "tools"}) {
		t.Errorf("words.count: %+v, %v", got, err)
	}
}

// The dispatch example prints one OpenAI tool message per call of its
// canned model turn: the result of the good call, and the Problem text of
// the one whose argument the schema refuses.
func TestExampleDispatch(t *testing.T) {
	got := runExample(t, buildExample(t, "dispatch"), nil)
	want := `offered 1 tool(s): weather.current as weather_current
{"role":"tool","tool_call_id":"call_1","content":"{\"city\":\"Paris\",\"temp\":18,\"unit\":\"c\"}"}
{"role":"tool","tool_call_id":"call_2","content":"error invalid_input: args do not match the schema: /unit: value must be one of 'c', 'f'\nretry: no (not transient)\nfix: Correct the arguments so they satisfy the tool's input schema (see violations), then retry."}
`
	if got != want {
		t.Errorf("the dispatch example printed:\n%s\nwant:\n%s", got, want)
	}
}

// The CLI tools file loads with the worker's own loader, every tool is
// sandboxed, and lint has nothing to say: an example people copy shows
// no habit lint would warn about.
func TestExampleCLIToolsFile(t *testing.T) {
	f, err := cli.LoadFile("../examples/cli-tools/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, spec := range f.Specs() {
		names = append(names, spec.Name)
		if spec.Sandbox == nil {
			t.Errorf("%s runs unconfined; the example is of sandboxed tools", spec.Name)
		}
	}
	if strings.Join(names, " ") != "text.grep files.list" {
		t.Errorf("tools %v, want text.grep and files.list", names)
	}
	if warnings := cli.Lint(f); len(warnings) > 0 {
		t.Errorf("lint warns about the example:\n%s", strings.Join(warnings, "\n"))
	}
	if entries, err := bridge.LoadFile("../examples/cli-tools/tools.yaml"); err != nil || len(entries) != 0 {
		t.Errorf("the bridge's loader read %d MCP entries, %v; want none", len(entries), err)
	}
}

// The CLI tools file served by `toolmesh dev`: the sandboxed grep
// answers, and files.list refuses a path outside its root before ls runs.
func TestExampleCLIToolsServed(t *testing.T) {
	bin := filepath.Join(sandboxBins(t), "toolmesh")
	dev := startExec(t, bin, "dev", "--listen", "127.0.0.1:0", "--config", "../examples/cli-tools/tools.yaml")
	url := dev.waitLine(t, regexp.MustCompile(`listening on (nats://\S+)`))[1]
	grep := runBin(t, bin, "call", "text.grep", "--server", url, "--args", `{"pattern":"b","text":"a\nb\nc"}`)
	if grep.code != 0 || !strings.Contains(grep.stdout, `"lines":["b"]`) {
		t.Errorf("text.grep: %+v", grep)
	}
	out := runBin(t, bin, "call", "files.list", "--server", url, "--args", `{"dir":"../etc"}`)
	if out.code != 2 || !strings.Contains(out.stderr, `"code":"invalid_input"`) || !strings.Contains(out.stderr, "arg_rules.dir.under") {
		t.Errorf("files.list outside /usr/share: %+v", out)
	}
}

// The bridge file passes both loaders a worker runs on a tools file: the
// CLI loader (which leaves MCP entries to the bridge) and the bridge's.
func TestExampleMCPBridgeFile(t *testing.T) {
	const path = "../examples/mcp-bridge/bridge.yaml"
	f, err := cli.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Specs()) != 0 {
		t.Errorf("the CLI loader found %d CLI tools in a bridge-only file", len(f.Specs()))
	}
	entries, err := bridge.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Namespace != "fs" || entries[0].Server.Command != "npx" {
		t.Fatalf("bridge entries %+v, want one: fs, started with npx", entries)
	}
}

// Each MCP host configuration is JSON whose one server starts `toolmesh
// mcp` with a --server URL, in the shape its host reads; started as the
// host would start it (the URL pointed at a test mesh), it serves the
// mesh's tools over stdio.
func TestExampleMCPHostConfigs(t *testing.T) {
	m := startMCPMesh(t)
	for file, key := range map[string]string{
		"claude_desktop_config.json": "mcpServers",
		"cursor-mcp.json":            "mcpServers",
		"vscode-mcp.json":            "servers",
	} {
		data, err := os.ReadFile(filepath.Join("..", "examples", "mcp-hosts", file))
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		mesh, ok := cfg[key]["mesh"]
		if !ok {
			t.Errorf("%s: no %s.mesh", file, key)
			continue
		}
		if mesh.Command != "toolmesh" || len(mesh.Args) != 3 || mesh.Args[0] != "mcp" || mesh.Args[1] != "--server" ||
			!strings.HasPrefix(mesh.Args[2], "nats://") {
			t.Errorf("%s: runs %q %q, want toolmesh mcp --server nats://…", file, mesh.Command, mesh.Args)
		}
		if key == "servers" && mesh.Type != "stdio" {
			t.Errorf("%s: type %q, want stdio (VS Code's name for a command it starts)", file, mesh.Type)
		}
		args := append([]string{}, mesh.Args...)
		args[2] = m.srv.ClientURL()
		hostListsTools(t, file, exec.Command(toolmeshBin(t), args...))
	}
}

// hostListsTools runs cmd as an MCP host runs a stdio server and checks
// that tools/list holds the test mesh's echo tool.
func hostListsTools(t *testing.T, file string, cmd *exec.Cmd) {
	t.Helper()
	mc := connectMCP(t, &mcp.CommandTransport{Command: cmd}, protocolVersions[0])
	res, err := mc.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("%s: tools/list: %v", file, err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "echo" {
			return
		}
	}
	t.Errorf("%s: tools/list lacks the mesh's echo tool: %d tools", file, len(res.Tools))
}
