package provider

import (
	"encoding/json"
	"fmt"

	"github.com/toolmesh/toolmesh/envelope"
)

// openAIFunction is Chat Completions' function definition.
type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type openAIChatTool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

// responsesTool is the Responses API's flat function tool.
type responsesTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	Parameters   json.RawMessage `json:"parameters"`
	Strict       bool            `json:"strict"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type geminiFunction struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	Response             json.RawMessage `json:"response,omitempty"`
	ResponseJSONSchema   json.RawMessage `json:"responseJsonSchema,omitempty"`
}

// mcpAnnotations are MCP's tool hints. readOnlyHint and idempotentHint
// default to false, so they are always written (as the MCP Go SDK does);
// destructiveHint and openWorldHint default to true and are written only
// when the spec sets them.
type mcpAnnotations struct {
	ReadOnlyHint    bool  `json:"readOnlyHint"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  bool  `json:"idempotentHint"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

type mcpTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *mcpAnnotations `json:"annotations,omitempty"`
}

// openAITool builds a Chat or Responses function tool, strict when the
// schema can be made strict and strict:false with the reason otherwise.
func (ts *Toolset) openAITool(s envelope.ToolSpec, name string) any {
	params := inputSchema(s)
	strict := ts.Capabilities.Tools == SchemaStrict
	if strict {
		r := Strict(params)
		strict = r.Strict
		params = r.Schema
		ts.note(s.Name, r.Notes...)
		if !r.Strict {
			ts.note(s.Name, "strict:false: "+r.Reason)
		}
	}
	if ts.Provider == OpenAI {
		return openAIChatTool{Type: "function", Function: openAIFunction{Name: name, Description: description(s), Parameters: params, Strict: strict}}
	}
	return responsesTool{Type: "function", Name: name, Description: description(s), Parameters: params, Strict: strict, OutputSchema: s.OutputSchema}
}

// geminiTool builds a function declaration: JSON Schema members where the
// model takes them, else the legacy subset, whose failures (a $ref cycle)
// leave the tool out.
func (ts *Toolset) geminiTool(s envelope.ToolSpec, name string) (any, error) {
	f := geminiFunction{Name: name, Description: description(s)}
	if ts.Capabilities.Tools != SchemaLegacy {
		f.ParametersJSONSchema = withoutSchemaURI(inputSchema(s))
		f.ResponseJSONSchema = withoutSchemaURI(s.OutputSchema)
		return f, nil
	}
	if len(s.InputSchema) == 0 {
		ts.note(s.Name, "no input schema: declared without parameters")
	} else {
		r, err := Legacy(s.InputSchema)
		ts.note(s.Name, prefixed("parameters", r.Notes)...)
		if err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		f.Parameters = r.Schema
	}
	if len(s.OutputSchema) > 0 {
		r, err := Legacy(s.OutputSchema)
		ts.note(s.Name, prefixed("response", r.Notes)...)
		if err != nil {
			ts.note(s.Name, "response schema left out: "+err.Error())
		} else {
			f.Response = r.Schema
		}
	}
	return f, nil
}

// withoutSchemaURI drops a root "$schema" member, which Gemini's endpoint
// refuses even in its JSON Schema fields.
func withoutSchemaURI(schema json.RawMessage) json.RawMessage {
	v, err := decodeJSON(schema)
	o, ok := v.(obj)
	if err != nil || !ok || o["$schema"] == nil {
		return schema
	}
	delete(o, "$schema")
	return mustJSON(o)
}

func prefixed(what string, notes []string) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = what + " " + n
	}
	return out
}

// mcpTool builds an MCP Tool with title, annotations and output schema
// (MCP wants an object output schema; another is left out with a note).
func (ts *Toolset) mcpTool(s envelope.ToolSpec, name string) any {
	t := mcpTool{Name: name, Title: s.Title, Description: s.Description, InputSchema: inputSchema(s)}
	if len(s.OutputSchema) > 0 {
		var head struct {
			Type any `json:"type"`
		}
		if json.Unmarshal(s.OutputSchema, &head) == nil && head.Type == "object" {
			t.OutputSchema = s.OutputSchema
		} else {
			ts.note(s.Name, `outputSchema left out: MCP requires {"type":"object"}; the result still travels as text`)
		}
	}
	if a := s.Annotations; a != nil {
		t.Annotations = &mcpAnnotations{ReadOnlyHint: a.IsReadOnly(), DestructiveHint: a.Destructive,
			IdempotentHint: a.IsIdempotent(), OpenWorldHint: a.OpenWorld}
	}
	return t
}
