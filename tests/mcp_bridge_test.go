package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// mcpServerBin builds the go-sdk test server of internal/mcp/bridge/testdata.
var mcpServerBin = builtOnce("../internal/mcp/bridge/testdata/mcpserver", "mcpserver")

// startBridge bridges entry onto a fresh mesh and returns a caller on it.
func startBridge(t *testing.T, entry bridge.Entry) (*bridge.Bridge, *caller.Caller) {
	t.Helper()
	srv := meshtest.StartServer(t, embedded.Config{})
	return bridgeOn(t, srv, entry), meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
}

// bridgeOn bridges entry onto srv, quietly, draining it when the test ends.
func bridgeOn(t *testing.T, srv *embedded.Server, entry bridge.Entry) *bridge.Bridge {
	t.Helper()
	b, err := bridge.Start(context.Background(), meshtest.Connect(t, srv), bridge.Config{Entry: entry,
		Worker: worker.Config{Logger: meshtest.Quiet()}, Logger: meshtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Drain(context.Background()) })
	return b
}

// callBridged calls a bridged tool and returns its structuredContent, or
// the whole MCP result when it has none (TestMCPContentRoundTrip checks
// the content blocks beside it).
func callBridged(t *testing.T, c *caller.Caller, tool string, args any) (string, *envelope.Problem) {
	t.Helper()
	resp, err := c.Call(context.Background(), tool, args)
	if err != nil {
		return "", err.(*envelope.Problem)
	}
	b, _ := json.Marshal(resp.Data)
	return structuredOf(b), nil
}

// structuredOf is an MCP result's structuredContent, or the result itself
// when it has none.
func structuredOf(result []byte) string {
	var r struct {
		SC json.RawMessage `json:"structuredContent"`
	}
	if json.Unmarshal(result, &r) == nil && r.SC != nil {
		return string(r.SC)
	}
	return string(result)
}

func TestMCPBridgeStdio(t *testing.T) {
	entry := bridge.Entry{Namespace: "t", InheritEnv: []string{"PATH"},
		Server: bridge.ServerConfig{Command: mcpServerBin(t), Env: map[string]string{"TESTSERVER_GREETING": "hello"}}}
	b, c := startBridge(t, entry)
	t.Run("tools", func(t *testing.T) {
		cat, err := c.Catalog().List(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range cat.Tools {
			names = append(names, tl.Spec.Name)
		}
		for _, want := range []string{"t.echo", "t.count", "t.block", "t.crash", "t.text", "t.fail"} {
			if !slices.Contains(names, want) {
				t.Fatalf("catalogue %v lacks %s", names, want)
			}
		}
		spec, _ := c.Catalog().Describe(context.Background(), "t.echo")
		if !spec.Annotations.IsReadOnly() || !strings.Contains(string(spec.InputSchema), `"message"`) {
			t.Fatalf("t.echo spec lost its schema or hints: %+v", spec)
		}
	})
	t.Run("call", func(t *testing.T) { checkBridgeCalls(t, c) })
	t.Run("progress", func(t *testing.T) { checkBridgeProgress(t, c) })
	t.Run("cancel", func(t *testing.T) { checkBridgeCancel(t, c) })
	t.Run("list_changed", func(t *testing.T) {
		if _, p := callBridged(t, c, "t.add_tool", nil); p != nil {
			t.Fatal(p)
		}
		testutil.WaitFor(t, "t.extra on the mesh", func() bool { return slices.Contains(b.Tools(), "t.extra") })
		if got, p := callBridged(t, c, "t.extra", nil); p != nil || got != `{"extra":true}` {
			t.Fatalf("t.extra = %s %v", got, p)
		}
	})
	t.Run("crash", func(t *testing.T) {
		before := serverPID(t, c)
		checkBridgeCrash(t, c)
		if after := serverPID(t, c); after == before {
			t.Fatalf("the server answering after the crash is still pid %d", before)
		}
	})
	t.Run("drain", func(t *testing.T) {
		pid := serverPID(t, c)
		if err := b.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			t.Fatalf("the server (pid %d) outlived the drain: kill -0 says %v", pid, err)
		}
		_, p := callBridged(t, c, "t.echo", map[string]string{"message": "x"})
		if p == nil || p.Code != envelope.CodeToolNotFound {
			t.Fatalf("after drain: %v, want tool_not_found", p)
		}
	})
}

