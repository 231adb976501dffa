package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
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

// TestMCPGatewayAcceptsMaybeOnlyForRetrySafeTools: the gateway calls a
// tool whose spec declares it idempotent or read-only as the Go caller
// calls a tool declared so — its call carries maybe=1, so the worker may
// start it without waiting for the server's confirmation of the
// heartbeat naming it (docs/protocol.md §8.2) — and every other tool's
// call without it, keeping the confirmation.
func TestMCPGatewayAcceptsMaybeOnlyForRetrySafeTools(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
	yes := true
	register(t, w, envelope.ToolSpec{Name: "mb.plain"}, echo)
	register(t, w, envelope.ToolSpec{Name: "mb.idem", Annotations: &envelope.Annotations{Idempotent: &yes}}, echo)
	register(t, w, envelope.ToolSpec{Name: "mb.ro", Annotations: &envelope.Annotations{ReadOnly: &yes}}, echo)
	// A plain subscriber gets a copy of every call beside the workers'
	// queue group.
	seen, err := meshtest.Connect(t, srv).SubscribeSync(wire.Subjects{}.Call("mb.*"))
	if err != nil {
		t.Fatal(err)
	}
	cs := gatewayClient(t, srv, "mb", nil)
	ctx := context.Background()
	for _, tc := range []struct {
		tool  string
		maybe bool
	}{{"plain", false}, {"idem", true}, {"ro", true}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"x": 1}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", tc.tool, res, err)
		}
		msg := nextCall(t, seen, "mb."+tc.tool)
		meta, _, _ := bytes.Cut(msg.Data, []byte("\n"))
		if got := bytes.Contains(meta, []byte("maybe=1")); got != tc.maybe {
			t.Errorf("%s: the call's metadata line %q carries maybe=1: %v, want %v", tc.tool, meta, got, tc.maybe)
		}
	}
}

// nextCall is the next message on sub, which must be a call of tool.
func nextCall(t *testing.T, sub *nats.Subscription, tool string) *nats.Msg {
	t.Helper()
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("%s: no call seen: %v", tool, err)
	}
	if want := (wire.Subjects{}).Call(tool); msg.Subject != want {
		t.Fatalf("saw a call on %s, want %s", msg.Subject, want)
	}
	return msg
}

// BenchmarkMCPGatewayCall is one MCP tools/call at a time over in-memory
// transports, to the gateway in front of a mesh echo and to a go-sdk
// server's own echo: the difference in allocs/op is what the gateway and
// its mesh call allocate per call (the SDK's share is on both sides).
func BenchmarkMCPGatewayCall(b *testing.B) {
	ctx := context.Background()
	args := map[string]any{"message": "xxxxxxxxxxxxxxxx"}
	sides := []struct {
		name    string
		session func(b *testing.B) *mcp.ClientSession
	}{
		{"direct", directEchoSession},
		{"gateway", func(b *testing.B) *mcp.ClientSession {
			srv := meshtest.StartServer(b, embedded.Config{})
			w := meshtest.NewWorker(b, meshtest.Connect(b, srv), worker.Config{Logger: meshtest.Quiet()})
			register(b, w, envelope.ToolSpec{Name: "gb.echo", InputSchema: mustJSON(map[string]any{
				"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}})}, echo)
			return gatewayClient(b, srv, "gb", nil)
		}},
	}
	for _, side := range sides {
		b.Run(side.name, func(b *testing.B) {
			cs := side.session(b)
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("echo: %v %v", res, err)
				}
			}
		})
	}
}

// directEchoSession is a client session to a go-sdk server whose echo is
// a raw tool handler returning its arguments, as the gateway does, in
// the session revision gatewayClient speaks.
func directEchoSession(b *testing.B) *mcp.ClientSession {
	s := mcp.NewServer(&mcp.Implementation{Name: "direct", Version: "0"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := string(req.Params.Arguments)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args}}, StructuredContent: req.Params.Arguments}, nil
		})
	return inMemorySession(b, s, nil, "2025-11-25")
}
