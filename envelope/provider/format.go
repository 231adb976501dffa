package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolmesh/toolmesh/envelope"
)

// structuredOutputTool is the name of the synthetic tool a ForcedTool
// lowering forces the model to call; its input is the answer.
const structuredOutputTool = "structured_output"

// Lowered is a ResponseFormat in one provider's request: members to merge
// into the request body, tools to append to its tools, and text to append
// to its system prompt. Notes say what could not be carried as asked.
type Lowered struct {
	Strategy string                     `json:"strategy"`
	Request  map[string]json.RawMessage `json:"request,omitempty"`
	Tools    []json.RawMessage          `json:"tools,omitempty"`
	System   string                     `json:"system,omitempty"`
	Notes    []Note                     `json:"notes,omitempty"`
}

// LowerResponseFormat lowers rf for the provider and model of o, by the
// capability table: OpenAI Chat response_format and
// Responses text.format; Gemini responseMimeType with responseJsonSchema
// (with an explicit propertyOrdering for gemini-2.0) or, for the retired
// gemini-1 models, the legacy responseSchema; Anthropic output_config.format or a
// forced structured_output tool; JSON mode plus the schema in the system
// prompt where only JSON mode exists. A strict request that cannot be
// made strict is sent strict:false with a note saying why.
func LowerResponseFormat(rf envelope.ResponseFormat, o ExportOptions) (Lowered, error) {
	if err := rf.Validate(); err != nil {
		return Lowered{}, err
	}
	if o.Provider == MCP {
		return Lowered{}, errors.New("mcp: the protocol has no model request to carry a response format; the worker enforces it on the call")
	}
	caps, err := o.capabilities()
	if err != nil {
		return Lowered{}, err
	}
	l := &Lowered{Strategy: caps.Format, Request: map[string]json.RawMessage{}}
	switch rf.Type {
	case envelope.FormatFree:
		l.Strategy = formatNative
	case envelope.FormatJSONObject:
		l.jsonObject(o.Provider)
	case envelope.FormatJSONSchema:
		err = l.jsonSchema(o.Provider, *rf.JSONSchema)
	}
	if len(l.Request) == 0 {
		l.Request = nil
	}
	return *l, err
}

const jsonObjectPrompt = "Respond with a single JSON object and no other text."

// jsonObject lowers "any JSON object".
func (l *Lowered) jsonObject(p Provider) {
	switch p {
	case OpenAI:
		l.Strategy = formatNative
		l.set("response_format", map[string]string{"type": "json_object"})
		l.System = jsonObjectPrompt // JSON mode requires the word JSON in the messages
	case OpenAIResponses:
		l.Strategy = formatNative
		l.set("text", map[string]any{"format": map[string]string{"type": "json_object"}})
		l.System = jsonObjectPrompt
	case Gemini:
		l.Strategy = formatNative
		l.set("generationConfig", map[string]string{"responseMimeType": "application/json"})
	case Anthropic:
		l.Strategy = formatJSONObjectPrompt
		l.System = jsonObjectPrompt
		l.Notes = append(l.Notes, Note{Message: "Anthropic has no JSON mode: the instruction goes in the system prompt; check the answer"})
	}
}

func (l *Lowered) set(member string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("provider: encoding %s: %v", member, err))
	}
	l.Request[member] = b
}

// schemaPrompt is the system-prompt fallback for a schema.
func schemaPrompt(f envelope.JSONSchemaFormat) string {
	return fmt.Sprintf("Respond with only a JSON value, no other text, that matches this JSON Schema (%s):\n%s", f.Name, compact(f.Schema))
}

// compact is b without insignificant white space (b itself when it is not
// valid JSON).
func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}
