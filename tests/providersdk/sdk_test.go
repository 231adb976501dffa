package providersdk

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/toolmesh/toolmesh/envelope/provider"
)

// request builds a request body from base members plus extra ones.
func request(t *testing.T, base map[string]any, extra map[string]json.RawMessage) []byte {
	t.Helper()
	m := map[string]any{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var userTurn = []any{map[string]any{"role": "user", "content": "hi"}}

// Every exported tool decodes into the SDK's own request type: a whole
// Chat Completions, Responses or Messages request carrying the tools, and
// the tools member (Tool[]) of a Gemini request, for current and legacy
// models alike.
func TestExportDecodesIntoSDKRequests(t *testing.T) {
	for _, file := range []string{"openai", "openai-responses", "anthropic", "gemini", "gemini-legacy",
		"openai-responses-deferred", "anthropic-deferred"} {
		t.Run(file, func(t *testing.T) {
			var ts struct {
				Tools []json.RawMessage `json:"tools"`
			}
			readGolden(t, "export_"+file+".json", &ts)
			if len(ts.Tools) == 0 {
				t.Fatal("no tools in the golden export")
			}
			tools, _ := json.Marshal(ts.Tools)
			extra := map[string]json.RawMessage{"tools": tools}
			switch file {
			case "openai":
				raw := request(t, map[string]any{"model": "gpt-4o", "messages": userTurn}, extra)
				must(t, "ChatCompletionNewParams", raw, roundTrip(raw, new(openai.ChatCompletionNewParams)))
			case "openai-responses", "openai-responses-deferred":
				raw := request(t, map[string]any{"model": "gpt-4.1", "input": "hi"}, extra)
				must(t, "ResponseNewParams", raw, roundTrip(raw, new(responses.ResponseNewParams)))
			case "anthropic", "anthropic-deferred":
				raw := request(t, anthropicBase(), extra)
				must(t, "MessageNewParams", raw, roundTrip(raw, new(anthropic.MessageNewParams)))
			default:
				raw := request(t, nil, extra)
				var cfg genai.GenerateContentConfig
				must(t, "genai.GenerateContentConfig", raw, strictGenai(raw, &cfg))
				geminiDeclarationsOnly(t, cfg.Tools)
			}
		})
	}
}

func anthropicBase() map[string]any {
	return map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024,
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}}}
}

// Every result message decodes into the SDK's message type.
func TestResultsDecodeIntoSDKMessages(t *testing.T) {
	for _, p := range []string{"openai", "openai-responses", "anthropic", "gemini"} {
		t.Run(p, func(t *testing.T) {
			var msgs []json.RawMessage
			readGolden(t, "results_"+p+".json", &msgs)
			for i, m := range msgs {
				what := fmt.Sprintf("message %d", i)
				switch p {
				case "openai":
					var u openai.ChatCompletionMessageParamUnion
					must(t, what, m, roundTrip(m, &u))
					if u.OfTool == nil {
						t.Errorf("%s did not decode as a tool message", what)
					}
				case "openai-responses":
					var u responses.ResponseInputItemUnionParam
					must(t, what, m, roundTrip(m, &u))
					if u.OfFunctionCallOutput == nil {
						t.Errorf("%s did not decode as function_call_output", what)
					}
				case "anthropic":
					var mp anthropic.MessageParam
					must(t, what, m, roundTrip(m, &mp))
					wantEvery(t, what+" block", "a tool_result", mp.Content, func(b anthropic.ContentBlockParamUnion) bool { return b.OfToolResult != nil })
				case "gemini":
					var c genai.Content
					must(t, what, m, strictGenai(m, &c))
					wantEvery(t, what+" part", "a functionResponse", c.Parts, func(p *genai.Part) bool { return p.FunctionResponse != nil })
				}
			}
		})
	}
}

// Every lowered response format, merged into a request, decodes into the
// SDK's request type.
func TestResponseFormatsDecodeIntoSDKRequests(t *testing.T) {
	for _, file := range []string{"openai", "openai-gpt-3.5", "openai-responses", "anthropic", "anthropic-claude-3", "gemini", "gemini-2.0", "gemini-legacy"} {
		t.Run(file, func(t *testing.T) {
			var formats map[string]provider.Lowered
			readGolden(t, "format_"+file+".json", &formats)
			for name, l := range formats {
				checkLowered(t, file+" "+name, file, l)
			}
		})
	}
}

