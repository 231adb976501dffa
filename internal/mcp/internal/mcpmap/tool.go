package mcpmap

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// anyObject is the input schema of a tool that declares none: the mesh
// accepts any argument object, and MCP requires an object schema.
var anyObject = json.RawMessage(`{"type":"object"}`)

// Tag is the tag every tool Spec maps from an MCP server carries.
const Tag = "mcp"

// Spec maps an MCP server's tool onto a mesh ToolSpec named
// <namespace>.<name>, the inverse of Tool: its title (the annotations'
// title when the tool has none of its own), description, schemas
// normalised for the mesh (NormaliseInput, NormaliseOutput; the changes
// are returned and written into the schema's $comment) and annotations.
// Its results are MCP results (MCPResult). Only the hints the server
// declared become annotations: the SDK decodes an absent readOnlyHint or
// idempotentHint as false, MCP's default, so false is left unset rather
// than declared.
func Spec(namespace string, t *mcp.Tool) (envelope.ToolSpec, []string, error) {
	s := envelope.ToolSpec{Name: namespace + "." + t.Name, Title: t.Title, Description: t.Description, Tags: []string{Tag}, MCPResult: true}
	if err := envelope.ValidateToolName(s.Name); err != nil {
		return s, nil, fmt.Errorf("its name cannot be a mesh tool name: %v", err)
	}
	if wire.IsMCPSurfaceReserved(t.Name) {
		return s, nil, fmt.Errorf("its name starts with %q, which the mesh reserves for the server's resources and prompts", wire.MCPSurfaceSegment+".")
	}
	var changes []string
	var err error
	if s.InputSchema, changes, err = normalised("inputSchema", t.InputSchema, NormaliseInput); err != nil {
		return s, nil, err
	}
	if t.OutputSchema != nil {
		var more []string
		if s.OutputSchema, more, err = normalised("outputSchema", t.OutputSchema, NormaliseOutput); err != nil {
			return s, nil, err
		}
		changes = append(changes, more...)
	}
	if a := t.Annotations; a != nil {
		if s.Title == "" {
			s.Title = a.Title
		}
		ann := envelope.Annotations{ReadOnly: trueOnly(a.ReadOnlyHint), Destructive: a.DestructiveHint,
			Idempotent: trueOnly(a.IdempotentHint), OpenWorld: a.OpenWorldHint}
		if ann != (envelope.Annotations{}) {
			s.Annotations = &ann
		}
	}
	return s, changes, s.Validate()
}

// normalised is a tool's schema (the member named what) encoded and
// made a mesh schema by normalise, with what normalise changed.
func normalised(what string, schema any, normalise func(json.RawMessage) (json.RawMessage, []string, error)) (json.RawMessage, []string, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	return normalise(b)
}

// Listed records on a spec made by Spec the server's own definition of
// the tool (def, as its tools/list sent it; nil when the bridge could not
// see it) and its position in that list (spec.MCP), and takes the hints
// readOnlyHint and idempotentHint from def as the server wrote them,
// false included, absent left unset.
func Listed(s *envelope.ToolSpec, def json.RawMessage, position int) {
	s.MCP = &envelope.MCPTool{Definition: def, Position: position}
	var raw struct {
		Annotations *struct {
			ReadOnly   *bool `json:"readOnlyHint"`
			Idempotent *bool `json:"idempotentHint"`
		} `json:"annotations"`
	}
	if len(def) == 0 || json.Unmarshal(def, &raw) != nil || raw.Annotations == nil {
		return
	}
	ann := envelope.Annotations{}
	if s.Annotations != nil {
		ann = *s.Annotations
	}
	ann.ReadOnly, ann.Idempotent = raw.Annotations.ReadOnly, raw.Annotations.Idempotent
	s.Annotations = nil
	if ann != (envelope.Annotations{}) {
		s.Annotations = &ann
	}
}

// trueOnly is &v when v is true, else nil (unset: MCP's default false).
func trueOnly(v bool) *bool {
	if !v {
		return nil
	}
	return &v
}

// Tool maps a mesh ToolSpec onto the MCP tool served as name, the inverse
// of Spec: title, description, both schemas and the annotations as MCP
// hints. A non-object output schema of a tool whose results are not MCP
// results is wrapped as {"result": …}, because MCP's structuredContent is
// always an object (see StructuredResult).
func Tool(name string, s envelope.ToolSpec) (*mcp.Tool, error) {
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
