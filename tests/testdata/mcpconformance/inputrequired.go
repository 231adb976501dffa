package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools of the suite's input-required-result-* scenarios (SEP-2322):
// each asks by returning inputRequests, and completes once the retry
// carries the responses. Request state is HMAC-signed with a key made at
// start, so a tampered state is refused.

// stateKey signs request state; made once per fixture process.
type stateKey []byte

func newStateKey() stateKey {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// sign returns payload with its signature: "payload.sig".
func (k stateKey) sign(payload string) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify returns the payload of a state sign made, or false.
func (k stateKey) verify(state string) (string, bool) {
	p, s, ok := strings.Cut(state, ".")
	if !ok {
		return "", false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	sig, err2 := base64.RawURLEncoding.DecodeString(s)
	if err1 != nil || err2 != nil {
		return "", false
	}
	m := hmac.New(sha256.New, k)
	m.Write(payload)
	return string(payload), hmac.Equal(sig, m.Sum(nil))
}

func formOf(prop, typ string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":%q}},"required":[%q]}`, prop, typ, prop))
}

func elicitReq(message, prop, typ string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: message, RequestedSchema: formOf(prop, typ)}
}

func sampleReq(text string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{MaxTokens: maxTokens,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}
}

// needs returns an input_required result asking reqs with state.
func needs(reqs mcp.InputRequestMap, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}
}

// elicited returns the accepted content's prop from responses[key].
func elicited(responses mcp.InputResponseMap, key, prop string) (string, bool) {
	r, ok := responses[key].(*mcp.ElicitResult)
	if !ok || r.Action != "accept" {
		return "", false
	}
	v, ok := r.Content[prop]
	if !ok {
		return "", false
	}
	return fmt.Sprint(v), true
}

// addInputRequiredTools adds the SEP-2322 tools and prompt.
func addInputRequiredTools(s *mcp.Server, key stateKey) {
	tool := func(name, desc string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(noArgs)}, h)
	}
	tool("test_input_required_result_elicitation", "Asks the user's name through an input_required result",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, ok := elicited(req.Params.InputResponses, "user_name", "name")
			if !ok {
				return needs(mcp.InputRequestMap{"user_name": elicitReq("What is your name?", "name", "string")}, ""), nil
			}
			return text("Hello, " + name + "!"), nil
		})
	tool("test_input_required_result_sampling", "Asks the client's model through an input_required result",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["capital_question"].(*mcp.CreateMessageWithToolsResult); ok {
				return text("LLM response: " + samplingText(r)), nil
			}
			return needs(mcp.InputRequestMap{"capital_question": sampleReq("What is the capital of France?", 100)}, ""), nil
		})
	tool("test_input_required_result_list_roots", "Asks the client's roots through an input_required result",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok {
				var uris []string
				for _, root := range r.Roots {
					uris = append(uris, root.URI)
				}
				return text("Roots: " + strings.Join(uris, ", ")), nil
			}
			return needs(mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}, ""), nil
		})
	addStatefulInputTools(s, key)
	addInputRequiredPrompt(s)
}

// samplingText is the text of a sampling reply.
func samplingText(r *mcp.CreateMessageWithToolsResult) string {
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return "No response"
}

// addStatefulInputTools adds the tools whose rounds carry signed state.
func addStatefulInputTools(s *mcp.Server, key stateKey) {
	tool := func(name, desc string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(noArgs)}, h)
	}
	confirm := mcp.InputRequestMap{"confirm": elicitReq("Please confirm", "ok", "boolean")}
	// confirmed asks once for a confirmation under signed state named
	// name, and is done when it comes back.
	confirmed := func(name string) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return signedRounds(req, key, name, func(string) *mcp.CallToolResult {
				if _, ok := req.Params.InputResponses["confirm"]; !ok {
					return needs(confirm, key.sign(name+":1"))
				}
				return text("state-ok: confirmed")
			})
		}
	}
	tool("test_input_required_result_request_state", "Round-trips signed request state", confirmed("request_state"))
	tool("test_input_required_result_tampered_state", "Refuses request state that was changed", confirmed("tampered_state"))
	multi := mcp.InputRequestMap{
		"user_name":    elicitReq("What is your name?", "name", "string"),
		"greeting":     sampleReq("Generate a greeting", 50),
		"client_roots": &mcp.ListRootsParams{},
	}
	tool("test_input_required_result_multiple_inputs", "Asks for three inputs at once",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return signedRounds(req, key, "multiple_inputs", func(string) *mcp.CallToolResult {
				missing := mcp.InputRequestMap{}
				for k, r := range multi {
					if _, ok := req.Params.InputResponses[k]; !ok {
						missing[k] = r
					}
				}
				if len(missing) > 0 {
					return needs(missing, key.sign("multiple_inputs:1"))
				}
				return text("All inputs received")
			})
		})
	addRoundTools(s, key)
}

// addRoundTools adds the tool that asks in two rounds and the one that
// asks only what the client declared.
func addRoundTools(s *mcp.Server, key stateKey) {
	tool := func(name, desc string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(noArgs)}, h)
	}
	tool("test_input_required_result_multi_round", "Asks in two rounds, the state evolving",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return signedRounds(req, key, "multi_round", func(round string) *mcp.CallToolResult {
				in := req.Params.InputResponses
				switch {
				case round == "2" && in["step2"] != nil:
					color, _ := elicited(in, "step2", "color")
					return text("Done: favorite color " + color)
				case round == "1" && in["step1"] != nil:
					name, _ := elicited(in, "step1", "name")
					return needs(mcp.InputRequestMap{"step2": elicitReq("Step 2: What is your favorite color?", "color", "string")},
						key.sign("multi_round:2:"+name))
				}
				return needs(mcp.InputRequestMap{"step1": elicitReq("Step 1: What is your name?", "name", "string")}, key.sign("multi_round:1"))
			})
		})
	tool("test_input_required_result_capabilities", "Asks only what the client declared it can answer",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) > 0 {
				return text("Inputs received"), nil
			}
			caps := req.ClientCapabilities()
			reqs := mcp.InputRequestMap{}
			if caps != nil && caps.Elicitation != nil {
				reqs["user_name"] = elicitReq("What is your name?", "name", "string")
			}
			if caps != nil && caps.Sampling != nil {
				reqs["greeting"] = sampleReq("Generate a greeting", 50)
			}
			if len(reqs) == 0 {
				return text("Nothing to ask: the client declared neither elicitation nor sampling"), nil
			}
			return needs(reqs, ""), nil
		})
}

// signedRounds checks the request state of a retry (a state this
// process did not sign is invalid params) and runs round with the round
// it names ("" on a first call).
func signedRounds(req *mcp.CallToolRequest, key stateKey, tool string, round func(string) *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	st := req.Params.RequestState
	if st == "" {
		return round(""), nil
	}
	payload, ok := key.verify(st)
	parts := strings.Split(payload, ":")
	if !ok || parts[0] != tool || len(parts) < 2 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState failed its integrity check"}
	}
	return round(parts[1]), nil
}

// addInputRequiredPrompt adds the prompt that asks before it is built.
func addInputRequiredPrompt(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "A prompt that asks for its context first"},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			ctxText, ok := elicited(req.Params.InputResponses, "user_context", "context")
			if !ok {
				return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{
					"user_context": elicitReq("What context should the prompt use?", "context", "string")}}, nil
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Prompt with context: " + ctxText}}}}, nil
		})
}
