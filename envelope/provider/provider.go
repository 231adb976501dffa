package provider

import (
	"fmt"
	"strings"
)

// Provider names one wire shape a model or protocol speaks.
type Provider string

// The shapes the package lowers into.
const (
	OpenAI          Provider = "openai"           // Chat Completions
	OpenAIResponses Provider = "openai-responses" // Responses API
	Anthropic       Provider = "anthropic"        // Messages API
	Gemini          Provider = "gemini"           // generateContent
	MCP             Provider = "mcp"              // Model Context Protocol
)

// providers lists every provider, in a stable order.
func providers() []Provider { return []Provider{OpenAI, OpenAIResponses, Anthropic, Gemini, MCP} }

// ParseProvider reads a provider name as the command line spells it.
func ParseProvider(s string) (Provider, error) {
	for _, p := range providers() {
		if string(p) == s {
			return p, nil
		}
	}
	names := make([]string, 0, 5)
	for _, p := range providers() {
		names = append(names, string(p))
	}
	return "", fmt.Errorf("unknown provider %q (want %s)", s, strings.Join(names, ", "))
}

// nameRule returns the provider's tool-name rule. Anthropic documents
// 128 characters, but some of its front ends accept only 64, so 64 is used:
// one export then works everywhere.
func (p Provider) nameRule() nameRule {
	switch p {
	case Gemini:
		return nameRule{MaxLen: 64, Dots: true, Colons: true, LetterFirst: true}
	case MCP:
		return nameRule{MaxLen: 128, Dots: true}
	}
	return nameRule{MaxLen: 64}
}

// FormatStrategy is how a provider's request carries a ResponseFormat.
type FormatStrategy string

// The strategies, from most to least native.
const (
	// FormatNative: the provider's own JSON Schema output (OpenAI
	// json_schema, Gemini responseJsonSchema, Anthropic output_config).
	FormatNative FormatStrategy = "native"
	// FormatOrderedSchema: Gemini responseJsonSchema with an explicit
	// propertyOrdering on every object (gemini-2.0, which does not keep
	// the schema's key order on its own).
	FormatOrderedSchema FormatStrategy = "ordered_json_schema"
	// FormatLegacySchema: Gemini's OpenAPI-subset responseSchema
	// (gemini-1, retired models that predate responseJsonSchema).
	FormatLegacySchema FormatStrategy = "legacy_schema"
	// FormatForcedTool: a synthetic tool the model is forced to call, whose
	// input is the answer (Anthropic models without output_config).
	FormatForcedTool FormatStrategy = "forced_tool"
	// FormatJSONObjectPrompt: JSON mode plus the schema in the system prompt.
	FormatJSONObjectPrompt FormatStrategy = "json_object_prompt"
)

// ToolSchemaStyle is how a provider's tool declarations carry a schema.
type ToolSchemaStyle string

// The tool schema styles.
const (
	// SchemaJSON: JSON Schema as given (Anthropic, MCP, Gemini parametersJsonSchema).
	SchemaJSON ToolSchemaStyle = "json_schema"
	// SchemaStrict: OpenAI strict mode where the schema allows it.
	SchemaStrict ToolSchemaStyle = "strict"
	// SchemaLegacy: the models of Gemini's OpenAPI-subset Schema
	// (gemini-1*, gemini-2.0*). Their tools are still declared in JSON
	// Schema (parametersJsonSchema), with a note: the subset's JSON cannot
	// satisfy the official SDKs' types (see Toolset).
	SchemaLegacy ToolSchemaStyle = "legacy"
)

// Capabilities is what one provider and model family support.
type Capabilities struct {
	Format FormatStrategy  `json:"format"`
	Tools  ToolSchemaStyle `json:"tools"`
}

// CapabilityRule gives the capabilities of the models of Provider whose
// name starts with ModelPrefix ("" matches every model).
type CapabilityRule struct {
	Provider    Provider     `json:"provider"`
	ModelPrefix string       `json:"model_prefix"`
	Caps        Capabilities `json:"capabilities"`
}

// CapabilityTable maps provider and model family to capabilities. The
// longest matching prefix wins; earlier rules win ties, so a caller
// overrides an entry by putting its own rule first.
type CapabilityTable []CapabilityRule

// DefaultCapabilities is the table the package ships: model families as
// the providers document them. A model it does not know gets its
// provider's "" rule, the current generation's behaviour.
func DefaultCapabilities() CapabilityTable {
	return CapabilityTable{
		{OpenAI, "", Capabilities{FormatNative, SchemaStrict}},
		{OpenAI, "gpt-3.5", Capabilities{FormatJSONObjectPrompt, SchemaStrict}},
		{OpenAI, "gpt-4-turbo", Capabilities{FormatJSONObjectPrompt, SchemaStrict}},
		{OpenAI, "gpt-4-", Capabilities{FormatJSONObjectPrompt, SchemaStrict}},
		{OpenAIResponses, "", Capabilities{FormatNative, SchemaStrict}},
		{Anthropic, "", Capabilities{FormatNative, SchemaJSON}},
		{Anthropic, "claude-3", Capabilities{FormatForcedTool, SchemaJSON}},
		{Anthropic, "claude-sonnet-4-2", Capabilities{FormatForcedTool, SchemaJSON}},
		{Anthropic, "claude-opus-4-2", Capabilities{FormatForcedTool, SchemaJSON}},
		{Anthropic, "claude-opus-4-0", Capabilities{FormatForcedTool, SchemaJSON}},
		{Anthropic, "claude-sonnet-4-0", Capabilities{FormatForcedTool, SchemaJSON}},
		{Gemini, "", Capabilities{FormatNative, SchemaJSON}},
		{Gemini, "gemini-1", Capabilities{FormatLegacySchema, SchemaLegacy}},
		{Gemini, "gemini-2.0", Capabilities{FormatOrderedSchema, SchemaLegacy}},
		{MCP, "", Capabilities{FormatNative, SchemaJSON}},
	}
}

// lookup returns the capabilities of model on provider.
func (t CapabilityTable) lookup(p Provider, model string) (Capabilities, error) {
	best := -1
	for i, r := range t {
		if r.Provider != p || !strings.HasPrefix(model, r.ModelPrefix) {
			continue
		}
		if best < 0 || len(r.ModelPrefix) > len(t[best].ModelPrefix) {
			best = i
		}
	}
	if best < 0 {
		return Capabilities{}, fmt.Errorf("capability table has no rule for provider %q model %q", p, model)
	}
	return t[best].Caps, nil
}