// serverPID asks the bridged test server for its process id.
func serverPID(t *testing.T, c *caller.Caller) int {
	t.Helper()
	resp, err := c.Call(context.Background(), "t.pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ PID int }
	b, _ := json.Marshal(resp.Data)
	if err := json.Unmarshal([]byte(structuredOf(b)), &v); err != nil || v.PID == 0 {
		t.Fatalf("t.pid = %s", b)
	}
	return v.PID
}

func checkBridgeCalls(t *testing.T, c *caller.Caller) {
	cases := []struct {
		tool, want string
		args       any
	}{
		{"t.echo", `{"message":"hi"}`, map[string]string{"message": "hi"}},
		{"t.text", `{"content":[{"type":"text","text":"plain hello"}]}`, nil},
	}
	for _, cs := range cases {
		if got, p := callBridged(t, c, cs.tool, cs.args); p != nil || got != cs.want {
			t.Errorf("%s = %s %v, want %s", cs.tool, got, p, cs.want)
		}
	}
	_, p := callBridged(t, c, "t.fail", nil)
	if p == nil || p.Code != envelope.CodeToolFailed || !strings.Contains(p.Detail, "disk full") {
		t.Fatalf("t.fail = %v, want tool_failed with the tool's text", p)
	}
}

func checkBridgeProgress(t *testing.T, c *caller.Caller) {
	st, err := c.Stream(context.Background(), "t.count", map[string]int{"n": 3})
	if err != nil {
		t.Fatal(err)
	}
	var pcts []float64
	var result string
	eachEvent(t, st, func(ev envelope.ToolEvent) {
		switch ev.Type {
		case envelope.EventProgress:
			pcts = append(pcts, *ev.Pct)
		case envelope.EventResult:
			result = structuredOf(ev.Data)
		case envelope.EventError:
			t.Fatal(ev.Problem())
		}
	})
	if result != `{"count":3}` {
		t.Fatalf("result = %s", result)
	}
	if len(pcts) != 3 || pcts[2] != 100 || !slices.IsSorted(pcts) {
		t.Fatalf("progress = %v, want 3 rising to 100", pcts)
	}
}

// blockUntilReached starts t.block and returns once the MCP server's
// handler has reported it is running.
func blockUntilReached(t *testing.T, ctx context.Context, c *caller.Caller) *caller.Stream {
	t.Helper()
	st, err := c.Stream(ctx, "t.block", nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := st.Next()
		if err != nil || ev.IsTerminal() {
			t.Fatalf("t.block ended early: %v %+v", err, ev)
		}
		if ev.Type == envelope.EventProgress {
			return st
		}
	}
}

func checkBridgeCancel(t *testing.T, c *caller.Caller) {
	ctx, cancel := context.WithCancel(context.Background())
	st := blockUntilReached(t, ctx, c)
	cancel()
	_, err := st.Response()
	if p, ok := err.(*envelope.Problem); !ok || p.Code != envelope.CodeCancelled {
		t.Fatalf("cancelled call ended with %v", err)
	}
	testutil.WaitFor(t, "the MCP server's handler to see its context end", func() bool {
		got, p := callBridged(t, c, "t.cancelled", nil)
		return p == nil && got != `{"cancelled":0}`
	})
}

func checkBridgeCrash(t *testing.T, c *caller.Caller) {
	st := blockUntilReached(t, context.Background(), c)
	_, p := callBridged(t, c, "t.crash", nil)
	if p == nil || p.Code != envelope.CodeWorkerLost || p.RetryAfter == nil {
		t.Fatalf("the crashing call got %v, want worker_lost with retry_after", p)
	}
	_, err := st.Response()
	if p, ok := err.(*envelope.Problem); !ok || p.Code != envelope.CodeWorkerLost || !strings.Contains(p.Detail, "in flight") {
		t.Fatalf("the call in flight got %v, want worker_lost naming the exit", err)
	}
	testutil.WaitFor(t, "the restarted server to answer", func() bool {
		got, p := callBridged(t, c, "t.echo", map[string]string{"message": "again"})
		return p == nil && got == `{"message":"again"}`
	})
}

func TestMCPBridgeHTTP(t *testing.T) {
	p := startExec(t, mcpServerBin(t), "-http", "127.0.0.1:0")
	url := p.waitLine(t, regexp.MustCompile(`listening on (http://\S+)`))[1]
	entry := bridge.Entry{Namespace: "h", Server: bridge.ServerConfig{URL: url, Headers: map[string]string{"X-Test-Key": "k1"}}}
	_, c := startBridge(t, entry)
	if got, p := callBridged(t, c, "h.echo", map[string]string{"message": "over http"}); p != nil || got != `{"message":"over http"}` {
		t.Fatalf("h.echo = %s %v", got, p)
	}
	st, err := c.Stream(context.Background(), "h.count", map[string]int{"n": 2})
	if err != nil {
		t.Fatal(err)
	}
	progress := 0
	for ev := range st.Events() {
		if ev.Type == envelope.EventProgress {
			progress++
		}
	}
	if progress != 2 {
		t.Fatalf("progress events over HTTP = %d, want 2", progress)
	}
	// The server goes away: calls get a transient Problem that does not
	// name the URL, and the bridge reconnects once it is back.
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	_, prob := callBridged(t, c, "h.echo", map[string]string{"message": "down"})
	if prob == nil || prob.Code != envelope.CodeWorkerLost || prob.RetryAfter == nil || strings.Contains(prob.Detail, url) {
		t.Fatalf("a call while the server is down got %v, want worker_lost with retry_after and no URL", prob)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	startExec(t, mcpServerBin(t), "-http", addr).waitLine(t, regexp.MustCompile(`listening on`))
	testutil.WaitFor(t, "the bridge to reconnect", func() bool {
		got, p := callBridged(t, c, "h.echo", map[string]string{"message": "back"})
		return p == nil && got == `{"message":"back"}`
	})
	_, bad := bridge.Start(context.Background(), meshtest.Connect(t, meshtest.StartServer(t, embedded.Config{})), bridge.Config{Logger: meshtest.Quiet(),
		Entry: bridge.Entry{Namespace: "x", Server: bridge.ServerConfig{URL: url}}})
	if bad == nil {
		t.Fatal("a server refusing the bridge (no header) must fail Start")
	}
	_, bad = bridge.Start(context.Background(), meshtest.Connect(t, meshtest.StartServer(t, embedded.Config{})), bridge.Config{Logger: meshtest.Quiet(),
		Entry: bridge.Entry{Namespace: "x", Server: bridge.ServerConfig{URL: url + "?token=hunter2", Headers: map[string]string{"X-Api-Key": "hunter3"}}}})
	if bad == nil || strings.Contains(bad.Error(), "hunter2") || strings.Contains(bad.Error(), "hunter3") {
		t.Fatalf("Start with a secret in the binding: %v (must fail, without the secret)", bad)
	}
}

// TestMCPBridgeCommand binds the test server in a tools file beside a
// CLI tool and calls it with `toolmesh call` through `toolmesh dev`.
func TestMCPBridgeCommand(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.yaml")
	yaml := fmt.Sprintf(`tools:
  - name: sys.hello
    binding: {cli: {cmd: printf, args: ['{"hello":true}']}}
  - namespace: t
    binding:
      mcp: {command: %q, env: {TESTSERVER_GREETING: from-the-tools-file}}
`, mcpServerBin(t))
	if err := os.WriteFile(tools, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, url := startDev(t, "--config", tools)
	cases := []struct{ tool, want string }{
		{"sys.hello", `"hello":true`},
		{"t.text", `"text":"plain from-the-tools-file"`},
	}
	for _, c := range cases {
		r := runCmd(t, "", "call", c.tool, "--server", url)
		if r.code != 0 || !strings.Contains(r.stdout, c.want) {
			t.Fatalf("call %s: %+v", c.tool, r)
		}
	}
	if code := dev.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("dev with a bridged server exited %d on SIGTERM", code)
	}
}

// farViaGateway bridges the test MCP server as namespace "far" onto a
// fresh mesh and returns a go-sdk client of an in-process gateway on it:
// client → gateway → mesh → bridge → server.
func farViaGateway(t *testing.T) *mcpClient {
	t.Helper()
	srv := meshtest.StartServer(t, embedded.Config{})
	bridgeOn(t, srv, bridge.Entry{Namespace: "far", Server: bridge.ServerConfig{Command: mcpServerBin(t)}})
	g := startGateway(t, &mcpMesh{srv: srv})
	return connectInProcess(t, g, "")
}

// TestMCPBothWays chains the two directions: a go-sdk client calls, through
// the gateway and the mesh, a tool the bridge hosts from an MCP server.
// Progress travels back the whole way, and a cancel from the client ends
// the far server's handler.
func TestMCPBothWays(t *testing.T) {
	mc := farViaGateway(t)

	p := &mcp.CallToolParams{Name: "far.count", Arguments: map[string]any{"n": 2}}
	p.SetProgressToken("chain")
	res, err := mc.cs.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("far.count: %v %+v", err, res)
	}
	if got, _ := json.Marshal(res.StructuredContent); string(got) != `{"count":2}` {
		t.Fatalf("far.count = %s", got)
	}
	testutil.WaitFor(t, "progress from the far server", func() bool {
		mc.mu.Lock()
		defer mc.mu.Unlock()
		return len(mc.progress) == 2
	})

	ctx, cancel := context.WithCancel(context.Background())
	bp := &mcp.CallToolParams{Name: "far.block", Arguments: map[string]any{}}
	bp.SetProgressToken("block")
	errc := make(chan error, 1)
	go func() { _, err := mc.cs.CallTool(ctx, bp); errc <- err }()
	testutil.WaitFor(t, "far.block to reach the far server", func() bool {
		mc.mu.Lock()
		defer mc.mu.Unlock()
		return slices.ContainsFunc(mc.progress, func(n *mcp.ProgressNotificationParams) bool { return n.ProgressToken == "block" })
	})
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	testutil.WaitFor(t, "the far server's handler to see its context end", func() bool {
		res, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "far.cancelled", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			return false
		}
		got, _ := json.Marshal(res.StructuredContent)
		return string(got) == `{"cancelled":1}`
	})
}

