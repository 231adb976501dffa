package gateway

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
)

// fingerprint identifies an MCP tool's whole definition.
func fingerprint(t *mcp.Tool) string {
	b, _ := json.Marshal(t)
	return string(b)
}

// filter is the allow and deny lists (path.Match globs over mesh names)
// and the namespace served ("" or "<ns>.").
type filter struct {
	allow, deny []string
	namespace   string
}

func newFilter(allow, deny []string) (filter, error) {
	clean := func(list []string, what string) ([]string, error) {
		var out []string
		for _, p := range list {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if _, err := path.Match(p, ""); err != nil {
				return nil, envelope.Problemf(envelope.CodeInvalidConfig, "%s pattern %q: %v", what, p, err)
			}
			out = append(out, p)
		}
		return out, nil
	}
	a, err := clean(allow, "allow")
	if err != nil {
		return filter{}, err
	}
	d, err := clean(deny, "deny")
	if err != nil {
		return filter{}, err
	}
	return filter{allow: a, deny: d}, nil
}

// allows reports whether a mesh tool may be listed and called.
func (f filter) allows(name string) bool {
	if !strings.HasPrefix(name, f.namespace) || name == f.namespace || matchAny(f.deny, name) {
		return false
	}
	return len(f.allow) == 0 || matchAny(f.allow, name)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// servedDef is the MCP definition of one catalogue tool served as name:
// mcpmap.Tool of its spec, marked when workers give different specs for it
// (see markConflict).
func servedDef(name string, ct catalog.Tool) (*mcp.Tool, error) {
	t, err := mcpmap.Tool(name, ct.Spec)
	if err != nil || len(ct.Conflicts) == 0 {
		return t, err
	}
	markConflict(t, ct)
	return t, nil
}

// conflictNote is the description of a tool whose workers disagree.
const conflictNote = "CONFLICT: workers on the mesh give %d different specs for this tool, and a call may reach any of them, so no worker's description is shown here; do not rely on what this tool does until the operator resolves the conflict (_meta io.toolmesh/conflict names the workers)."

// markConflict marks the definition of a tool for which workers give
// different specs (docs/protocol.md §14.1): the served schema is the spec
// most of them give (the rule of catalog.Catalog.List, never one by chance), but no
// worker's title or description is served — one of them may be a hostile
// worker's, written to steer the model — only a note saying so; and
// _meta "io.toolmesh/conflict" lists the workers giving each spec, the
// served one first.
func markConflict(t *mcp.Tool, ct catalog.Tool) {
	t.Title = ""
	t.Description = fmt.Sprintf(conflictNote, len(ct.Conflicts)+1)
	if t.Meta == nil {
		t.Meta = mcp.Meta{}
	}
	t.Meta[conflictMetaKey] = conflictOf(ct)
}

// conflictMetaKey is the _meta key of a conflicting tool's workers, on the
// tool and (one entry per tool) on tools/list.
const conflictMetaKey = "io.toolmesh/conflict"

// conflictOf lists the workers giving each of ct's specs, the served first.
func conflictOf(ct catalog.Tool) map[string]any {
	other := map[string]bool{}
	var specs []map[string]any
	for _, v := range ct.Conflicts {
		for _, w := range v.Workers {
			other[w] = true
		}
		specs = append(specs, map[string]any{"workers": v.Workers, "version": v.Spec.Version})
	}
	served := []string{}
	for _, w := range ct.Workers {
		if !other[w] {
			served = append(served, w)
		}
	}
	return map[string]any{"tool": ct.Spec.Name, "served": map[string]any{"workers": served, "version": ct.Spec.Version}, "others": specs}
}

// listing is where a served tool stands in tools/list and what is listed
// for it. A bridged MCP server's tools (envelope.MCPTool) stand together
// under their namespace in the server's own order, and each is listed as
// the server's own definition under its served name: the SDK's mcp.Tool
// has no execution member and writes readOnlyHint and idempotentHint
// even when the server left them unset. Every other tool stands by its
// served name and is listed as the SDK writes it.
type listing struct {
	group string          // a bridged tool's served name without the server's own, else the served name
	pos   int             // the position in the server's list; -1 for other tools
	def   json.RawMessage // the definition listed; nil: the SDK's
}

// listingOf is the listing of catalogue tool ct served as name; a tool
// whose workers disagree (markConflict) is listed as the SDK writes it.
// The server's own name is its definition's; without one (a server whose
// bytes the bridge cannot see) it is taken to follow the namespace's
// first dot.
func (g *Gateway) listingOf(name string, ct catalog.Tool) listing {
	m := ct.Spec.MCP
	if m == nil {
		return listing{group: name, pos: -1}
	}
	l := listing{group: strings.TrimSuffix(name, mcpOwnName(ct.Spec.Name, g.filter.namespace)), pos: m.Position}
	var def map[string]json.RawMessage
	if len(m.Definition) == 0 || json.Unmarshal(m.Definition, &def) != nil {
		return l
	}
	var own string
	if json.Unmarshal(def["name"], &own) == nil && own != "" {
		l.group = strings.TrimSuffix(name, own)
	}
	if len(ct.Conflicts) > 0 {
		return l
	}
	def["name"], _ = json.Marshal(name)
	l.def, _ = json.Marshal(def)
	return l
}

// mcpOwnName is a bridged tool's name on its server, from its mesh name
// alone: after the served namespace ("<ns>."), else after the first dot.
func mcpOwnName(meshName, namespace string) string {
	if rest, ok := strings.CutPrefix(meshName, namespace); ok && namespace != "" {
		return rest
	}
	_, rest, _ := strings.Cut(meshName, ".")
	return rest
}

// before orders two listings: by group, other tools before bridged ones
// of the same group, bridged ones by their server's position.
func (l listing) before(o listing) bool {
	if l.group != o.group {
		return l.group < o.group
	}
	return l.pos < o.pos
}

// rawToolList is a tools/list result whose tools are written as given
// (listing.def, or the SDK's encoding): everything else — _meta, cursor,
// cache hints, resultType — is the SDK's result it embeds.
type rawToolList struct {
	*mcp.ListToolsResult
	tools []json.RawMessage
}

// MarshalJSON writes the embedded result with tools replaced.
func (r rawToolList) MarshalJSON() ([]byte, error) {
	inner := *r.ListToolsResult
	inner.Tools = nil
	b, err := json.Marshal(&inner)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	tools := r.tools
	if tools == nil {
		tools = []json.RawMessage{}
	}
	if m["tools"], err = json.Marshal(tools); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// listedPage puts one page of tools/list in listing order — when the page is
// the whole list: a later page follows the SDK's cursor, which is a name
// — and writes each tool as its listing says. Call with g.mu held.
func (g *Gateway) listedPage(lr *mcp.ListToolsResult, whole bool) rawToolList {
	at := func(t *mcp.Tool) (listing, bool) {
		st, ok := g.served[t.Name]
		if !ok { // the search tool
			return listing{group: t.Name, pos: -1}, false
		}
		return st.list, true
	}
	if whole {
		slices.SortStableFunc(lr.Tools, func(a, b *mcp.Tool) int {
			la, _ := at(a)
			lb, _ := at(b)
			switch {
			case la.before(lb):
				return -1
			case lb.before(la):
				return 1
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	out := rawToolList{ListToolsResult: lr, tools: make([]json.RawMessage, 0, len(lr.Tools))}
	for _, t := range lr.Tools {
		if l, ok := at(t); ok && l.def != nil {
			out.tools = append(out.tools, l.def)
			continue
		}
		b, err := json.Marshal(t)
		if err != nil {
			continue
		}
		out.tools = append(out.tools, b)
	}
	return out
}
