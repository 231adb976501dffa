// Package provider lowers toolmesh's envelope into the wire shapes of the
// model providers an agent talks to — OpenAI Chat Completions, OpenAI
// Responses, Anthropic Messages, Google Gemini — and into MCP: tool
// declarations (Export), the model's tool calls back into mesh calls
// (ParseCalls) and a ResponseFormat into each request's native
// structured-output fields (LowerResponseFormat). caller.Dispatch runs the
// calls and turns their outcomes into the provider's tool-result messages.
//
// Everything here is a pure function over JSON: no provider SDK, no
// network. Which variant a provider gets (OpenAI strict mode, Gemini's
// JSON Schema or legacy OpenAPI subset, Anthropic's native output format or
// a forced tool) comes from a capability table keyed by provider and model
// family (ExportOptions.Model), never from host names.
package provider
