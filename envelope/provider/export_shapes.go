package provider

import (
	"encoding/json"

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
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
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
	strict := ts.Capabilities.Tools == schemaStrict
	if strict {
		r := makeStrict(params)
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

// geminiTool builds a function declaration in JSON Schema
// (parametersJsonSchema, responseJsonSchema), for every model: the
// legacy OpenAPI-subset Schema (parameters, response) cannot satisfy the
// official SDKs' types at once — @google/genai types "type" as an enum and
// int64 members as strings, google.golang.org/genai takes numbers — so a
// declaration in it would fail one SDK or the other.
func (ts *Toolset) geminiTool(s envelope.ToolSpec, name string) (any, error) {
	return geminiFunction{Name: name, Description: description(s),
		ParametersJSONSchema: withoutSchemaURI(inputSchema(s)),
		ResponseJSONSchema:   withoutSchemaURI(s.OutputSchema)}, nil
}

// geminiTools wraps function declarations into the request's tools
// member: Tool[] holding one Tool whose functionDeclarations are them.
func geminiTools(decls []json.RawMessage) []json.RawMessage {
	if len(decls) == 0 {
		return []json.RawMessage{}
	}
	return []json.RawMessage{mustJSON(map[string]any{"functionDeclarations": decls})}
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
