package tests

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// mcpMesh is a mesh with a worker hosting the gateway tests' tools.
type mcpMesh struct {
	srv *embedded.Server
	// blockStarted and blockEnded report the block tool's handler
	// starting and seeing its context end.
	blockStarted, blockEnded chan struct{}
}

func startMCPMesh(t *testing.T) *mcpMesh {
	t.Helper()
	// JetStream holds the worker registry, so the catalogue can be complete.
	m := &mcpMesh{srv: meshtest.StartServer(t, embedded.Config{}),
		blockStarted: make(chan struct{}, 8), blockEnded: make(chan struct{}, 8)}
	w := meshtest.NewWorker(t, meshtest.Connect(t, m.srv), worker.Config{})
	obj := json.RawMessage(`{"type":"object"}`)
	tools := []struct {
		spec envelope.ToolSpec
		h    worker.HandlerFunc
	}{
		{envelope.ToolSpec{Name: "echo", Title: "Echo", Description: "returns its args", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`),
			Annotations: &envelope.Annotations{ReadOnly: ptr(true)}},
			func(_ context.Context, r *worker.Request, _ worker.Emitter) (any, error) { return r.Args, nil }},
		{envelope.ToolSpec{Name: "count", InputSchema: obj, Streaming: true}, mcpCount},
		{envelope.ToolSpec{Name: "block", InputSchema: obj}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
			m.blockStarted <- struct{}{}
			<-ctx.Done()
			m.blockEnded <- struct{}{}
			return nil, ctx.Err()
		}},
		{envelope.ToolSpec{Name: "fail", InputSchema: obj}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
			return nil, envelope.NewProblem(envelope.CodeInvalidInput, "path must be absolute")
		}},
		{envelope.ToolSpec{Name: "whoami", InputSchema: obj}, func(_ context.Context, r *worker.Request, _ worker.Emitter) (any, error) {
			return map[string]string{"bearer": r.Bearer}, nil
		}},
		{envelope.ToolSpec{Name: "secret.delete", InputSchema: obj}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
			return map[string]bool{"deleted": true}, nil
		}},
	}
	for _, tl := range tools {
		if err := w.Register(tl.spec, tl.h); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func ptr[T any](v T) *T { return &v }

// mcpCount streams n deltas, each followed by progress, and returns {"count":n}.
func mcpCount(_ context.Context, r *worker.Request, emit worker.Emitter) (any, error) {
	var a struct{ N int }
	_ = r.Bind(&a)
	for i := 1; i <= a.N; i++ {
		if err := emit.Delta(map[string]int{"i": i}); err != nil {
			return nil, err
		}
		if err := emit.Progress(float64(i)*100/float64(a.N), "counting"); err != nil {
			return nil, err
		}
	}
	return map[string]int{"count": a.N}, nil
}

// startGateway runs a gateway on the mesh that denies secret.*.
func startGateway(t *testing.T, m *mcpMesh) *gateway.Gateway {
	t.Helper()
	c := meshtest.NewCaller(t, meshtest.Connect(t, m.srv), caller.Config{})
	return runGateway(t, gateway.Config{Caller: c, Deny: []string{"secret.*"}})
}

// runGateway makes a gateway of cfg, syncs it with the mesh and runs it
// until the test ends. Unless cfg says otherwise it settles in 20ms,
// waits up to 2s for a catalogue and logs nowhere.
func runGateway(t testing.TB, cfg gateway.Config) *gateway.Gateway {
	t.Helper()
	cfg.Settle = cmp.Or(cfg.Settle, 20*time.Millisecond)
	cfg.CatalogWait = cmp.Or(cfg.CatalogWait, 2*time.Second)
	cfg.Logger = cmp.Or(cfg.Logger, meshtest.Quiet())
	g, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if err := g.Sync(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { defer close(done); _ = g.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return g
}

// mcpClient is a go-sdk client session plus what its handlers observed.
type mcpClient struct {
	cs          *mcp.ClientSession
	mu          sync.Mutex
	progress    []*mcp.ProgressNotificationParams
	listChanged chan struct{}
}

func newMCPClient() (*mcpClient, *mcp.ClientOptions) {
	mc := &mcpClient{listChanged: make(chan struct{}, 16)}
	return mc, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mc.mu.Lock()
			mc.progress = append(mc.progress, r.Params)
			mc.mu.Unlock()
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case mc.listChanged <- struct{}{}:
			default:
			}
		},
	}
}

// connectInProcess connects a go-sdk client to g over in-memory transports.
func connectInProcess(t *testing.T, g *gateway.Gateway, version string) *mcpClient {
	t.Helper()
	ct := serveInMemory(t, g.Server())
	return connectMCP(t, ct, version)
}

// inMemorySession serves s over in-memory transports and connects a go-sdk
// client with opts to it at protocol version ("" for the SDK's latest);
// both sessions close when tb ends.
func inMemorySession(tb testing.TB, s *mcp.Server, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	tb.Helper()
	return clientSession(tb, serveInMemory(tb, s), opts, version)
}

// clientSession connects a go-sdk client with opts over transport at
// protocol version ("" for the SDK's latest), closed when tb ends.
func clientSession(tb testing.TB, transport mcp.Transport, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	tb.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolmesh-test", Version: "0"}, opts).
		Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return cs
}

// serveInMemory serves s over in-memory transports, its session closed
// when tb ends, and returns the client's end.
func serveInMemory(tb testing.TB, s *mcp.Server) mcp.Transport {
	tb.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ss.Close() })
	return ct
}

// connectMCP connects a client over transport at protocol version (""
// for the SDK's latest, 2026-07-28).
func connectMCP(t *testing.T, transport mcp.Transport, version string) *mcpClient {
	t.Helper()
	mc, opts := newMCPClient()
	mc.cs = clientSession(t, transport, opts, version)
	return mc
}

// protocolVersions are the two revisions the gateway must serve.
var protocolVersions = []string{"2025-11-25", "2026-07-28"}

// gatewayPerVersion runs exerciseGateway at each protocol version, on a
// mesh of its own (the list_changed check kills a worker, which the
// registry remembers until its TTL, and the catalogue then honestly says
// it is incomplete), through the session connect opens to a gateway of
// that mesh, once the session is seen to have negotiated the version.
func gatewayPerVersion(t *testing.T, connect func(t *testing.T, m *mcpMesh, version string) *mcpClient) {
	for _, v := range protocolVersions {
		t.Run(v, func(t *testing.T) {
			m := startMCPMesh(t)
			mc := connect(t, m, v)
			if got := mc.cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			exerciseGateway(t, m, mc)
		})
	}
}

func TestMCPGatewayInProcess(t *testing.T) {
	t.Parallel()
	gatewayPerVersion(t, func(t *testing.T, m *mcpMesh, v string) *mcpClient {
		return connectInProcess(t, startGateway(t, m), v)
	})
}

func TestMCPGatewayHTTP(t *testing.T) {
	t.Parallel()
	gatewayPerVersion(t, func(t *testing.T, m *mcpMesh, v string) *mcpClient {
		hs := httptest.NewServer(startGateway(t, m).HTTPHandler(gateway.HTTPOptions{}))
		t.Cleanup(hs.Close)
		return connectMCP(t, &mcp.StreamableClientTransport{Endpoint: hs.URL}, v)
	})
}

// exerciseGateway runs every must-hold check through one client session.
func exerciseGateway(t *testing.T, m *mcpMesh, mc *mcpClient) {
	ctx := context.Background()
	t.Run("list", func(t *testing.T) { checkList(t, mc) })
	t.Run("call", func(t *testing.T) { checkCall(t, mc) })
	t.Run("problem", func(t *testing.T) { checkProblem(t, mc) })
	t.Run("denied", func(t *testing.T) {
		_, err := mc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "secret.delete", Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Fatalf("denied tool: want a JSON-RPC unknown tool error, got %v", err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		_, err := mc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
		if err == nil {
			t.Fatal("unknown tool: want a JSON-RPC error")
		}
	})
	t.Run("progress", func(t *testing.T) { checkProgress(t, mc) })
	t.Run("cancel", func(t *testing.T) { checkCancel(t, m, mc) })
	t.Run("list_changed", func(t *testing.T) { checkListChanged(t, m, mc) })
}

func toolNamesOf(t *testing.T, mc *mcpClient) []string {
	t.Helper()
	var names []string
	for tool, err := range mc.cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func checkList(t *testing.T, mc *mcpClient) {
	res, err := mc.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if res.Meta["io.toolmesh/complete"] != true {
		t.Fatalf("tools/list _meta = %v, want io.toolmesh/complete:true", res.Meta)
	}
	want := []string{"block", "count", "echo", "fail", "whoami"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools/list = %v, want %v (sorted, secret.* denied)", names, want)
	}
	echo := res.Tools[2]
	// Only the hints echo declared (read-only): no destructiveHint or
	// openWorldHint invented beside it.
	if echo.Title != "Echo" || echo.Annotations == nil || !echo.Annotations.ReadOnlyHint ||
		echo.Annotations.DestructiveHint != nil || echo.Annotations.OpenWorldHint != nil {
		t.Fatalf("echo's title/annotations not passed through as declared: %+v %+v", echo, echo.Annotations)
	}
	schema, _ := json.Marshal(echo.InputSchema)
	if !strings.Contains(string(schema), `"message"`) {
		t.Fatalf("echo's inputSchema lost: %s", schema)
	}
}

func checkCall(t *testing.T, mc *mcpClient) {
	res, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("echo failed: %+v", res.Content)
	}
	got, _ := json.Marshal(res.StructuredContent)
	if string(got) != `{"message":"hi"}` {
		t.Fatalf("structuredContent = %s", got)
	}
	if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != `{"message":"hi"}` {
		t.Fatalf("content is not the text of structuredContent: %+v", res.Content)
	}
}

func checkProblem(t *testing.T, mc *mcpClient) {
	res, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Fatal("a Problem must become isError:true")
	}
	b, _ := json.Marshal(res.StructuredContent)
	var p envelope.Problem
	if err := json.Unmarshal(b, &p); err != nil || p.Code != envelope.CodeInvalidInput || p.Detail != "path must be absolute" {
		t.Fatalf("structuredContent is not the problem+json: %s (%v)", b, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.HasPrefix(text, "invalid_input: path must be absolute") || strings.Contains(text, "\n") {
		t.Fatalf("text line = %q", text)
	}
}

func checkProgress(t *testing.T, mc *mcpClient) {
	mc.mu.Lock()
	mc.progress = nil
	mc.mu.Unlock()
	p := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"n": 3}}
	p.SetProgressToken("tok-1")
	res, err := mc.cs.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("count: %v %+v", err, res)
	}
	got, _ := json.Marshal(res.StructuredContent)
	if string(got) != `{"count":3}` {
		t.Fatalf("structuredContent = %s", got)
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.(*mcp.TextContent).Text)
	}
	if want := []string{`{"i":1}`, `{"i":2}`, `{"i":3}`, `{"count":3}`}; !slices.Equal(texts, want) {
		t.Fatalf("content = %q, want the deltas then the result", texts)
	}
	testutil.WaitFor(t, "6 progress notifications", func() bool {
		mc.mu.Lock()
		defer mc.mu.Unlock()
		return len(mc.progress) >= 6
	})
	mc.mu.Lock()
	defer mc.mu.Unlock()
	last := 0.0
	for _, n := range mc.progress {
		if n.ProgressToken != "tok-1" || n.Progress <= last {
			t.Fatalf("progress not monotonic or wrong token: %+v", mc.progress)
		}
		last = n.Progress
	}
	if !strings.Contains(mc.progress[0].Message, `delta {"i":1}`) || !strings.Contains(mc.progress[5].Message, "100% counting") {
		t.Fatalf("progress messages = %q / %q", mc.progress[0].Message, mc.progress[5].Message)
	}
}

func checkCancel(t *testing.T, m *mcpMesh, mc *mcpClient) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := mc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		errc <- err
	}()
	select {
	case <-m.blockStarted:
	case err := <-errc:
		t.Fatalf("the call to block ended before its handler started: %v", err)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	select {
	case <-m.blockEnded:
	case <-time.After(20 * time.Second):
		t.Fatal("the worker's handler never saw its context end")
	}
}

func checkListChanged(t *testing.T, m *mcpMesh, mc *mcpClient) {
	drain(mc.listChanged)
	nc, err := m.srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	w := meshtest.NewWorker(t, nc, worker.Config{})
	if err := w.Register(envelope.ToolSpec{Name: "late"}, worker.HandlerFunc(func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return map[string]bool{"late": true}, nil
	})); err != nil {
		t.Fatal(err)
	}
	waitListChanged(t, mc, "a worker joined")
	testutil.WaitFor(t, "late listed", func() bool { return slices.Contains(toolNamesOf(t, mc), "late") })
	res, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "late", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("late: %v %+v", err, res)
	}
	drain(mc.listChanged)
	killWorker(w, nc)
	waitListChanged(t, mc, "a worker was killed")
	testutil.WaitFor(t, "late unlisted", func() bool { return !slices.Contains(toolNamesOf(t, mc), "late") })
}

// killWorker takes a worker off the mesh abruptly: its connection closes.
func killWorker(w *worker.Worker, nc *nats.Conn) {
	nc.Close()
	w.Stop()
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func waitListChanged(t *testing.T, mc *mcpClient, why string) {
	t.Helper()
	select {
	case <-mc.listChanged:
	case <-time.After(20 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after %s", why)
	}
}

func TestMCPGatewayHTTPGuards(t *testing.T) {
	m := startMCPMesh(t)
	g := startGateway(t, m)
	hs := httptest.NewServer(g.HTTPHandler(gateway.HTTPOptions{Bearer: "s3cret", MaxBodyBytes: 4096}))
	t.Cleanup(hs.Close)
	post := func(origin, auth, body string) int {
		req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	cases := []struct {
		name, origin, auth, body string
		want                     int
	}{
		{"foreign origin", "https://evil.example", "Bearer s3cret", init, http.StatusForbidden},
		{"localhost origin", "http://localhost:3000", "Bearer s3cret", init, http.StatusOK},
		{"no bearer", "", "", init, http.StatusUnauthorized},
		{"wrong bearer", "", "Bearer nope", init, http.StatusUnauthorized},
		{"body too large", "", "Bearer s3cret", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 8192) + `"}}`, http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		if got := post(c.origin, c.auth, c.body); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	// The bearer a client presents reaches the tool as the call's bearer.
	hc := &http.Client{Transport: bearerRoundTripper{"s3cret"}}
	mc := connectMCP(t, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: hc}, "")
	res, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"bearer":"s3cret"}` {
		t.Fatalf("whoami = %s, want the client's bearer forwarded", b)
	}
}

// bearerRoundTripper adds a bearer to every request.
type bearerRoundTripper struct{ token string }

func (b bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPGatewayWire2026 checks on the wire what the 2026-07-28 revision
// adds and the go-sdk client hides: ttlMs and cacheScope on tools/list,
// resultType on tools/call, and server/discover without initialize.
func TestMCPGatewayWire2026(t *testing.T) {
	m := startMCPMesh(t)
	g := startGateway(t, m)
	hs := httptest.NewServer(g.HTTPHandler(gateway.HTTPOptions{}))
	t.Cleanup(hs.Close)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	cases := []struct {
		method, name, params string
		want                 []string
	}{
		{"server/discover", "", `{` + meta + `}`, []string{`"supportedVersions":["2026-07-28"`, `"tools":{"listChanged":true}`}},
		{"tools/list", "", `{` + meta + `}`, []string{`"ttlMs":0`, `"cacheScope":"public"`, `"name":"echo"`}},
		{"tools/call", "echo", `{"name":"echo","arguments":{"message":"w"},` + meta + `}`, []string{`"resultType":"complete"`, `"structuredContent":{"message":"w"}`}},
	}
	for i, c := range cases {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i+1, c.method, c.params)
		req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", c.method)
		if c.name != "" {
			req.Header.Set("Mcp-Name", c.name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		for _, w := range c.want {
			if !strings.Contains(string(got), w) {
				t.Errorf("%s: %d %s\nlacks %s", c.method, resp.StatusCode, got, w)
			}
		}
		if resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: a stateless answer carries a session id", c.method)
		}
	}
}

// TestMCPGatewayIncompleteCatalog: a worker in the mesh's registry that
// does not answer makes tools/list say the list is incomplete, naming it,
// while the tools the others host stay listed.
func TestMCPGatewayIncompleteCatalog(t *testing.T) {
	m := startMCPMesh(t)
	g := startGateway(t, m)
	mc := connectInProcess(t, g, "2025-11-25")
	js, err := jetstream.New(meshtest.Connect(t, m.srv))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), wire.Subjects{}.RegistryBucket())
	if err != nil {
		t.Fatal(err)
	}
	ghost, _ := json.Marshal(wire.Beacon{WorkerID: "GHOST", State: wire.BeaconUp, Revision: 1, IntervalMS: 1000})
	if _, err := kv.Put(context.Background(), "GHOST", ghost); err != nil {
		t.Fatal(err)
	}
	res := toolsListedWhen(t, mc.cs, "tools/list to report the silent worker", func(res *mcp.ListToolsResult) bool {
		return res.Meta["io.toolmesh/complete"] == false
	})
	warnings, _ := json.Marshal(res.Meta["io.toolmesh/scope_warnings"])
	if !strings.Contains(string(warnings), "GHOST") || len(res.Tools) != 5 {
		t.Fatalf("scope_warnings %s with %d tools: want GHOST named and the 5 tools listed", warnings, len(res.Tools))
	}
}

// TestMCPGatewayStreamCloseCancels: over 2026-07-28 HTTP, a client that
// closes the response stream of a tools/call cancels the mesh call, and
// the worker's handler sees its context end.
func TestMCPGatewayStreamCloseCancels(t *testing.T) {
	// The server is cleaned up last: were the call never cancelled, the
	// worker's stop must end it before Close waits for the request.
	var h http.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(hs.Close)
	m := startMCPMesh(t)
	h = startGateway(t, m).HTTPHandler(gateway.HTTPOptions{})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", hs.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "block")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
		}
		errc <- err
	}()
	<-m.blockStarted
	cancel()
	<-errc
	select {
	case <-m.blockEnded:
	case <-time.After(20 * time.Second):
		t.Fatal("closing the response stream did not end the worker's handler")
	}
}

// TestMCPGatewayProblemFitsTheOutputSchema: MCP clients check
// structuredContent against a tool's outputSchema even on isError (the
// official TypeScript SDK throws when it does not match), so a failing
// tool that declares one gets its problem+json as text instead.
func TestMCPGatewayProblemFitsTheOutputSchema(t *testing.T) {
	m := &mcpMesh{srv: meshtest.StartServer(t, embedded.Config{})}
	w := meshtest.NewWorker(t, meshtest.Connect(t, m.srv), worker.Config{})
	out := json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`)
	register(t, w, envelope.ToolSpec{Name: "typed", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: out},
		func(context.Context, *worker.Request, worker.Emitter) (any, error) {
			return nil, envelope.NewProblem(envelope.CodeInvalidInput, "n must be positive")
		})
	register(t, w, envelope.ToolSpec{Name: "untyped", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *worker.Request, worker.Emitter) (any, error) {
			return nil, envelope.NewProblem(envelope.CodeInvalidInput, "n must be positive")
		})
	g := startGateway(t, m)
	mc := connectInProcess(t, g, "2025-11-25")
	for _, c := range []struct {
		tool           string
		wantStructured bool
	}{{"typed", false}, {"untyped", true}} {
		res, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}})
		if err != nil || !res.IsError {
			t.Fatalf("%s: %v %+v", c.tool, err, res)
		}
		if (res.StructuredContent != nil) != c.wantStructured {
			t.Errorf("%s: structuredContent %v, want it present: %v", c.tool, res.StructuredContent, c.wantStructured)
		}
		var texts []string
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		all := strings.Join(texts, "\n")
		if !strings.Contains(all, "invalid_input: n must be positive") {
			t.Errorf("%s: no actionable line in %q", c.tool, all)
		}
		if !c.wantStructured && !strings.Contains(all, `"code":"invalid_input"`) {
			t.Errorf("%s: the problem+json is in neither structuredContent nor text: %q", c.tool, all)
		}
	}
}