// directSession connects a go-sdk client straight to the test MCP
// server, with no mesh between, closed when t ends.
func directSession(t *testing.T) *mcp.ClientSession {
	t.Helper()
	return clientSession(t, &mcp.CommandTransport{Command: exec.Command(mcpServerBin(t))}, nil, "")
}

// TestMCPContentRoundTrip calls the same tools of an MCP server directly
// and through the mesh (go-sdk client → gateway → mesh → bridge → server):
// content blocks of every kind, structuredContent, _meta and an isError
// result's blocks arrive unchanged.
func TestMCPContentRoundTrip(t *testing.T) {
	viaMesh := farViaGateway(t)
	direct := directSession(t)
	cases := []struct{ tool, args string }{
		{"blocks", `{}`}, {"text", `{}`}, {"echo", `{"message":"hi"}`}, {"fail_image", `{}`},
	}
	for _, c := range cases {
		want := callRaw(t, direct, c.tool, c.args)
		got := callRaw(t, viaMesh.cs, "far."+c.tool, c.args)
		// Each server names itself in the protocol's own _meta key.
		delete(want.Meta, "io.modelcontextprotocol/serverInfo")
		delete(got.Meta, "io.modelcontextprotocol/serverInfo")
		w, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if string(w) != string(gj) {
			t.Errorf("%s through the mesh:\n got %s\nwant %s", c.tool, gj, w)
		}
	}
}

