package tests

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// notesServer is a go-sdk MCP server (served over streamable HTTP) with a
// resource, a template and a prompt, which reports its subscriptions so a
// test can send updates and see unsubscribes.
type notesServer struct {
	srv                      *mcp.Server
	url                      string
	subscribed, unsubscribed chan string
}

func startNotesServer(t *testing.T, extraTool string) *notesServer {
	t.Helper()
	n := &notesServer{subscribed: make(chan string, 8), unsubscribed: make(chan string, 8)}
	n.srv = mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(_ context.Context, r *mcp.SubscribeRequest) error { n.subscribed <- r.Params.URI; return nil },
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error { n.unsubscribed <- r.Params.URI; return nil },
	})
	n.srv.AddResource(&mcp.Resource{URI: "mem://note", Name: "note", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "mem://note", MIMEType: "text/plain", Text: "remember the milk"}}}, nil
		})
	n.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://day/{n}", Name: "day"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "notes of " + r.Params.URI}}}, nil
		})
	n.srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Arguments["who"]}}}}, nil
		})
	if extraTool != "" {
		n.srv.AddTool(&mcp.Tool{Name: extraTool, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return n.srv }, nil))
	t.Cleanup(hs.Close)
	n.url = hs.URL
	return n
}

// surfaceMesh bridges the conformance fixture (namespace a, stdio) and a
// notes server (namespace b, HTTP) onto one mesh.
func surfaceMesh(t *testing.T) (*embedded.Server, *notesServer) {
	t.Helper()
	srv := meshtest.StartServer(t, embedded.Config{})
	notes := startNotesServer(t, "")
	for _, e := range []bridge.Entry{
		{Namespace: "a", Server: bridge.ServerConfig{Command: conformanceFixture(t)}},
		{Namespace: "b", Server: bridge.ServerConfig{URL: notes.url}},
	} {
		b, err := bridge.Start(context.Background(), meshtest.Connect(t, srv), bridge.Config{Entry: e,
			Worker: worker.Config{Logger: meshtest.Quiet()}, Logger: meshtest.Quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Drain(context.Background()) })
	}
	return srv, notes
}

// surfaceClient runs a gateway (namespace ns, "" for all) on srv and
// connects a go-sdk client to it; updates receives resource updates.
func surfaceClient(t *testing.T, srv *embedded.Server, ns string) (*mcp.ClientSession, chan string) {
	t.Helper()
	updates := make(chan string, 8)
	cs := gatewayClient(t, srv, ns, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updates <- r.Params.URI },
	})
	return cs, updates
}

// gatewayClient runs a gateway (namespace ns, "" for all) on srv and
// connects a go-sdk client with opts to it at 2025-11-25.
func gatewayClient(t testing.TB, srv *embedded.Server, ns string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return inMemorySession(t, namespaceGateway(t, srv, ns).Server(), opts, "2025-11-25")
}

// namespaceGateway runs a gateway (namespace ns, "" for all) on srv once
// the catalogue lists the namespace's tools.
func namespaceGateway(t testing.TB, srv *embedded.Server, ns string) *gateway.Gateway {
	t.Helper()
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	// The bridge's worker announces in the background: the gateway syncs
	// once its tools are listed, as it would after `toolmesh worker` said ready.
	waitFor(t, "the catalogue to list namespace "+ns, func() bool {
		cat, err := c.Catalog().List(context.Background(), time.Second)
		return err == nil && cat.Complete && slices.ContainsFunc(cat.Tools, func(ct catalog.Tool) bool {
			return ns == "" || strings.HasPrefix(ct.Spec.Name, ns+".")
		})
	})
	return runGateway(t, gateway.Config{Caller: c, Namespace: ns})
}

// TestMCPSurfaceAcrossNamespaces: two bridged servers' resources, prompts
// and completions reach one MCP client through toolmesh's gateway —
// URIs verbatim and each read routed to the server that listed it,
// prompts named "<namespace>.<prompt>" like tools — and a subscription
// carries the server's updates and ends at the server on unsubscribe.
func TestMCPSurfaceAcrossNamespaces(t *testing.T) {
	srv, notes := surfaceMesh(t)
	cs, updates := surfaceClient(t, srv, "")
	res := promptsListedWhen(t, cs, "both namespaces' prompts", func(res *mcp.ListPromptsResult) bool {
		return len(promptNames(res)) == 6
	})
	want := []string{"a.test_input_required_result_prompt", "a.test_prompt_with_arguments", "a.test_prompt_with_embedded_resource", "a.test_prompt_with_image", "a.test_simple_prompt", "b.greet"}
	if got := promptNames(res); !slices.Equal(got, want) {
		t.Fatalf("prompts/list = %v, want %v", got, want)
	}
	checkSurfaceResources(t, cs)
	checkSurfacePrompts(t, cs)
	checkSurfaceSubscription(t, cs, notes, updates)
}

