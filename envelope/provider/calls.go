package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
)

// ToolCall is one tool call a model asked for, mapped onto the mesh.
type ToolCall struct {
	// ID is the provider's call id (Gemini may send none: then "").
	ID string `json:"id"`
	// Name is the tool name as the model wrote it.
	Name string `json:"name"`
	// Tool is the mesh tool Name maps to ("" when it maps to none).
	Tool string `json:"tool,omitempty"`
	// Args are the arguments, always a JSON object when Problem is nil.
	Args json.RawMessage `json:"args,omitempty"`
	// Search is the query of a tool-search call (a deferred export's
	// Toolset.SearchTool): not a mesh call, but a question Dispatch
	// answers from the mesh's search index (Toolset.SearchResultItem).
	Search string `json:"search,omitempty"`
	// Problem is set when the call cannot run as written (unknown tool,
	// arguments that are not a JSON object): it is the call's result, for
	// the model to read and correct.
	Problem *envelope.Problem `json:"problem,omitempty"`
}

// rawCall is a call as found in the provider's message, before mapping.
type rawCall struct {
	id, name string
	args     json.RawMessage
	// argsString says args arrived as a JSON-encoded string (OpenAI).
	argsString bool
	// unsupported names a call kind the mesh cannot run ("" when fine).
	unsupported string
	// search says the call is the provider's tool search (Responses'
	// tool_search_call), not a function.
	search bool
}

// ParseCalls reads the tool calls from a model's output in the toolset's
// provider shape and maps them onto mesh tools, in the order the model
// wrote them. It accepts the natural containers: OpenAI an assistant
// message, a chat completion or a tool_calls array; Responses a response,
// its output array or one item; Anthropic a message or its content array;
// Gemini a response, a Content or its parts; MCP a tools/call request or
// its params. A call the mesh cannot run comes back with a Problem; only
// output that is not the provider's shape at all is an error.
//
// The nulls OpenAI strict mode makes a model send for optional arguments
// are removed using the tools' own input schemas, which only the Toolset
// Export returned holds; one decoded from JSON maps names but passes such
// nulls through (the worker then answers invalid_input).
func (ts *Toolset) ParseCalls(output json.RawMessage) ([]ToolCall, error) {
	raws, err := extractCalls(ts.Provider, output)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidInput, "%s model output: %v", ts.Provider, err)
	}
	out := make([]ToolCall, len(raws))
	for i, r := range raws {
		out[i] = ts.mapCall(r)
	}
	return out, nil
}

// mapCall maps one raw call's name and checks its arguments.
func (ts *Toolset) mapCall(r rawCall) ToolCall {
	c := ToolCall{ID: r.id, Name: r.name}
	if r.search || (ts.SearchTool != "" && r.name == ts.SearchTool) {
		c.Search, c.Problem = searchQuery(r)
		return c
	}
	if r.unsupported != "" {
		c.Problem = envelope.Problemf(envelope.CodeInvalidInput, "call %s: %s calls are not mesh tools; call one of the offered functions", r.id, r.unsupported)
		return c
	}
	tool, ok := ts.Names.meshName(r.name)
	if !ok {
		c.Problem = ts.unknownTool(r.name)
		return c
	}
	c.Tool = tool
	args, prob := callArgs(r)
	if prob != nil {
		c.Problem = prob
		return c
	}
	c.Args = ts.undoStrict(tool, args)
	return c
}

// unknownTool is the Problem for a name the export did not offer.
func (ts *Toolset) unknownTool(name string) *envelope.Problem {
	p := envelope.Problemf(envelope.CodeToolNotFound, "no tool named %q is offered", name)
	names := make([]string, 0, ts.Names.size())
	for n := range ts.Names.toMesh {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 0 && len(names) <= 20 {
		p.WithFix("Call one of: "+strings.Join(names, ", "), envelope.MaybeIncorrect)
	}
	return p
}

// callArgs returns a call's arguments as a JSON object, or the
// invalid_input Problem the model gets back instead.
func callArgs(r rawCall) (json.RawMessage, *envelope.Problem) {
	args := bytes.TrimSpace(r.args)
	// Some OpenAI-compatible servers send the arguments as an object
	// rather than a JSON-encoded string; both mean the same.
	if r.argsString && (len(args) == 0 || args[0] != '{') {
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return nil, badArgs(r, "arguments must be a JSON-encoded string")
		}
		args = json.RawMessage(s)
	}
	if len(strings.TrimSpace(string(args))) == 0 || string(args) == "null" {
		return json.RawMessage("{}"), nil
	}
	v, err := decodeJSON(args)
	if err != nil {
		return nil, badArgs(r, "arguments are not valid JSON: "+err.Error())
	}
	if _, ok := v.(obj); !ok {
		return nil, badArgs(r, fmt.Sprintf("arguments must be a JSON object, got %s", jsonKind(v)))
	}
	return args, nil
}

func badArgs(r rawCall, msg string) *envelope.Problem {
	what := "call to " + r.name
	if r.id != "" {
		what = "call " + r.id + " to " + r.name
	}
	return envelope.Problemf(envelope.CodeInvalidInput, "%s: %s", what, msg).
		WithFix("Call the tool again with its arguments as one JSON object matching its parameters", envelope.HasPlaceholders)
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// undoStrict removes the nulls strict mode made the model send for
// optional properties: the tool's own schema wants them absent.
func (ts *Toolset) undoStrict(tool string, args json.RawMessage) json.RawMessage {
	spec, ok := ts.specs[tool]
	if !ok || ts.Capabilities.Tools != schemaStrict || len(spec.InputSchema) == 0 {
		return args
	}
	root, err1 := decodeJSON(spec.InputSchema)
	v, err2 := decodeJSON(args)
	if err1 != nil || err2 != nil {
		return args
	}
	if !stripNulls(root, root, v) {
		return args
	}
	return mustJSON(v)
}

// stripNulls deletes null members of v that schema declares optional,
// recursing through properties and items; it reports whether it changed v.
func stripNulls(root, schema, v any) bool {
	s, _ := schema.(obj)
	for hops := 0; s != nil && hops < 32; hops++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			break
		}
		t, _ := resolveRef(root, ref)
		s, _ = t.(obj)
	}
	if s == nil {
		return false
	}
	changed := false
	switch val := v.(type) {
	case obj:
		props, _ := s["properties"].(obj)
		req := requiredSet(s)
		for name, m := range val {
			ps, known := props[name]
			switch {
			case m == nil && known && !req[name]:
				delete(val, name)
				changed = true
			case known:
				changed = stripNulls(root, ps, m) || changed
			}
		}
	case []any:
		for _, e := range val {
			changed = stripNulls(root, s["items"], e) || changed
		}
	}
	return changed
}

// searchQuery reads a tool-search call's query.
func searchQuery(r rawCall) (string, *envelope.Problem) {
	var a struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(r.args, &a); err != nil || strings.TrimSpace(a.Query) == "" {
		return "", envelope.Problemf(envelope.CodeInvalidInput, "call %s: a tool search needs {\"query\": \"words\"}", r.id)
	}
	return a.Query, nil
}
