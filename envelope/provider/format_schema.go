package provider

import (
	"encoding/json"

	"github.com/toolmesh/toolmesh/envelope"
)

// jsonSchema lowers a json_schema format by the strategy in l.
func (l *Lowered) jsonSchema(p Provider, f envelope.JSONSchemaFormat) error {
	switch l.Strategy {
	case formatJSONObjectPrompt:
		l.promptFallback(p, f)
		return nil
	case formatForcedTool:
		return l.forcedTool(f)
	case formatLegacySchema:
		return l.geminiLegacy(f)
	case formatOrderedSchema:
		l.set("generationConfig", map[string]any{"responseMimeType": "application/json",
			"responseJsonSchema": withPropertyOrdering(withoutSchemaURI(f.Schema))})
		return nil
	}
	switch p {
	case OpenAI:
		schema, strict := l.strictSchema(f)
		l.set("response_format", map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": f.Name, "schema": schema, "strict": strict}})
	case OpenAIResponses:
		schema, strict := l.strictSchema(f)
		l.set("text", map[string]any{"format": map[string]any{"type": "json_schema",
			"name": f.Name, "schema": schema, "strict": strict}})
	case Gemini:
		l.set("generationConfig", map[string]any{"responseMimeType": "application/json", "responseJsonSchema": withoutSchemaURI(f.Schema)})
	case Anthropic:
		return l.anthropicNative(f)
	}
	return nil
}

// anthropicNative uses output_config.format, whose schemas must close
// every object like OpenAI's strict mode; a schema that cannot be closed
// (an open map) goes through the forced tool instead.
func (l *Lowered) anthropicNative(f envelope.JSONSchemaFormat) error {
	r := makeStrict(f.Schema)
	if !r.Strict {
		l.Notes = append(l.Notes, Note{Message: "output_config needs closed objects (" + r.Reason + "): forced tool instead"})
		l.Strategy = formatForcedTool
		return l.forcedTool(f)
	}
	for _, n := range r.Notes {
		l.Notes = append(l.Notes, Note{Message: n})
	}
	l.set("output_config", map[string]any{"format": map[string]any{"type": "json_schema", "schema": r.Schema}})
	return nil
}

// strictSchema applies strict mode when the format asks for it.
func (l *Lowered) strictSchema(f envelope.JSONSchemaFormat) (json.RawMessage, bool) {
	if !f.Strict {
		return f.Schema, false
	}
	r := makeStrict(f.Schema)
	for _, n := range r.Notes {
		l.Notes = append(l.Notes, Note{Message: n})
	}
	if !r.Strict {
		l.Notes = append(l.Notes, Note{Message: "strict:false: " + r.Reason})
	}
	return r.Schema, r.Strict
}

// promptFallback is JSON mode plus the schema in the system prompt.
func (l *Lowered) promptFallback(p Provider, f envelope.JSONSchemaFormat) {
	l.jsonObject(p)
	l.Strategy = formatJSONObjectPrompt
	l.System = schemaPrompt(f)
}

// forcedTool declares a structured_output tool with the schema as its
// input and forces the model to call it (Anthropic before output_config).
func (l *Lowered) forcedTool(f envelope.JSONSchemaFormat) error {
	var head struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(f.Schema, &head) != nil || head.Type != "object" {
		l.Notes = append(l.Notes, Note{Message: "a tool input must be an object schema: the schema goes in the system prompt instead"})
		l.Strategy = formatJSONObjectPrompt
		l.System = schemaPrompt(f)
		return nil
	}
	tool, err := json.Marshal(anthropicTool{Name: structuredOutputTool,
		Description: "Give your final answer (" + f.Name + ") by calling this tool with it as the input.", InputSchema: f.Schema})
	if err != nil {
		return err
	}
	l.Tools = []json.RawMessage{tool}
	l.set("tool_choice", map[string]string{"type": "tool", "name": structuredOutputTool})
	return nil
}

// geminiLegacy lowers to responseSchema; a schema the subset cannot hold
// (a $ref cycle) falls back to the system prompt, with a note.
func (l *Lowered) geminiLegacy(f envelope.JSONSchemaFormat) error {
	r, err := toLegacy(f.Schema)
	for _, n := range r.Notes {
		l.Notes = append(l.Notes, Note{Message: "responseSchema " + n})
	}
	if err != nil {
		l.Notes = append(l.Notes, Note{Message: "responseSchema impossible (" + err.Error() + "): the schema goes in the system prompt"})
		l.promptFallback(Gemini, f)
		return nil
	}
	l.set("generationConfig", map[string]any{"responseMimeType": "application/json", "responseSchema": r.Schema})
	return nil
}