// callRaw calls tool and returns its result.
func callRaw(t *testing.T, cs *mcp.ClientSession, tool, args string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// tenantGateway serves c's view of the mesh through an MCP gateway and
// connects a go-sdk client to it.
func tenantGateway(t *testing.T, c *caller.Caller) *mcp.ClientSession {
	t.Helper()
	g := runGateway(t, gateway.Config{Caller: c})
	return inMemorySession(t, g.Server(), nil, "2025-11-25")
}

// Under deploy/secure as shipped, `toolmesh worker --pool fs` bridges an
// MCP server as the files pool's user: the bridge's worker subscribes the
// pool's control subjects, so it serves instead of exiting 78. Its tools
// and its resources (the fs._mcp.* surface tools) are callable by bob,
// whose permissions allow fs.*, and by no one else: alice is refused on
// the mesh and her MCP gateway neither lists nor reads them.
func TestSecureBridgeRunsInAPool(t *testing.T) {
	m := startSecure(t)
	tools := filepath.Join(t.TempDir(), "bridge.yaml")
	yaml := fmt.Sprintf("tools:\n  - namespace: fs\n    binding:\n      mcp: {command: %q, args: [-files]}\n", mcpServerBin(t))
	if err := os.WriteFile(tools, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startProc(t, "worker", "--config", tools, "--pool", "fs", "--server", m.srv.ClientURL(),
		"--user", "files", "--password", m.passwords["files"])
	w.waitLine(t, regexp.MustCompile(`bridges ready`))

	ctx := context.Background()
	readme := map[string]string{"uri": "file:///notes/readme.txt"}
	bob, _ := m.tenantCaller(t, "bob")
	if got, p := callBridged(t, bob, "fs.echo", map[string]string{"message": "hi"}); p != nil || got != `{"message":"hi"}` {
		t.Fatalf("bob's call of the bridged fs.echo: %s %v", got, p)
	}
	if resp, err := bob.Call(ctx, "fs._mcp.resources_read", readme); err != nil || !strings.Contains(string(mustJSON(resp.Data)), "contents of file:///notes/readme.txt") {
		t.Fatalf("bob's read of the bridged server's resource: %v %v", resp, err)
	}
	alice, _ := m.tenantCaller(t, "alice")
	for _, tool := range []string{"fs._mcp.resources_read", "fs._mcp.resources_list", "fs.echo"} {
		_, err := alice.Call(ctx, tool, readme)
		wantCode(t, err, envelope.CodeForbidden)
	}

	bcs := tenantGateway(t, bob)
	waitFor(t, "bob's gateway to read the bridged resource", func() bool {
		res, err := bcs.ReadResource(ctx, &mcp.ReadResourceParams{URI: readme["uri"]})
		return err == nil && len(res.Contents) == 1 && strings.Contains(res.Contents[0].Text, "contents of")
	})
	acs := tenantGateway(t, alice)
	if res, err := acs.ListResources(ctx, nil); err != nil || len(res.Resources) != 0 {
		t.Fatalf("alice's gateway lists the files pool's resources: %v %v", res, err)
	}
	_, err := acs.ReadResource(ctx, &mcp.ReadResourceParams{URI: readme["uri"]})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || strings.Contains(err.Error(), "contents of") {
		t.Fatalf("alice's gateway read the files pool's resource: %v", err)
	}
	if got := serverReads(t, bob, "fs.reads"); !slices.Equal(got, []string{readme["uri"], readme["uri"]}) {
		t.Fatalf("the bridged server was sent reads %q; want bob's two only", got)
	}
	if code := w.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("the pooled bridge exited %d on SIGTERM", code)
	}
}