func promptNames(res *mcp.ListPromptsResult) []string {
	var out []string
	for _, p := range res.Prompts {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func checkSurfaceResources(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	if want := []string{"mem://note", "test://static-binary", "test://static-text", "test://watched-resource"}; !slices.Equal(uris, want) {
		t.Fatalf("resources/list URIs = %v, want %v", uris, want)
	}
	for uri, want := range map[string]string{
		"mem://note": "remember the milk", "test://static-text": "This is the content of the static text resource.",
		"mem://day/7": "notes of mem://day/7", "test://template/42/data": `"id":"42"`,
	} {
		got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(got.Contents) != 1 || !strings.Contains(got.Contents[0].Text, want) {
			t.Errorf("resources/read %s = %v %v, want text containing %q", uri, got, err, want)
		}
	}
	bin, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
	if err != nil || len(bin.Contents) != 1 || bin.Contents[0].MIMEType != "image/png" || len(bin.Contents[0].Blob) == 0 {
		t.Errorf("the binary resource through the mesh = %v %v, want its PNG blob", bin, err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "nowhere://x"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(string(je.Data), `"uri":"nowhere://x"`) {
		t.Errorf("resources/read of a URI no server offers: %v, want JSON-RPC -32602 with the URI in its data (SEP-2164)", err)
	}
}

func checkSurfacePrompts(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b.greet", Arguments: map[string]string{"who": "mesh"}})
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "hello mesh" {
		t.Errorf("prompts/get b.greet = %v %v, want 'hello mesh'", got, err)
	}
	img, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "a.test_prompt_with_image"})
	if err != nil || len(img.Messages) != 2 {
		t.Fatalf("prompts/get a.test_prompt_with_image = %v %v", img, err)
	}
	if im, ok := img.Messages[0].Content.(*mcp.ImageContent); !ok || im.MIMEType != "image/png" {
		t.Errorf("the prompt's image through the mesh = %#v, want an image/png block", img.Messages[0].Content)
	}
	for _, name := range []string{"greet", "c.greet", "a."} {
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name}); err == nil {
			t.Errorf("prompts/get %q must fail: no namespace offers it under that name", name)
		}
	}
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "a.test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "t"}})
	if err != nil || comp.Completion.Values == nil {
		t.Errorf("completion/complete through the mesh = %v %v, want the server's (empty) values", comp, err)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "b.greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "m"}}); err == nil {
		t.Error("completion/complete for b, whose server offers no completions, must fail")
	}
}

func checkSurfaceSubscription(t *testing.T, cs *mcp.ClientSession, notes *notesServer, updates chan string) {
	t.Helper()
	ctx := context.Background()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://note"}); err != nil {
		t.Fatal(err)
	}
	if got := <-notes.subscribed; got != "mem://note" {
		t.Fatalf("the server was subscribed to %q, want mem://note", got)
	}
	if err := notes.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "mem://note"}); err != nil {
		t.Fatal(err)
	}
	if got := <-updates; got != "mem://note" {
		t.Fatalf("the client was told %q was updated, want mem://note", got)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://note"}); err != nil {
		t.Fatal(err)
	}
	if got := <-notes.unsubscribed; got != "mem://note" {
		t.Fatalf("the server was unsubscribed from %q, want mem://note", got)
	}
}

// TestMCPSurfaceNamespace: `--namespace a` serves a's prompts under their
// own names and only a's resources, as if the client spoke to the server.
func TestMCPSurfaceNamespace(t *testing.T) {
	srv, _ := surfaceMesh(t)
	cs, _ := surfaceClient(t, srv, "a")
	ctx := context.Background()
	res := promptsListedWhen(t, cs, "a's prompts", func(res *mcp.ListPromptsResult) bool {
		return len(res.Prompts) == 5
	})
	if got := promptNames(res); got[0] != "test_input_required_result_prompt" || got[1] != "test_prompt_with_arguments" {
		t.Fatalf("prompts under --namespace a = %v, want the server's own names", got)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "x1", "arg2": "x2"}})
	if err != nil || !strings.Contains(got.Messages[0].Content.(*mcp.TextContent).Text, "arg1='x1'") {
		t.Fatalf("prompts/get under --namespace = %v %v", got, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://note"}); err == nil {
		t.Error("b's resource must not be readable through --namespace a")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if strings.Contains(tl.Name, wire.MCPSurfaceSegment) {
			t.Errorf("tools/list serves the surface tool %s as a tool", tl.Name)
		}
	}
}

