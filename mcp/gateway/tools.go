package gateway

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mcp/internal/mcpmap"
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
