package tests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/meshtest"
)

// askingGateway is a mesh hosting askingTool's "rm" behind a gateway.
func askingGateway(t *testing.T) *gateway.Gateway {
	t.Helper()
	m := meshtest.New(t)
	askingTool(t, m.Worker)
	return runGateway(t, gateway.Config{Caller: m.Caller})
}

// TestMCPGatewayElicitation: a go-sdk client that declares elicitation
// answers a mesh tool's question through the gateway (the answer reaches
// the handler); a client without the capability, and a 2026-07-28
// client, get the input_required Problem as an isError result.
func TestMCPGatewayElicitation(t *testing.T) {
	g := askingGateway(t)
	cases := []struct {
		name, version string
		elicit        bool
		want          string // in the result's text
		isError       bool
	}{
		{"with elicitation", "2025-11-25", true, `"deleted":true,"outcome":"answered","reason":"via mcp"`, false},
		{"without elicitation", "2025-11-25", false, "input_required", true},
		// A 2026-07-28 client is asked by an input_required round (its
		// go-sdk answers it with its elicitation handler and retries,
		// resuming the held mesh call); one that cannot elicit still
		// gets the non-interactive outcome.
		{"2026-07-28", "2026-07-28", true, `"deleted":true,"outcome":"answered","reason":"via mcp"`, false},
		{"2026-07-28 without elicitation", "2026-07-28", false, "input_required", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			opts := &mcp.ClientOptions{}
			if c.elicit {
				opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, r.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true, "reason": "via mcp"}}, nil
				}
			}
			cs := inMemorySession(t, g.Server(), opts, c.version)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rm", Arguments: map[string]string{"path": "/srv"}})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := json.Marshal(res)
			if res.IsError != c.isError || !strings.Contains(string(body), c.want) {
				t.Fatalf("result %s, want isError=%v containing %s", body, c.isError, c.want)
			}
			if c.elicit && !c.isError && (len(asked) != 1 || asked[0] != "Delete /srv?") {
				t.Errorf("the client was asked %q", asked)
			}
		})
	}
}
