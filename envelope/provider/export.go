package provider

import (
	"encoding/json"
	"fmt"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Note is one thing an export or a lowering could not carry as given:
// which tool (or "" for a response format) and what happened.
type Note struct {
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message"`
}

// Toolset is a catalogue exported for one provider: Tools is the
// request's tools member as the provider takes it (one element per tool,
// except Gemini's Tool[] of one Tool whose functionDeclarations hold every
// tool), the name map that turns the model's calls back
// into mesh tools, and notes on everything lowered. Complete is false,
// with the gaps in Notes, when a tool could not be exported at all.
type Toolset struct {
	Provider     Provider          `json:"provider"`
	Model        string            `json:"model,omitempty"`
	Capabilities Capabilities      `json:"capabilities"`
	Tools        []json.RawMessage `json:"tools"`
	Names        NameMap           `json:"names"`
	Complete     bool              `json:"complete"`
	Notes        []Note            `json:"notes,omitempty"`
	// SearchTool names the tool search a deferred export added (see
	// ExportOptions.Defer): calls to it are searches, not mesh calls.
	SearchTool string `json:"search_tool,omitempty"`

	// specs are the exported tools by mesh name; ParseCalls uses their
	// input schemas to undo strict mode's "optional as null".
	specs map[string]envelope.ToolSpec
}

// ExportOptions selects the provider and model an export is for.
type ExportOptions struct {
	Provider Provider
	// Model picks the capability row ("" = the provider's current models).
	Model string
	// caps, when set, replaces the table lookup, and table replaces the
	// shipped table: the package's tests pin the lowering per capability.
	caps  *Capabilities
	table capabilityTable
	// Defer marks every tool for deferred loading, in the shape the
	// provider defines (OpenAI Responses: namespaces from dotted names and
	// defer_loading; Anthropic: defer_loading), with a tool search the
	// client runs; caller.Dispatch answers it from the mesh's index.
	// Providers without deferred loading are exported whole, with a note.
	Defer bool
}

// Spec returns the spec ts offered the model for the mesh tool named
// tool, so a call the model makes can say which spec it was made against
// (caller.WithSpec); false for a tool ts does not offer, and for a
// Toolset decoded from JSON, which carries the declarations only.
func (ts *Toolset) Spec(tool string) (envelope.ToolSpec, bool) {
	s, ok := ts.specs[tool]
	return s, ok
}

// capabilities resolves the options' capabilities.
func (o ExportOptions) capabilities() (Capabilities, error) {
	if o.caps != nil {
		return *o.caps, nil
	}
	t := o.table
	if t == nil {
		t = defaultCapabilities()
	}
	return t.lookup(o.Provider, o.Model)
}

// Export lowers specs into the provider's tool declarations. A spec that
// does not validate, or whose schema the provider cannot express, is left
// out with a note and Complete false; nothing is ever silently dropped.
func Export(specs []envelope.ToolSpec, o ExportOptions) (*Toolset, error) {
	caps, err := o.capabilities()
	if err != nil {
		return nil, err
	}
	ts := &Toolset{Provider: o.Provider, Model: o.Model, Capabilities: caps, Tools: []json.RawMessage{},
		Complete: true, specs: map[string]envelope.ToolSpec{}}
	valid := ts.exportable(specs)
	names := make([]string, len(valid))
	for i, s := range valid {
		names[i] = s.Name
	}
	ts.Names = mapNames(o.Provider.nameRule(), names)
	if o.Defer && o.Provider.defers() {
		valid = ts.dropSearchNamesake(valid)
	}
	for _, s := range valid {
		if err := ts.exportOne(s); err != nil {
			ts.gap(s.Name, "not exported: "+err.Error())
		}
	}
	if o.Provider == Gemini {
		ts.Tools = geminiTools(ts.Tools)
		if caps.Tools == schemaLegacy {
			ts.note("", "declared in JSON Schema (parametersJsonSchema): the legacy Schema form fails the official SDKs' types")
		}
	}
	if o.Defer {
		if err := ts.deferTools(); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// exportable keeps the specs that are tools for a model: valid, named
// once, and not an MCP surface tool (a bridged server's resources, prompts
// and completions, which MCP clients reach through toolmesh mcp as MCP's
// own methods; one note says how many were left out).
func (ts *Toolset) exportable(specs []envelope.ToolSpec) []envelope.ToolSpec {
	var valid []envelope.ToolSpec
	surface := 0
	for _, s := range specs {
		if _, _, ok := wire.SplitMCPSurface(s.Name, s.Tags); ok {
			surface++
			continue
		}
		switch err := s.Validate(); {
		case err != nil:
			ts.gap(s.Name, "not exported: "+err.Error())
		case ts.specs[s.Name].Name != "":
			ts.gap(s.Name, "not exported: a second spec with the same name")
		default:
			ts.specs[s.Name] = s
			valid = append(valid, s)
		}
	}
	if surface > 0 {
		ts.note("", fmt.Sprintf("left out %d MCP surface tools (bridged servers' resources, prompts and completions: MCP methods that toolmesh mcp serves, not tools)", surface))
	}
	return valid
}

// dropSearchNamesake leaves out, as a gap, the tool whose provider name
// is the deferred export's tool search (searchToolName): the model's
// calls to it would be taken for searches.
func (ts *Toolset) dropSearchNamesake(valid []envelope.ToolSpec) []envelope.ToolSpec {
	mesh, ok := ts.Names.meshName(searchToolName)
	if !ok {
		return valid
	}
	ts.gap(mesh, fmt.Sprintf("not exported: its name %q is the deferred export's tool search; rename the tool to export it", searchToolName))
	kept := make([]envelope.ToolSpec, 0, len(valid)-1)
	for _, s := range valid {
		if s.Name != mesh {
			kept = append(kept, s)
		}
	}
	return kept
}

func (ts *Toolset) gap(tool, msg string) {
	ts.Complete = false
	ts.Notes = append(ts.Notes, Note{Tool: tool, Message: msg})
	if _, ok := ts.specs[tool]; ok {
		delete(ts.specs, tool)
		delete(ts.Names.toMesh, ts.Names.toProvider[tool])
		delete(ts.Names.toProvider, tool)
	}
}

func (ts *Toolset) note(tool string, msgs ...string) {
	for _, m := range msgs {
		ts.Notes = append(ts.Notes, Note{Tool: tool, Message: m})
	}
}

// exportOne appends one tool's declaration.
func (ts *Toolset) exportOne(s envelope.ToolSpec) error {
	name, _ := ts.Names.ProviderName(s.Name)
	if name != s.Name {
		ts.note(s.Name, fmt.Sprintf("exported as %q", name))
	}
	var tool any
	var err error
	switch ts.Provider {
	case OpenAI, OpenAIResponses:
		tool = ts.openAITool(s, name)
	case Anthropic:
		tool = anthropicTool{Name: name, Description: description(s), InputSchema: inputSchema(s)}
	case Gemini:
		tool, err = ts.geminiTool(s, name)
	case MCP:
		tool = ts.mcpTool(s, name)
	default:
		return fmt.Errorf("unknown provider %q", ts.Provider)
	}
	if err != nil {
		return err
	}
	b, err := json.Marshal(tool)
	if err != nil {
		return err
	}
	ts.Tools = append(ts.Tools, b)
	return nil
}

// description is the text a model reads to choose the tool: the
// description, else the title.
func description(s envelope.ToolSpec) string {
	if s.Description != "" {
		return s.Description
	}
	return s.Title
}

// inputSchema is the tool's input schema, or "any object" when it has none.
func inputSchema(s envelope.ToolSpec) json.RawMessage {
	if len(s.InputSchema) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return s.InputSchema
}
