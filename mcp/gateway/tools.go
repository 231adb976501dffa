package gateway

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
)

// anyObject is the input schema of a tool that declares none: the mesh
// accepts any argument object, and MCP requires an object schema.
var anyObject = json.RawMessage(`{"type":"object"}`)

// mcpTool maps a mesh ToolSpec onto the MCP tool name: its name as served,
// title, description, both schemas and the annotations as MCP hints.
// A non-object output schema is wrapped as {"result": …}, because MCP's
// structuredContent is always an object (see structured).
func mcpTool(name string, s envelope.ToolSpec) (*mcp.Tool, error) {
	in := s.InputSchema
	if len(in) == 0 {
		in = anyObject
	}
	t := &mcp.Tool{
		Name:        name,
		Title:       s.Title,
		Description: s.Description,
		InputSchema: in,
		Annotations: hints(s),
	}
	if len(s.OutputSchema) > 0 && s.MCPResult {
		// It describes structuredContent already.
		t.OutputSchema = s.OutputSchema
	} else if len(s.OutputSchema) > 0 {
		out, err := outputSchema(s.OutputSchema)
		if err != nil {
			return nil, err
		}
		t.OutputSchema = out
	}
	if s.Streaming {
		t.Meta = mcp.Meta{"io.toolmesh/streaming": true}
	}
	return t, nil
}

// hints maps the mesh's annotations onto MCP's, passing through only what
// the tool declared: nil when it declared none. (The SDK always writes
// readOnlyHint and idempotentHint; unset, they are MCP's default false.)
func hints(s envelope.ToolSpec) *mcp.ToolAnnotations {
	a := s.Annotations
	if a == nil || *a == (envelope.Annotations{}) {
		return nil
	}
	return &mcp.ToolAnnotations{
		ReadOnlyHint:    a.IsReadOnly(),
		DestructiveHint: a.Destructive,
		IdempotentHint:  a.IsIdempotent(),
		OpenWorldHint:   a.OpenWorld,
	}
}

// outputSchema returns an object output schema for MCP: the tool's own
// when it is an object schema, else one wrapping it under "result".
func outputSchema(raw json.RawMessage) (json.RawMessage, error) {
	var head struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("output_schema: %w", err)
	}
	if head.Type == "object" {
		return raw, nil
	}
	return json.Marshal(map[string]any{
		"type":       "object",
		"properties": map[string]json.RawMessage{"result": raw},
		"required":   []string{"result"},
	})
}

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
// mcpTool of its spec, marked when workers give different specs for it
// (see markConflict).
func servedDef(name string, ct catalog.Tool) (*mcp.Tool, error) {
	t, err := mcpTool(name, ct.Spec)
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
