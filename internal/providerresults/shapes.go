package providerresults

import (
	"encoding/json"
	"fmt"

	"github.com/toolmesh/toolmesh/envelope/provider"
)

// Item is the provider's tool-result element for one call: an OpenAI
// tool message, a Responses function_call_output item, an Anthropic
// tool_result block, a Gemini functionResponse part or an MCP
// CallToolResult. Messages wraps items into the messages that carry them.
func Item(p provider.Provider, call provider.ToolCall, o provider.Outcome) (json.RawMessage, error) {
	if call.Problem != nil && o.Problem == nil && o.Data == nil {
		o.Problem = call.Problem
	}
	text := text(o)
	var v any
	switch p {
	case provider.OpenAI:
		v = struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}{"tool", call.ID, text}
	case provider.OpenAIResponses:
		v = struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}{"function_call_output", call.ID, text}
	case provider.Anthropic:
		v = struct {
			Type      string        `json:"type"`
			ToolUseID string        `json:"tool_use_id"`
			Content   []textContent `json:"content"`
			IsError   bool          `json:"is_error,omitempty"`
		}{"tool_result", call.ID, []textContent{{"text", text}}, o.Problem != nil}
	case provider.Gemini:
		v = geminiResult(call, o, text)
	case provider.MCP:
		v = mcpResult(o, text)
	default:
		return nil, fmt.Errorf("unknown provider %q", p)
	}
	return json.Marshal(v)
}

// textContent is a text block, the content shape Anthropic's tool_result
// and MCP's CallToolResult share.
type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// geminiResult is a functionResponse part: response.output with the
// result, or response.error with the problem text.
func geminiResult(call provider.ToolCall, o provider.Outcome, text string) any {
	resp := map[string]any{}
	if o.Problem != nil {
		resp["error"] = text
	} else if isEmptyData(o.Data) {
		resp["output"] = nil
	} else {
		resp["output"] = json.RawMessage(o.Data)
	}
	type fr struct {
		ID       string         `json:"id,omitempty"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	}
	return struct {
		FunctionResponse fr `json:"functionResponse"`
	}{fr{call.ID, call.Name, resp}}
}

// mcpResult is a CallToolResult: the text always, structuredContent when
// the result is an object (MCP's rule), isError for a Problem.
func mcpResult(o provider.Outcome, text string) any {
	r := struct {
		Content           []textContent   `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		IsError           bool            `json:"isError,omitempty"`
	}{Content: []textContent{{"text", text}}, IsError: o.Problem != nil}
	if o.Problem == nil && len(o.Data) > 0 && o.Data[0] == '{' {
		r.StructuredContent = o.Data
	}
	return r
}

// Messages wraps result items, in the calls' order, into the
// messages a conversation carries: OpenAI one tool message per call and
// Responses one input item per call (the items themselves); Anthropic one
// user message holding every tool_result; Gemini one user Content holding
// every functionResponse; MCP one CallToolResult per call.
func Messages(p provider.Provider, items []json.RawMessage) ([]json.RawMessage, error) {
	if len(items) == 0 {
		return nil, nil
	}
	var wrapped any
	switch p {
	case provider.OpenAI, provider.OpenAIResponses, provider.MCP:
		return items, nil
	case provider.Anthropic:
		wrapped = struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		}{"user", items}
	case provider.Gemini:
		wrapped = struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		}{"user", items}
	default:
		return nil, fmt.Errorf("unknown provider %q", p)
	}
	b, err := json.Marshal(wrapped)
	if err != nil {
		return nil, err
	}
	return []json.RawMessage{b}, nil
}