// TestMCPGatewayClosesIdleSessions: a 2025-11-25 HTTP session whose client
// vanished without closing it is closed after SessionIdle, so abandoned
// sessions do not pile up; a request naming it then gets 404.
func TestMCPGatewayClosesIdleSessions(t *testing.T) {
	m := startMCPMesh(t)
	g := startGateway(t, m)
	hs := httptest.NewServer(g.HTTPHandler(gateway.HTTPOptions{SessionIdle: 50 * time.Millisecond}))
	t.Cleanup(hs.Close)
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, session)
	}
	// The client goes away without a DELETE; polling less often than the
	// idle limit (each request would refresh it) until the session is gone.
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	gone := false
	for i := 0; i < 200 && !gone; i++ {
		<-time.After(200 * time.Millisecond) // spacing requests, not a synchronisation guess
		gone = post(session, ping).StatusCode == http.StatusNotFound
	}
	if !gone {
		t.Fatal("an idle session was never closed")
	}
}

// TestMCPGatewayNamespace: with Namespace "secret" the gateway serves only
// secret.* tools, under their names without "secret.", and refuses every
// other tool, listed or not.
func TestMCPGatewayNamespace(t *testing.T) {
	m := startMCPMesh(t)
	c := meshtest.NewCaller(t, meshtest.Connect(t, m.srv), caller.Config{})
	g, err := gateway.New(gateway.Config{Caller: c, Namespace: "secret", CatalogWait: 2 * time.Second, Logger: meshtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := g.Tools(); !slices.Equal(got, []string{"delete"}) {
		t.Fatalf("served under namespace secret: %v, want [delete]", got)
	}
	mc := connectInProcess(t, g, "")
	res, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete", Arguments: map[string]any{}})
	if got, _ := json.Marshal(res.StructuredContent); err != nil || res.IsError || string(got) != `{"deleted":true}` {
		t.Fatalf("delete (secret.delete) = %s %v", got, err)
	}
	for _, name := range []string{"echo", "secret.delete"} {
		if _, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("%s outside the namespace's names: %v, want unknown tool", name, err)
		}
	}
	if _, err := gateway.New(gateway.Config{Caller: c, Namespace: "a b"}); err == nil {
		t.Error("an invalid namespace must be refused")
	}
}

// TestMCPGatewayCallsAToolNotYetListed: a worker that has just subscribed
// is callable before the registry, the catalogue or Watch list it. The
// gateway here synced on an empty mesh and never follows the fleet, so
// only asking the mesh at call time can find the tool; "unknown tool"
// for a tool that exists would send the agent elsewhere.
func TestMCPGatewayCallsAToolNotYetListed(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	g, err := gateway.New(gateway.Config{Caller: c, Deny: []string{"secret.*"}, CatalogWait: time.Second, Logger: meshtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
	obj := json.RawMessage(`{"type":"object"}`)
	register(t, w, envelope.ToolSpec{Name: "late.echo", InputSchema: obj}, echo)
	register(t, w, envelope.ToolSpec{Name: "secret.echo", InputSchema: obj}, echo)
	mc := connectInProcess(t, g, "2025-11-25")

	res, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "late.echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("late.echo: %v %+v", err, res)
	}
	if got, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(got), `"message":"hi"`) {
		t.Fatalf("late.echo = %s", got)
	}
	if !slices.Contains(g.Tools(), "late.echo") {
		t.Fatalf("late.echo called but not served: %v", g.Tools())
	}
	// A denied tool stays unknown even though a worker describes it.
	if _, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "secret.echo", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("secret.echo: %v, want unknown tool", err)
	}
	if _, err := mc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nobody.hosts", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("nobody.hosts: %v, want unknown tool", err)
	}
}
