package gateway

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
)

// Progressive discovery (Config.Progressive): a catalogue of thousands of
// tools does not fit a model's context, so tools/list starts small — the
// search tool and the pinned tools — and each search adds the tools it
// found, so the client can call them; the SDK tells the client with
// notifications/tools/list_changed. The search is internal/toolsearch's
// over the gateway's own view of the fleet (its allow/deny lists and the
// caller's permissions applied), the same ranking `toolmesh tools search`
// and catalog.Catalog.Search give.

// SearchToolName is the search tool's name in progressive mode (after
// Config.NamePrefix).
const SearchToolName = "search_tools"

// DefaultSearchLimit is how many tools one search returns by default.
const DefaultSearchLimit = 10

// maxSearchLimit bounds the limit a client may ask for.
const maxSearchLimit = 50

// searchToolSchema is the search tool's input schema.
var searchToolSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What the tool should do, in words (\"read a file\")"},` +
	`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"Most tools to return (default 10)"}},` +
	`"required":["query"],"additionalProperties":false}`)

// searchToolOutput is the search tool's output schema: the matching
// tools, best first, each as tools/list would list it.
var searchToolOutput = json.RawMessage(`{"type":"object","properties":{` +
	`"tools":{"type":"array","items":{"type":"object"}},"total":{"type":"integer"}},"required":["tools","total"]}`)

// searchArgs are the search tool's arguments.
type searchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// searchResult is the search tool's structured content.
type searchResult struct {
	Tools []*mcp.Tool `json:"tools"`
	// Total counts every tool that matched, returned or not.
	Total int `json:"total"`
}

// addSearchTool registers the search tool.
func (g *Gateway) addSearchTool() {
	t := &mcp.Tool{
		Name:  g.cfg.NamePrefix + SearchToolName,
		Title: "Search tools",
		Description: "Search this server's tools by what they do. Returns the best-matching tools' " +
			"names, descriptions and input schemas, and makes them callable (the tool list grows). " +
			"Search first, then call the tool it returns.",
		InputSchema:  searchToolSchema,
		OutputSchema: searchToolOutput,
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}
	g.srv.AddTool(t, g.searchHandler)
}

// searchHandler answers one search: the matching tools' MCP definitions,
// best first, each made callable before the answer leaves.
func (g *Gateway) searchHandler(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a searchArgs
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &a); err != nil || strings.TrimSpace(a.Query) == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "search_tools: want {\"query\": \"words\"}"}
	}
	if a.Limit <= 0 {
		a.Limit = g.searchLimit()
	}
	a.Limit = min(a.Limit, maxSearchLimit)
	found, total := g.search(a.Query, a.Limit)
	g.reveal(found)
	res := searchResult{Tools: found, Total: total}
	text, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var structured map[string]any
	_ = json.Unmarshal(text, &structured)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: structured}, nil
}

func (g *Gateway) searchLimit() int {
	if g.cfg.SearchLimit > 0 {
		return g.cfg.SearchLimit
	}
	return DefaultSearchLimit
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// search ranks the gateway's view of the fleet against query and returns
// up to limit tools as they would be served, with how many matched.
func (g *Gateway) search(query string, limit int) ([]*mcp.Tool, int) {
	g.mu.Lock()
	cat := catalog.Listing{Tools: make([]catalog.Tool, 0, len(g.known))}
	for _, ct := range g.known {
		cat.Tools = append(cat.Tools, ct)
	}
	g.mu.Unlock()
	// In name order, as a Catalog's, so the kept index is reused while the
	// known tools stay the same.
	slices.SortFunc(cat.Tools, func(a, b catalog.Tool) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	hits := g.index.Search(cat.Tools, toolSpec, query)
	out := []*mcp.Tool{}
	for _, h := range hits {
		if len(out) == limit {
			break
		}
		t, err := servedDef(g.toolName(h.Tool.Spec.Name), h.Tool)
		if err != nil {
			continue
		}
		out = append(out, t)
	}
	return out, len(hits)
}

// toolName is a mesh tool's MCP name.
func (g *Gateway) toolName(meshName string) string {
	return g.cfg.NamePrefix + strings.TrimPrefix(meshName, g.filter.namespace)
}

// reveal adds the tools a search found to tools/list and registers them
// at once, so the client may call them as soon as it has the answer.
func (g *Gateway) reveal(tools []*mcp.Tool) {
	g.mu.Lock()
	added := false
	for _, t := range tools {
		if !g.revealed[t.Name] {
			g.revealed[t.Name] = true
			added = true
		}
	}
	view := g.lastView
	g.mu.Unlock()
	if added {
		g.apply(view)
	}
}

// listed reports whether a tool allowed by the filter is in tools/list:
// always, unless the gateway is progressive; then only the tools pinned
// or revealed by a search. Call with g.mu held.
func (g *Gateway) listed(meshName, served string) bool {
	return !g.cfg.Progressive || g.revealed[served] || matchAny(g.cfg.Pinned, meshName)
}

// checkPinned refuses a Pinned list that cannot work: a malformed glob,
// or pins without Progressive.
func checkPinned(cfg Config) error {
	if !cfg.Progressive && len(cfg.Pinned) > 0 {
		return envelope.Problemf(envelope.CodeInvalidConfig, "pinned tools need progressive discovery")
	}
	for _, p := range cfg.Pinned {
		if _, err := path.Match(p, ""); err != nil {
			return envelope.Problemf(envelope.CodeInvalidConfig, "pinned pattern %q: %v", p, err)
		}
	}
	return nil
}

// toolSpec is a catalogue tool's spec, as package toolsearch reads it.
func toolSpec(t *catalog.Tool) *envelope.ToolSpec { return &t.Spec }
