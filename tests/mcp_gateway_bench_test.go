package tests

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

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