func checkLowered(t *testing.T, what, file string, l provider.Lowered) {
	t.Helper()
	switch file {
	case "openai", "openai-gpt-3.5":
		msgs := userTurn
		if l.System != "" {
			msgs = append([]any{map[string]any{"role": "system", "content": l.System}}, userTurn...)
		}
		raw := request(t, map[string]any{"model": "gpt-4o", "messages": msgs}, l.Request)
		must(t, what, raw, roundTrip(raw, new(openai.ChatCompletionNewParams)))
	case "openai-responses":
		base := map[string]any{"model": "gpt-4.1", "input": "hi"}
		if l.System != "" {
			base["instructions"] = l.System
		}
		raw := request(t, base, l.Request)
		must(t, what, raw, roundTrip(raw, new(responses.ResponseNewParams)))
	case "anthropic", "anthropic-claude-3":
		base := anthropicBase()
		if l.System != "" {
			base["system"] = []any{map[string]any{"type": "text", "text": l.System}}
		}
		if len(l.Tools) > 0 {
			base["tools"] = l.Tools
		}
		raw := request(t, base, l.Request)
		must(t, what, raw, roundTrip(raw, new(anthropic.MessageNewParams)))
	default:
		if gc, ok := l.Request["generationConfig"]; ok {
			must(t, what, gc, strictGenai(gc, new(genai.GenerationConfig)))
		}
	}
}

// Tool calls built with each SDK's own builders are parsed back by the
// translators into the mesh tool, the arguments and the call id.
func TestSDKBuiltCallsParseBack(t *testing.T) {
	args := map[string]any{"path": "/etc/hosts"}
	argsJSON, _ := json.Marshal(args)
	cases := []struct {
		p     provider.Provider
		id    string
		build func(name string) any
	}{
		{provider.OpenAI, "call_1", func(name string) any {
			return openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1",
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: string(argsJSON)}}}}}
		}},
		{provider.OpenAIResponses, "call_2", func(name string) any {
			return responses.ResponseInputParam{responses.ResponseInputItemParamOfFunctionCall(string(argsJSON), "call_2", name)}
		}},
		{provider.Anthropic, "toolu_3", func(name string) any {
			return anthropic.NewAssistantMessage(anthropic.NewTextBlock("reading"), anthropic.NewToolUseBlock("toolu_3", args, name))
		}},
		{provider.Gemini, "", func(name string) any {
			return genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionCall(name, args)}, genai.RoleModel)
		}},
	}
	for _, tc := range cases {
		t.Run(string(tc.p), func(t *testing.T) {
			var ts provider.Toolset
			readGolden(t, "export_"+string(tc.p)+".json", &ts)
			name, ok := ts.Names.ProviderName("fs.read")
			if !ok {
				t.Fatal("fs.read not in the export")
			}
			out, err := json.Marshal(tc.build(name))
			if err != nil {
				t.Fatal(err)
			}
			calls, err := ts.ParseCalls(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 || calls[0].Problem != nil || calls[0].Tool != "fs.read" || calls[0].ID != tc.id {
				t.Fatalf("parsed %+v from %s", calls, out)
			}
			if err := sameJSON(argsJSON, calls[0].Args); err != nil {
				t.Fatalf("args: %v", err)
			}
		})
	}
}

// geminiDeclarationsOnly checks that a Gemini export's tools are one Tool
// holding every function declaration, each in JSON Schema
// (parametersJsonSchema), never in the legacy Schema form whose enum and
// int64-as-string members the SDKs type differently.
func geminiDeclarationsOnly(t *testing.T, tools []*genai.Tool) {
	t.Helper()
	if len(tools) != 1 || len(tools[0].FunctionDeclarations) == 0 {
		t.Fatalf("gemini tools: %d Tools, want one holding the function declarations", len(tools))
	}
	for _, d := range tools[0].FunctionDeclarations {
		if d.Parameters != nil || d.Response != nil || d.ParametersJsonSchema == nil {
			t.Errorf("declaration %s: want parametersJsonSchema and no legacy parameters/response", d.Name)
		}
	}
}

// A deferred export's tool search is answered in the SDKs' own types: a
// Responses tool_search_output input item, and an Anthropic tool_result
// of tool_reference blocks inside the next user message.
func TestSearchResultsDecodeIntoSDKTypes(t *testing.T) {
	var oa json.RawMessage
	readGolden(t, "search_openai-responses.json", &oa)
	must(t, "ResponseInputItemUnionParam", oa, roundTrip(oa, new(responses.ResponseInputItemUnionParam)))
	raw := request(t, map[string]any{"model": "gpt-5.4", "input": []json.RawMessage{oa}}, nil)
	must(t, "ResponseNewParams", raw, roundTrip(raw, new(responses.ResponseNewParams)))

	var an json.RawMessage
	readGolden(t, "search_anthropic.json", &an)
	must(t, "ToolResultBlockParam", an, roundTrip(an, new(anthropic.ToolResultBlockParam)))
	msg, _ := json.Marshal(map[string]any{"role": "user", "content": []json.RawMessage{an}})
	must(t, "MessageParam", msg, roundTrip(msg, new(anthropic.MessageParam)))
}
