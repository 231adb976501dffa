package tests

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// TestMCPErrorResultsAsTheServerSentThem: an MCP server's error results
// reach an MCP client through the mesh (gateway → mesh → bridge) exactly
// as they do directly — no problem+json added, as structuredContent or as
// a text block, not even for a tool that declares an output schema — and
// a mesh caller still gets the tool_failed Problem.
func TestMCPErrorResultsAsTheServerSentThem(t *testing.T) {
	viaMesh := farViaGateway(t)
	direct := directSession(t)
	for _, tool := range []string{"fail", "fail_image", "fail_typed"} {
		want := callRaw(t, direct, tool, `{}`)
		got := callRaw(t, viaMesh.cs, "far."+tool, `{}`)
		if !want.IsError {
			t.Fatalf("%s directly is no error result: %+v", tool, want)
		}
		delete(want.Meta, "io.modelcontextprotocol/serverInfo")
		delete(got.Meta, "io.modelcontextprotocol/serverInfo")
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if string(w) != string(g) {
			t.Errorf("%s through the mesh:\n got %s\nwant %s", tool, g, w)
		}
	}
	_, c := startBridge(t, bridge.Entry{Namespace: "m", Server: bridge.ServerConfig{Command: mcpServerBin(t)}})
	if _, p := callBridged(t, c, "m.fail_typed", nil); p == nil || p.Code != envelope.CodeToolFailed || !strings.Contains(p.Detail, "no n today") {
		t.Fatalf("a mesh caller of an error result got %v, want tool_failed quoting the server", p)
	}
}

// TestMCPBridgeDeclaresOnlyWhatTheMeshHonours: the bridge declares no
// roots (the mesh has none) and elicitation or sampling only when the
// binding lists them; a tools file listing roots is refused.
func TestMCPBridgeDeclaresOnlyWhatTheMeshHonours(t *testing.T) {
	cases := []struct {
		caps []string
		want string
	}{
		{nil, `{"elicitation":false,"roots":false,"sampling":false}`},
		{[]string{"elicitation"}, `{"elicitation":true,"roots":false,"sampling":false}`},
		{[]string{"elicitation", "sampling"}, `{"elicitation":true,"roots":false,"sampling":true}`},
	}
	for _, tc := range cases {
		_, c := startBridge(t, bridge.Entry{Namespace: "c", Server: bridge.ServerConfig{Command: mcpServerBin(t), ClientCapabilities: tc.caps}})
		if got, p := callBridged(t, c, "c.client_caps", nil); p != nil || got != tc.want {
			t.Errorf("client_capabilities %v: the server was told %s %v, want %s", tc.caps, got, p, tc.want)
		}
	}
	_, err := bridge.Parse([]byte("tools:\n  - namespace: r\n    binding:\n      mcp: {command: x, client_capabilities: [roots]}\n"))
	if err == nil || !strings.Contains(err.Error(), "roots") {
		t.Fatalf("a binding declaring roots: %v, want it refused", err)
	}
}

