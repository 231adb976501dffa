package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// extractCalls finds the tool calls in a model's output.
func extractCalls(p Provider, output json.RawMessage) ([]rawCall, error) {
	output = bytes.TrimSpace(output)
	if !json.Valid(output) {
		return nil, errors.New("not valid JSON")
	}
	switch p {
	case OpenAI:
		return openAICalls(output)
	case OpenAIResponses:
		return responsesCalls(output)
	case Anthropic:
		return anthropicCalls(output)
	case Gemini:
		return geminiCalls(output)
	case MCP:
		return mcpCalls(output)
	}
	return nil, fmt.Errorf("unknown provider %q", p)
}

// container unwraps the usual envelopes: returns the member named key of
// an object, or output itself when it is an array.
func container(output json.RawMessage, keys ...string) (json.RawMessage, error) {
	if len(output) > 0 && output[0] == '[' {
		return output, nil
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(output, &o); err != nil {
		return nil, errors.New("want a JSON object or array")
	}
	for _, k := range keys {
		if v, ok := o[k]; ok {
			return v, nil
		}
	}
	return nil, nil
}

// firstOf unwraps a response that holds its answers in an array: when
// output is an object whose member arr is a non-empty array of objects,
// it is the first one's member field (a chat completion's first choice's
// message, a Gemini response's first candidate's content); otherwise
// output itself.
func firstOf(output json.RawMessage, arr, field string) json.RawMessage {
	var o map[string]json.RawMessage
	var elems []map[string]json.RawMessage
	if output[0] != '{' || json.Unmarshal(output, &o) != nil || json.Unmarshal(o[arr], &elems) != nil || len(elems) == 0 {
		return output
	}
	return elems[0][field]
}

type openAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// openAICalls reads a chat completion, an assistant message or a tool_calls array.
func openAICalls(output json.RawMessage) ([]rawCall, error) {
	list, err := container(firstOf(output, "choices", "message"), "tool_calls")
	if err != nil || list == nil || string(list) == "null" {
		return nil, err
	}
	var calls []openAIToolCall
	if err := json.Unmarshal(list, &calls); err != nil {
		return nil, fmt.Errorf("tool_calls: %w", err)
	}
	out := make([]rawCall, 0, len(calls))
	for _, c := range calls {
		r := rawCall{id: c.ID}
		if c.Function == nil || (c.Type != "" && c.Type != "function") {
			r.unsupported = fmt.Sprintf("%q", c.Type)
		} else {
			r.name, r.args, r.argsString = c.Function.Name, c.Function.Arguments, true
		}
		out = append(out, r)
	}
	return out, nil
}

// responsesCalls reads a response, its output array or one output item.
func responsesCalls(output json.RawMessage) ([]rawCall, error) {
	var one struct {
		Type string `json:"type"`
	}
	if output[0] == '{' && json.Unmarshal(output, &one) == nil && one.Type != "" && one.Type != "response" {
		output = append(append(json.RawMessage{'['}, output...), ']')
	}
	list, err := container(output, "output")
	if err != nil || list == nil {
		return nil, err
	}
	var items []struct {
		Type      string          `json:"type"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Execution string          `json:"execution"`
	}
	if err := json.Unmarshal(list, &items); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	var out []rawCall
	for _, it := range items {
		switch it.Type {
		case "function_call":
			out = append(out, rawCall{id: it.CallID, name: it.Name, args: it.Arguments, argsString: true})
		case "tool_search_call":
			if it.Execution == "client" { // a hosted search was run by the provider
				out = append(out, rawCall{id: it.CallID, name: searchToolName, args: it.Arguments, search: true})
			}
		case "custom_tool_call":
			out = append(out, rawCall{id: it.CallID, unsupported: `"custom_tool_call"`})
		}
	}
	return out, nil
}

// anthropicCalls reads a message (response or assistant turn) or its content.
func anthropicCalls(output json.RawMessage) ([]rawCall, error) {
	list, err := container(output, "content")
	if err != nil || list == nil || list[0] == '"' {
		return nil, err
	}
	var blocks []struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(list, &blocks); err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	var out []rawCall
	for _, b := range blocks {
		if b.Type == "tool_use" {
			out = append(out, rawCall{id: b.ID, name: b.Name, args: b.Input})
		}
	}
	return out, nil
}

// geminiCalls reads a response (first candidate), a Content or its parts.
func geminiCalls(output json.RawMessage) ([]rawCall, error) {
	list, err := container(firstOf(output, "candidates", "content"), "parts")
	if err != nil || list == nil {
		return nil, err
	}
	var parts []struct {
		FunctionCall *struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
	}
	if err := json.Unmarshal(list, &parts); err != nil {
		return nil, fmt.Errorf("parts: %w", err)
	}
	var out []rawCall
	for _, p := range parts {
		if fc := p.FunctionCall; fc != nil {
			out = append(out, rawCall{id: fc.ID, name: fc.Name, args: fc.Args})
		}
	}
	return out, nil
}

// mcpCalls reads a tools/call JSON-RPC request or its params.
func mcpCalls(output json.RawMessage) ([]rawCall, error) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(output, &req); err != nil {
		return nil, errors.New("want a tools/call request or its params (a JSON object)")
	}
	id := ""
	if req.Method != "" {
		if req.Method != "tools/call" {
			return nil, fmt.Errorf("method %q is not tools/call", req.Method)
		}
		output, id = req.Params, string(req.ID)
		if s := ""; json.Unmarshal(req.ID, &s) == nil {
			id = s
		}
	}
	var params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(output, &params); err != nil || params.Name == "" {
		return nil, errors.New("tools/call params need a name")
	}
	return []rawCall{{id: id, name: params.Name, args: params.Arguments}}, nil
}
