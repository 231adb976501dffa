package provider

import (
	"encoding/json"
	"fmt"
	"strings"
)

// toolReference is an Anthropic tool_reference block: a deferred tool the
// API loads into the model's context.
type toolReference struct {
	Type     string `json:"type"`
	ToolName string `json:"tool_name"`
}

// SearchResultItem answers a tool-search call (ToolCall.Search) with the
// tools found, given as mesh names, best first: for OpenAI Responses a
// tool_search_output carrying the found functions' definitions (in their
// namespaces, no longer deferred); for Anthropic a tool_result of
// tool_reference blocks. A tool the export did not offer is skipped.
func (ts *Toolset) SearchResultItem(call ToolCall, found []string) (json.RawMessage, error) {
	names := make([]string, 0, len(found))
	for _, m := range found {
		if p, ok := ts.Names.ProviderName(m); ok {
			names = append(names, p)
		}
	}
	switch ts.Provider {
	case OpenAIResponses:
		tools, err := ts.loaded(names)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			Type      string            `json:"type"`
			CallID    string            `json:"call_id"`
			Execution string            `json:"execution"`
			Tools     []json.RawMessage `json:"tools"`
		}{"tool_search_output", call.ID, "client", tools})
	case Anthropic:
		return anthropicSearchResult(call, names)
	default:
		return nil, fmt.Errorf("%s has no tool search", ts.Provider)
	}
}

// anthropicSearchResult is a tool_result of tool_reference blocks, or a
// text saying nothing matched.
func anthropicSearchResult(call ToolCall, names []string) (json.RawMessage, error) {
	content := []any{}
	for _, n := range names {
		content = append(content, toolReference{Type: "tool_reference", ToolName: n})
	}
	if len(names) == 0 {
		content = append(content, textContent{"text", "no tool matches " + call.Search + "; try other words"})
	}
	return json.Marshal(struct {
		Type      string `json:"type"`
		ToolUseID string `json:"tool_use_id"`
		Content   []any  `json:"content"`
	}{"tool_result", call.ID, content})
}

// loaded returns the Responses definitions of the named functions, not
// deferred, in their namespaces, as the export declares them.
func (ts *Toolset) loaded(names []string) ([]json.RawMessage, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := []json.RawMessage{}
	for _, raw := range ts.Tools {
		var t struct {
			Type        string            `json:"type"`
			Name        string            `json:"name"`
			Description string            `json:"description"`
			Tools       []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, err
		}
		switch t.Type {
		case "function":
			if want[t.Name] {
				d, err := withDeferLoading(raw, false)
				if err != nil {
					return nil, err
				}
				out = append(out, d)
			}
		case "namespace":
			inner, err := loadedIn(t.Tools, want)
			if err != nil || len(inner) == 0 {
				if err != nil {
					return nil, err
				}
				continue
			}
			b, err := json.Marshal(namespaceTool{Type: "namespace", Name: t.Name, Description: t.Description, Tools: inner})
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// loadedIn returns the wanted functions of one namespace, not deferred.
func loadedIn(tools []json.RawMessage, want map[string]bool) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, raw := range tools {
		var t struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, err
		}
		if want[strings.TrimSpace(t.Name)] {
			d, err := withDeferLoading(raw, false)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// textContent is a text block, the content shape Anthropic's tool_result
// and MCP's CallToolResult share.
type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}
