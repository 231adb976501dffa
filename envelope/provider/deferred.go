package provider

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Deferred loading (ExportOptions.Defer): a catalogue of hundreds of tools
// does not fit a model's context, so OpenAI's Responses API and
// Anthropic's Messages API load tools on demand. The export marks every
// tool defer_loading:true and adds a tool search the client runs
// (Toolset.SearchTool), which caller.Dispatch answers from the mesh's own
// search index:
//
//   - OpenAI Responses: tools grouped into namespaces by the first dotted
//     segment of their mesh names (fs.read_file in namespace "fs"; a name
//     without a dot stays a top-level function), every function
//     defer_loading:true, and {"type":"tool_search","execution":"client"}
//     with a query schema. The model's tool_search_call is answered by a
//     tool_search_output carrying the found functions' definitions, in
//     their namespaces.
//   - Anthropic: every tool defer_loading:true, plus a client tool
//     (searchToolName) the model calls with a query; its tool_result holds
//     one tool_reference block per tool found, which the API expands.
//
// Chat Completions, Gemini and MCP have no deferred loading: their export
// is whole, with a note saying so.

// searchToolName is the client-run tool search's name in a deferred export.
const searchToolName = "tool_search"

// searchDescription tells the model what the tool search does.
const searchDescription = "Search the available tools by what they do, in words (\"read a file\"); " +
	"the best matches are loaded and can then be called."

// searchParameters is the tool search's input schema.
var searchParameters = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what the tool should do"}},"required":["query"],"additionalProperties":false}`)

// openAISearchTool is the Responses API's client-executed tool search.
type openAISearchTool struct {
	Type        string          `json:"type"`
	Execution   string          `json:"execution"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// namespaceTool is a Responses namespace of functions.
type namespaceTool struct {
	Type        string            `json:"type"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Tools       []json.RawMessage `json:"tools"`
}

// deferTools rewrites an export for deferred loading (see above).
func (ts *Toolset) deferTools() error {
	switch ts.Provider {
	case OpenAIResponses:
		return ts.deferResponses()
	case Anthropic:
		return ts.deferAnthropic()
	default:
		ts.note("", fmt.Sprintf("deferred loading: %s has none; every tool is exported whole", ts.Provider))
		return nil
	}
}

// defers reports whether the provider has deferred loading (and so a
// deferred export adds a tool search).
func (p Provider) defers() bool { return p == OpenAIResponses || p == Anthropic }

// withDeferLoading returns a tool declaration with defer_loading set.
func withDeferLoading(tool json.RawMessage, on bool) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(tool, &m); err != nil {
		return nil, err
	}
	if on {
		m["defer_loading"] = json.RawMessage("true")
	} else {
		delete(m, "defer_loading")
	}
	return json.Marshal(m)
}

// deferAnthropic marks every tool deferred and adds the search tool.
func (ts *Toolset) deferAnthropic() error {
	for i, t := range ts.Tools {
		d, err := withDeferLoading(t, true)
		if err != nil {
			return err
		}
		ts.Tools[i] = d
	}
	search, err := json.Marshal(anthropicTool{Name: searchToolName, Description: searchDescription, InputSchema: searchParameters})
	if err != nil {
		return err
	}
	ts.Tools = append(ts.Tools, search)
	ts.SearchTool = searchToolName
	return nil
}

// deferResponses groups the functions into namespaces, marks them
// deferred and adds the client tool search.
func (ts *Toolset) deferResponses() error {
	groups, order, err := ts.namespaces(true)
	if err != nil {
		return err
	}
	out := []json.RawMessage{}
	for _, ns := range order {
		b, err := groups[ns].encode()
		if err != nil {
			return err
		}
		out = append(out, b...)
	}
	search, err := json.Marshal(openAISearchTool{Type: "tool_search", Execution: "client", Description: searchDescription, Parameters: searchParameters})
	if err != nil {
		return err
	}
	ts.Tools = append(out, search)
	ts.SearchTool = searchToolName
	return nil
}

// nsGroup is one namespace's functions ("" for those without a dot).
type nsGroup struct {
	name  string
	tools []json.RawMessage
	names []string // the functions' mesh names, for the description
}

// encode is the group as Responses tools: one namespace, or the
// top-level functions.
func (g *nsGroup) encode() ([]json.RawMessage, error) {
	if g.name == "" {
		return g.tools, nil
	}
	b, err := json.Marshal(namespaceTool{Type: "namespace", Name: g.name, Description: nsDescription(g.name, g.names), Tools: g.tools})
	return []json.RawMessage{b}, err
}

// nsDescription summarises a namespace for the model: it sees only this
// until it searches.
func nsDescription(ns string, names []string) string {
	const most = 12
	short := make([]string, 0, min(len(names), most))
	for _, n := range names[:min(len(names), most)] {
		short = append(short, strings.TrimPrefix(n, ns+"."))
	}
	d := fmt.Sprintf("%d %s tools: %s", len(names), ns, strings.Join(short, ", "))
	if len(names) > most {
		d += ", …"
	}
	return d
}

// namespaces groups the Responses function tools of ts by the first
// dotted segment of their mesh names, each marked deferred (or not); the
// order is by namespace name, top-level functions ("") first.
func (ts *Toolset) namespaces(deferred bool) (map[string]*nsGroup, []string, error) {
	groups := map[string]*nsGroup{}
	for _, raw := range ts.Tools {
		var head struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &head); err != nil || head.Type != "function" {
			continue
		}
		mesh, _ := ts.Names.meshName(head.Name)
		ns, _, dotted := strings.Cut(mesh, ".")
		if !dotted {
			ns = ""
		}
		d, err := withDeferLoading(raw, deferred)
		if err != nil {
			return nil, nil, err
		}
		if groups[ns] == nil {
			groups[ns] = &nsGroup{name: ns}
		}
		groups[ns].tools = append(groups[ns].tools, d)
		groups[ns].names = append(groups[ns].names, mesh)
	}
	order := make([]string, 0, len(groups))
	for ns := range groups {
		order = append(order, ns)
	}
	sort.Strings(order)
	return groups, order, nil
}