// TestMCPBridgeTiesLogsToTheirCall: an HTTP server's log messages reach
// the call whose request they concern (they come on its own response
// stream), with another call in flight on the same server.
func TestMCPBridgeTiesLogsToTheirCall(t *testing.T) {
	p := startExec(t, mcpServerBin(t), "-http", "127.0.0.1:0")
	url := p.waitLine(t, regexp.MustCompile(`listening on (http://\S+)`))[1]
	_, c := startBridge(t, bridge.Entry{Namespace: "h", Server: bridge.ServerConfig{URL: url, Headers: map[string]string{"X-Test-Key": "k1"}}})
	logs := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, tag := range []string{"A", "B"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.Stream(context.Background(), "h.log_pair", map[string]string{"tag": tag})
			if err != nil {
				t.Error(err)
				return
			}
			for ev, err := range st.Events() {
				if err != nil {
					t.Error(err)
				}
				if ev.Type == envelope.EventProgress && ev.Log != nil {
					mu.Lock()
					logs[tag] = append(logs[tag], string(ev.Log.Data))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, tag := range []string{"A", "B"} {
		if want := []string{`"` + tag + ` start"`, `"` + tag + ` end"`}; !slices.Equal(logs[tag], want) {
			t.Errorf("call %s got log messages %q, want its own %q", tag, logs[tag], want)
		}
	}
}

// sep1330Schema is the conformance fixture's test_elicitation_sep1330_enums
// schema: titled and untitled, single- and multi-select enums.
const sep1330Schema = `{"type":"object","properties":{` +
	`"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},` +
	`"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},` +
	`"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},` +
	`"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},` +
	`"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}` +
	`},"required":[]}`

// TestMCPElicitationEnumsThroughTheMesh: a bridged server's elicitation
// with SEP-1330's titled and multi-select enums reaches an MCP client of
// the gateway with its schema unchanged, and the client's choices reach
// the server.
func TestMCPElicitationEnumsThroughTheMesh(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	bridgeOn(t, srv, bridge.Entry{Namespace: "conf", Server: bridge.ServerConfig{Command: conformanceFixture(t),
		ClientCapabilities: []string{"elicitation"}}})
	var asked []any
	answer := map[string]any{"titledSingle": "value2", "titledMulti": []any{"value1", "value3"}, "untitledMulti": []any{"option2"}, "legacyEnum": "opt3"}
	cs := gatewayClient(t, srv, "conf", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, r.Params.RequestedSchema)
		return &mcp.ElicitResult{Action: "accept", Content: answer}, nil
	}})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_elicitation_sep1330_enums", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("test_elicitation_sep1330_enums through the mesh: %v %+v", err, res)
	}
	var want any
	_ = json.Unmarshal([]byte(sep1330Schema), &want)
	if len(asked) != 1 || !jsonEqual(asked[0], want) {
		got, _ := json.Marshal(asked)
		t.Fatalf("the client was asked %s, want the server's schema %s", got, sep1330Schema)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	for _, choice := range []string{`"titledMulti":["value1","value3"]`, `"titledSingle":"value2"`, `"untitledMulti":["option2"]`} {
		if !strings.Contains(text, choice) {
			t.Errorf("the server got %q, want the choice %s in it", text, choice)
		}
	}
}

// jsonEqual reports whether a and b encode to the same JSON value.
func jsonEqual(a, b any) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	var x, y any
	return json.Unmarshal(ab, &x) == nil && json.Unmarshal(bb, &y) == nil && string(mustJSON(x)) == string(mustJSON(y))
}

// TestMCPNamespaceUnknownToolAsTheServerAnswers: under --namespace, a
// tool the server does not have is answered as the server itself answers
// it (this server, on the Go SDK: JSON-RPC -32602 `unknown tool "…"`,
// nothing added); a tool the server has but the tools file skips is not
// sent to the server, and is the gateway's own unknown tool.
func TestMCPNamespaceUnknownToolAsTheServerAnswers(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	bridgeOn(t, srv, bridge.Entry{Namespace: "far", Server: bridge.ServerConfig{Command: mcpServerBin(t), Skip: []string{"crash"}}})
	cs := gatewayClient(t, srv, "far", nil)
	direct := directSession(t)
	_, want := direct.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	_, got := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	var wj, gj *jsonrpc.Error
	if !errors.As(want, &wj) || !errors.As(got, &gj) {
		t.Fatalf("no_such_tool: directly %v, through the mesh %v: want JSON-RPC errors both ways", want, got)
	}
	if wj.Code != gj.Code || wj.Message != gj.Message || string(wj.Data) != string(gj.Data) {
		t.Fatalf("no_such_tool through the mesh: %d %q %s, want the server's %d %q %s", gj.Code, gj.Message, gj.Data, wj.Code, wj.Message, wj.Data)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("crash, skipped by the tools file: %+v %v, want the gateway's unknown tool (the server never asked)", res, err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still up"}}); err != nil {
		t.Fatalf("echo after the unknown tools: %v (the server must not have run crash)", err)
	}
	// The surface op itself: the server's own error for a name it does not
	// have (mcp_error), none for a skipped one (never sent).
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	unlisted := wire.MCPSurfaceName("far", wire.MCPToolsCallUnlisted)
	if _, p := callBridged(t, c, unlisted, map[string]any{"name": "no_such_tool"}); p == nil || p.Extensions["mcp_error"] == nil {
		t.Fatalf("%s of no_such_tool: %v, want the server's own error as mcp_error", unlisted, p)
	}
	if _, p := callBridged(t, c, unlisted, map[string]any{"name": "crash"}); p == nil || p.Code != envelope.CodeToolNotFound || p.Extensions["mcp_error"] != nil {
		t.Fatalf("%s of the skipped crash: %v, want tool_not_found of the bridge's own", unlisted, p)
	}
}
