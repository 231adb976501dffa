package tests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// TestMCPBridgeSamplingAsksTheCaller: a bridged server's
// sampling/createMessage during a call becomes a sampling question to the
// mesh caller — the request verbatim, the flat answer form — and the
// caller's answer is the model reply the server gets; a decline reaches
// the server as a refusal.
func TestMCPBridgeSamplingAsksTheCaller(t *testing.T) {
	_, c := startBridge(t, bridge.Entry{Namespace: "conf", Server: bridge.ServerConfig{Command: conformanceFixture(t), ClientCapabilities: []string{"sampling"}}})
	cases := []struct {
		name   string
		answer func(q caller.Question) (caller.Answer, error)
		want   string // in the result
		code   envelope.Code
	}{
		{"accept", func(q caller.Question) (caller.Answer, error) {
			return caller.Accept(envelope.SamplingAnswer{Text: "a reply from the mesh caller", Model: "m1"})
		}, "LLM response: a reply from the mesh caller", ""},
		{"decline", func(caller.Question) (caller.Answer, error) {
			return caller.Answer{Action: envelope.ActionDecline}, nil
		}, "Sampling not supported or error", envelope.CodeToolFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var asked caller.Question
			resp, err := c.Call(context.Background(), "conf.test_sampling", map[string]string{"prompt": "What is the mesh?"},
				caller.OnQuestion(func(_ context.Context, q caller.Question) (caller.Answer, error) {
					asked = q
					return tc.answer(q)
				}))
			var params mcp.CreateMessageParams
			if json.Unmarshal(asked.Sampling, &params) != nil || len(params.Messages) != 1 || params.MaxTokens != 100 {
				t.Fatalf("the sampling question carried %s, want the server's createMessage params", asked.Sampling)
			}
			if !strings.Contains(asked.Message, "What is the mesh?") || string(asked.Schema) != string(envelope.SamplingAnswerSchema()) {
				t.Errorf("sampling question: message %q, schema %s; want the prompt and the sampling answer form", asked.Message, asked.Schema)
			}
			p, _ := err.(*envelope.Problem)
			if tc.code == "" && (err != nil || !strings.Contains(string(resp.Data), tc.want)) {
				t.Fatalf("test_sampling = %s %v, want %q", resp.Data, err, tc.want)
			}
			if tc.code != "" && (p == nil || p.Code != tc.code || !strings.Contains(p.Detail, tc.want)) {
				t.Fatalf("test_sampling declined = %v, want %s saying %q", err, tc.code, tc.want)
			}
		})
	}
}

// TestMCPGatewaySampling: through toolmesh's gateway, a bridged server's
// sampling request reaches a client that samples as
// sampling/createMessage (its reply is what the server gets), a client
// that only elicits as the answer form a person fills in, and a client
// with neither has the server refused, which then answers its own error.
func TestMCPGatewaySampling(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	bridgeOn(t, srv, bridge.Entry{Namespace: "conf", Server: bridge.ServerConfig{Command: conformanceFixture(t), ClientCapabilities: []string{"sampling"}}})
	cases := []struct {
		name    string
		opts    *mcp.ClientOptions
		want    string
		isError bool
	}{
		{"sampling client", &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := r.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "model says hi to " + prompt}}, nil
		}}, "LLM response: model says hi to Test prompt", false},
		{"eliciting client", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"text": "typed by a person"}}, nil
		}}, "LLM response: typed by a person", false},
		// The mesh call declares no ask: the server is refused (the
		// non-interactive outcome) and decides; the fixture says so.
		{"neither", &mcp.ClientOptions{}, "Sampling not supported or error", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := gatewayClient(t, srv, "conf", tc.opts)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "Test prompt"}})
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text += tc.Text
				}
			}
			if res.IsError != tc.isError || !strings.Contains(text, tc.want) {
				t.Fatalf("test_sampling through the gateway = isError %v %q, want isError %v with %q", res.IsError, text, tc.isError, tc.want)
			}
		})
	}
}
