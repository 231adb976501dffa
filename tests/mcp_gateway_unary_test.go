package tests

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// modeOf reports how the worker received the call: {"streaming": bool}.
func modeOf(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	return map[string]bool{"streaming": req.Streaming}, nil
}

// TestMCPGatewayCallsUnaryWhenNothingElseCanReachTheClient: the gateway
// makes a tools/call a unary mesh call (one message each way, coalesced)
// only when nothing but the result could reach the client — the tool
// declares no deltas and the client gave no progress token and asked for
// no log messages — and a mesh stream otherwise; the MCP result is the
// same either way.
func TestMCPGatewayCallsUnaryWhenNothingElseCanReachTheClient(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "um.plain"}, modeOf)
	register(t, w, envelope.ToolSpec{Name: "um.streams", Streaming: true}, modeOf)
	cs := gatewayClient(t, srv, "um", nil)
	ctx := context.Background()
	call := func(name string, meta mcp.Meta) bool {
		t.Helper()
		params := &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}
		params.Meta = meta
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, res, err)
		}
		var got struct{ Streaming *bool }
		b, _ := json.Marshal(res.StructuredContent)
		if json.Unmarshal(b, &got) != nil || got.Streaming == nil {
			t.Fatalf("%s: structuredContent %s", name, b)
		}
		return *got.Streaming
	}
	cases := []struct {
		name, tool string
		meta       mcp.Meta
		setLevel   bool
		stream     bool
	}{
		{"no token, no logs", "plain", nil, false, false},
		{"a streaming tool", "streams", nil, false, true},
		{"a progress token", "plain", mcp.Meta{"progressToken": "p1"}, false, true},
		{"a log level in _meta", "plain", mcp.Meta{mcp.MetaKeyLogLevel: "debug"}, false, true},
		{"the session set a log level", "plain", nil, true, true},
	}
	for _, tc := range cases {
		if tc.setLevel {
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
		}
		if got := call(tc.tool, tc.meta); got != tc.stream {
			t.Errorf("%s: the worker got a stream call = %v, want %v", tc.name, got, tc.stream)
		}
	}
}
