package providersdk

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// sdkMesh is a real mesh (embedded nats-server, worker, caller; see
// meshtest) with one tool that answers and one that always fails.
func sdkMesh(t *testing.T) *caller.Caller {
	t.Helper()
	m := meshtest.NewWith(t, meshtest.Config{Worker: worker.Config{Logger: meshtest.Quiet()}, Caller: caller.Config{Logger: meshtest.Quiet()}})
	for _, s := range sdkSpecs() {
		fail := s.Name == "disk.burn"
		if err := m.Worker.Register(s, worker.HandlerFunc(func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
			if fail {
				return nil, envelope.NewProblem(envelope.CodeToolFailed, "the disk is on fire")
			}
			return map[string]json.RawMessage{"echo": req.Args}, nil
		})); err != nil {
			t.Fatal(err)
		}
	}
	return m.Caller
}

func sdkSpecs() []envelope.ToolSpec {
	return []envelope.ToolSpec{
		{Name: "fs.read", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
		{Name: "disk.burn", InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
	}
}

// sdkTurn builds a model turn calling fs.read then disk.burn with the
// provider's own SDK, as a model client would hand it over.
func sdkTurn(p provider.Provider, read, burn string) any {
	switch p {
	case provider.OpenAI:
		call := func(id, name, args string) openai.ChatCompletionMessageToolCallUnionParam {
			return openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: args}}}
		}
		return openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{
			call("c1", read, `{"path":"/a"}`), call("c2", burn, `{}`)}}
	case provider.OpenAIResponses:
		return responses.ResponseInputParam{
			responses.ResponseInputItemParamOfFunctionCall(`{"path":"/a"}`, "c1", read),
			responses.ResponseInputItemParamOfFunctionCall(`{}`, "c2", burn)}
	case provider.Anthropic:
		return anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("c1", map[string]any{"path": "/a"}, read),
			anthropic.NewToolUseBlock("c2", map[string]any{}, burn))
	}
	read1 := genai.NewPartFromFunctionCall(read, map[string]any{"path": "/a"})
	read1.FunctionCall.ID = "c1"
	burn1 := genai.NewPartFromFunctionCall(burn, map[string]any{})
	burn1.FunctionCall.ID = "c2"
	return genai.NewContentFromParts([]*genai.Part{read1, burn1}, genai.RoleModel)
}

// Calls built with each SDK run on a real mesh through caller.Dispatch,
// and the result messages decode into that SDK's types, in order, the
// failure marked as an error.
func TestDispatchWithSDKShapes(t *testing.T) {
	c := sdkMesh(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, p := range []provider.Provider{provider.OpenAI, provider.OpenAIResponses, provider.Anthropic, provider.Gemini} {
		t.Run(string(p), func(t *testing.T) {
			ts, err := provider.Export(sdkSpecs(), provider.ExportOptions{Provider: p})
			if err != nil {
				t.Fatal(err)
			}
			read, _ := ts.Names.ProviderName("fs.read")
			burn, _ := ts.Names.ProviderName("disk.burn")
			turn, err := json.Marshal(sdkTurn(p, read, burn))
			if err != nil {
				t.Fatal(err)
			}
			d, err := c.Dispatch(ctx, ts, turn)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Outcomes) != 2 || d.Outcomes[0].Problem != nil || d.Outcomes[1].Problem == nil ||
				d.Outcomes[1].Problem.Code != envelope.CodeToolFailed {
				t.Fatalf("outcomes %+v", d.Outcomes)
			}
			checkSDKResults(t, p, d.Messages)
		})
	}
}

// checkSDKResults decodes the result messages with the SDK and checks
// the call ids, in order, and the error marking.
func checkSDKResults(t *testing.T, p provider.Provider, msgs []json.RawMessage) {
	t.Helper()
	var ids []string
	var errs []bool
	for i, m := range msgs {
		what := fmt.Sprintf("%s message %d", p, i)
		switch p {
		case provider.OpenAI:
			var u openai.ChatCompletionMessageParamUnion
			must(t, what, m, roundTrip(m, &u))
			ids, errs = append(ids, u.OfTool.ToolCallID), append(errs, false)
		case provider.OpenAIResponses:
			var u responses.ResponseInputItemUnionParam
			must(t, what, m, roundTrip(m, &u))
			ids, errs = append(ids, u.OfFunctionCallOutput.CallID.Value), append(errs, false)
		case provider.Anthropic:
			var mp anthropic.MessageParam
			must(t, what, m, roundTrip(m, &mp))
			for _, b := range mp.Content {
				ids = append(ids, b.OfToolResult.ToolUseID)
				errs = append(errs, b.OfToolResult.IsError.Value)
			}
		case provider.Gemini:
			var content genai.Content
			must(t, what, m, strictGenai(m, &content))
			for _, part := range content.Parts {
				ids = append(ids, part.FunctionResponse.ID)
				_, isErr := part.FunctionResponse.Response["error"]
				errs = append(errs, isErr)
			}
		}
	}
	if fmt.Sprint(ids) != "[c1 c2]" {
		t.Fatalf("results answer %v, want [c1 c2]", ids)
	}
	if (p == provider.Anthropic || p == provider.Gemini) && fmt.Sprint(errs) != "[false true]" {
		t.Fatalf("error marks %v, want [false true]", errs)
	}
}
