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

// The strategies by which a provider's request carries a ResponseFormat
// (Capabilities.Format, Lowered.Strategy), from most to least native.
const (
	// formatNative: the provider's own JSON Schema output (OpenAI
	// json_schema, Gemini responseJsonSchema, Anthropic output_config).
	formatNative = "native"
	// formatOrderedSchema: Gemini responseJsonSchema with an explicit
	// propertyOrdering on every object (gemini-2.0, which does not keep
	// the schema's key order on its own).
	formatOrderedSchema = "ordered_json_schema"
	// formatLegacySchema: Gemini's OpenAPI-subset responseSchema
	// (gemini-1, retired models that predate responseJsonSchema).
	formatLegacySchema = "legacy_schema"
	// formatForcedTool: a synthetic tool the model is forced to call, whose
	// input is the answer (Anthropic models without output_config).
	formatForcedTool = "forced_tool"
	// formatJSONObjectPrompt: JSON mode plus the schema in the system prompt.
	formatJSONObjectPrompt = "json_object_prompt"
)

// The styles in which a provider's tool declarations carry a schema
// (Capabilities.Tools).
const (
	// schemaJSON: JSON Schema as given (Anthropic, MCP, Gemini parametersJsonSchema).
	schemaJSON = "json_schema"
	// schemaStrict: OpenAI strict mode where the schema allows it.
	schemaStrict = "strict"
	// schemaLegacy: the models of Gemini's OpenAPI-subset Schema
	// (gemini-1*, gemini-2.0*). Their tools are still declared in JSON
	// Schema (parametersJsonSchema), with a note: the subset's JSON cannot
	// satisfy the official SDKs' types (see Toolset).
	schemaLegacy = "legacy"
)

// Capabilities is what one provider and model family support.
type Capabilities struct {
	// Format is how a response format is carried: native,
	// ordered_json_schema, legacy_schema, forced_tool or json_object_prompt.
	Format string `json:"format"`
	// Tools is how tool schemas are carried: json_schema, strict or legacy.
	Tools string `json:"tools"`
}

// capabilityRule gives the capabilities of the models of Provider whose
// name starts with ModelPrefix ("" matches every model).
type capabilityRule struct {
	Provider    Provider     `json:"provider"`
	ModelPrefix string       `json:"model_prefix"`
	Caps        Capabilities `json:"capabilities"`
}

// capabilityTable maps provider and model family to capabilities. The
// longest matching prefix wins; earlier rules win ties, so a rule put
// first overrides the shipped one.
type capabilityTable []capabilityRule

// defaultCapabilities is the table the package ships: model families as
// the providers document them. A model it does not know gets its
// provider's "" rule, the current generation's behaviour.
func defaultCapabilities() capabilityTable {
	return capabilityTable{
		{OpenAI, "", Capabilities{formatNative, schemaStrict}},
		{OpenAI, "gpt-3.5", Capabilities{formatJSONObjectPrompt, schemaStrict}},
		{OpenAI, "gpt-4-turbo", Capabilities{formatJSONObjectPrompt, schemaStrict}},
		{OpenAI, "gpt-4-", Capabilities{formatJSONObjectPrompt, schemaStrict}},
		{OpenAIResponses, "", Capabilities{formatNative, schemaStrict}},
		{Anthropic, "", Capabilities{formatNative, schemaJSON}},
		{Anthropic, "claude-3", Capabilities{formatForcedTool, schemaJSON}},
		{Anthropic, "claude-sonnet-4-2", Capabilities{formatForcedTool, schemaJSON}},
		{Anthropic, "claude-opus-4-2", Capabilities{formatForcedTool, schemaJSON}},
		{Anthropic, "claude-opus-4-0", Capabilities{formatForcedTool, schemaJSON}},
		{Anthropic, "claude-sonnet-4-0", Capabilities{formatForcedTool, schemaJSON}},
		{Gemini, "", Capabilities{formatNative, schemaJSON}},
		{Gemini, "gemini-1", Capabilities{formatLegacySchema, schemaLegacy}},
		{Gemini, "gemini-2.0", Capabilities{formatOrderedSchema, schemaLegacy}},
		{MCP, "", Capabilities{formatNative, schemaJSON}},
	}
}

// lookup returns the capabilities of model on provider.
func (t capabilityTable) lookup(p Provider, model string) (Capabilities, error) {
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
