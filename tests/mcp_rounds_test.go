package tests

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// statelessGateway bridges the conformance fixture at 2026-07-28 and
// serves it through a gateway under --namespace conf.
func statelessGateway(t *testing.T) *gateway.Gateway {
	t.Helper()
	srv := meshtest.StartServer(t, embedded.Config{})
	bridgeOn(t, srv, bridge.Entry{Namespace: "conf", Server: bridge.ServerConfig{Command: conformanceFixture(t),
		ClientCapabilities: []string{"elicitation", "sampling"}, Protocol: "2026-07-28"}})
	return namespaceGateway(t, srv, "conf")
}

// connect2026 connects a go-sdk client with opts to g at 2026-07-28.
func connect2026(t *testing.T, g *gateway.Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return inMemorySession(t, g.Server(), opts, "2026-07-28")
}

// TestMCPRoundsThroughMesh: a 2026-07-28 server's two input_required
// rounds reach a 2026-07-28 client through bridge and gateway — each
// round one question of the same mesh call, held by the gateway between
// the client's retries — and the result reflects both answers; a client
// that declares neither elicitation nor sampling (the go-sdk's default
// roots only) is refused -32021 by the server before the tool that needs
// sampling runs, and one that answers questions is served.
func TestMCPRoundsThroughMesh(t *testing.T) {
	g := statelessGateway(t)
	var asked []string
	cs := connect2026(t, g, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, r.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice", "color": "blue"}}, nil
	}})
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_multi_round", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "Done: favorite color blue" {
		t.Fatalf("multi-round result = %+v, want the second round's answer in it", res.Content)
	}
	want := []string{"Step 1: What is your name?", "Step 2: What is your favorite color?"}
	if !slices.Equal(asked, want) {
		t.Fatalf("the client was asked %q, want %q", asked, want)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_missing_capability", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("test_missing_capability for a client that answers questions: %+v, %v", res, err)
	}

	bare := connect2026(t, g, &mcp.ClientOptions{})
	_, err = bare.CallTool(ctx, &mcp.CallToolParams{Name: "test_missing_capability", Arguments: map[string]any{}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(je.Data), `"sampling"`) {
		t.Fatalf("test_missing_capability without sampling: err = %v, want -32021 naming sampling", err)
	}
}