// TestMCPSurfaceOnTheMesh: the surface ops are mesh tools a caller can
// call; a server's own tool in the reserved _mcp. segment fails the
// bridge's start, naming it.
func TestMCPSurfaceOnTheMesh(t *testing.T) {
	notes := startNotesServer(t, "")
	_, c := startBridge(t, bridge.Entry{Namespace: "n", Server: bridge.ServerConfig{URL: notes.url}})
	resp, err := c.Call(context.Background(), "n._mcp.resources_read", map[string]string{"uri": "mem://note"})
	if err != nil || !strings.Contains(string(resp.Data), "remember the milk") {
		t.Fatalf("n._mcp.resources_read = %s %v", resp.Data, err)
	}
	_, err = c.Call(context.Background(), "n._mcp.resources_read", map[string]string{"url": "mem://note"})
	if p, ok := err.(*envelope.Problem); !ok || p.Code != envelope.CodeInvalidInput {
		t.Fatalf("resources_read without uri: %v, want invalid_input", err)
	}
	sneaky := startNotesServer(t, "_mcp.resources_read")
	_, err = bridge.Start(context.Background(), meshtest.Connect(t, meshtest.StartServer(t, embedded.Config{})), bridge.Config{
		Logger: meshtest.Quiet(), Entry: bridge.Entry{Namespace: "s", Server: bridge.ServerConfig{URL: sneaky.url}}})
	if err == nil || !strings.Contains(err.Error(), `"_mcp.resources_read"`) {
		t.Fatalf("a server tool in the reserved segment: Start = %v, want a failure naming it", err)
	}
}

// The reads that must reach no server: ".." segments, written plainly or
// percent-encoded, and URIs no server offers.
var (
	dotDotURIs  = []string{"file:///notes/../../etc/passwd", "file:///%2e%2e/etc/passwd", "file:///notes/%2E%2e/x", "file://../etc/passwd"}
	unownedURIs = []string{"https://example.com/secret", "test://static-text-nope"}
)

// serverReads is every URI a resources/read brought the -files server.
func serverReads(t *testing.T, c *caller.Caller, tool string) []string {
	t.Helper()
	resp, err := c.Call(context.Background(), tool, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Reads []string `json:"reads"`
	}
	b, _ := json.Marshal(resp.Data)
	if err := json.Unmarshal([]byte(structuredOf(b)), &got); err != nil {
		t.Fatal(err)
	}
	return got.Reads
}

// A bridged server with a catch-all template (file:///{+path}) is sent a
// read only of what it listed or its template matches after
// normalisation; ".." URIs are refused (invalid_input, ran "no") before
// it sees them, on the mesh and through the gateway, and a URI nobody
// offers is MCP's resource-not-found (SEP-2164) without reaching it.
func TestMCPResourceReadsGoOnlyWhereTheyBelong(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	bridgeOn(t, srv, bridge.Entry{Namespace: "files", Server: bridge.ServerConfig{Command: mcpServerBin(t), Args: []string{"-files"}}})
	bridgeOn(t, srv, bridge.Entry{Namespace: "conf", Server: bridge.ServerConfig{Command: conformanceFixture(t)}})
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	read := func(uri string) (string, error) {
		resp, err := c.Call(context.Background(), "files._mcp.resources_read", map[string]string{"uri": uri})
		if err != nil {
			return "", err
		}
		b, _ := json.Marshal(resp.Data)
		return string(b), nil
	}
	for _, r := range []struct{ uri, want string }{ // in order: the server's log is checked in order below
		{"file:///notes/readme.txt", "contents of file:///notes/readme.txt"},
		{"FILE:///notes/%72eadme.txt", "contents of file:///notes/readme.txt"}, // the listed URI, however spelt
		{"file:///srv/%7Eshared.txt", "contents of file:///srv/~shared.txt"},   // the template's, in normal form
	} {
		uri, want := r.uri, r.want
		got, err := read(uri)
		if err != nil || !strings.Contains(got, want) {
			t.Fatalf("read %s on the mesh: %s, %v; want %q", uri, got, err, want)
		}
	}
	for _, uri := range append(slices.Clone(dotDotURIs), unownedURIs...) {
		_, err := read(uri)
		if p := wantCode(t, err, envelope.CodeInvalidInput); p.Ran() != envelope.RanNo {
			t.Fatalf("read %s: %v; want ran no", uri, p)
		}
	}
	cs := gatewayClient(t, srv, "", nil)
	if res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///notes/readme.txt"}); err != nil || len(res.Contents) != 1 {
		t.Fatalf("read through the gateway: %v, %v", res, err)
	}
	if res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil || !strings.Contains(res.Contents[0].Text, "static text resource") {
		t.Fatalf("read of the other server's resource through the gateway: %v, %v", res, err)
	}
	for _, uri := range append(slices.Clone(dotDotURIs), unownedURIs...) {
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("read %s through the gateway: %v; want invalid params", uri, err)
		}
		if slices.Contains(unownedURIs, uri) && !strings.Contains(string(je.Data), `"uri":"`+uri+`"`) {
			t.Fatalf("read %s through the gateway: data %s; want the URI (SEP-2164)", uri, je.Data)
		}
	}
	got := serverReads(t, c, "files.reads")
	want := []string{"file:///notes/readme.txt", "file:///notes/readme.txt", "file:///srv/~shared.txt", "file:///notes/readme.txt"}
	if !slices.Equal(got, want) {
		t.Fatalf("the catch-all server was sent %q; want only %q", got, want)
	}
}
