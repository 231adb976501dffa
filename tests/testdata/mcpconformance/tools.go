package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The suite's minimal media: a 1x1 red PNG and a WAV header with one sample.
const (
	imagePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	audioWAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// noArgs is the input schema of a tool without arguments.
const noArgs = `{"type":"object","properties":{}}`

// schema2020 is json-schema-2020-12's input schema, kept as written:
// $schema, $defs with an $anchor, $ref, allOf/anyOf, if/then/else and
// additionalProperties (SEP-1613, SEP-2106).
const schema2020 = (`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
	`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},` +
	`"phone":{"type":"string"},"email":{"type":"string"}},` +
	`"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],` +
	`"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},` +
	`"additionalProperties":false}`)

func mustDecode(b64 string) []byte {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		panic(err)
	}
	return b
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// fixed registers a zero-argument tool that always returns res.
func fixed(s *mcp.Server, name, desc string, res *mcp.CallToolResult) {
	s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(noArgs)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
}

// addContentTools adds the tools that return each kind of content.
func addContentTools(s *mcp.Server) {
	png, wav := mustDecode(imagePNG), mustDecode(audioWAV)
	fixed(s, "test_simple_text", "Tests simple text content response", text("This is a simple text response for testing."))
	fixed(s, "test_image_content", "Tests image content response",
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}})
	fixed(s, "test_audio_content", "Tests audio content response",
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: wav, MIMEType: "audio/wav"}}})
	fixed(s, "test_embedded_resource", "Tests embedded resource content response",
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}}}})
	fixed(s, "test_multiple_content_types", "Tests response with multiple content types (text, image, resource)",
		&mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: png, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource",
				MIMEType: "application/json", Text: `{"test":"data","value":123}`}},
		}})
	fixed(s, "test_error_handling", "Tests error response handling",
		&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "This tool intentionally returns an error for testing"}}})
	s.AddTool(&mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
		InputSchema: json.RawMessage(schema2020)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("JSON Schema 2020-12 tool called with: " + string(req.Params.Arguments)), nil
		})
}

// addBehaviourTools adds the tools that log and report progress while
// they run. The suite's description asks for ~50ms between messages, for
// clients that need time; the order is what it checks, so none is waited.
func addBehaviourTools(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "test_tool_with_logging", Description: "Tests tool that emits log messages during execution", InputSchema: json.RawMessage(noArgs)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance-fixture", Data: msg}); err != nil {
					return nil, err
				}
			}
			return text("Tool with logging executed successfully"), nil
		})
	s.AddTool(&mcp.Tool{Name: "test_tool_with_progress", Description: "Tests tool that reports progress notifications", InputSchema: json.RawMessage(noArgs)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			if tok != nil {
				for _, p := range []float64{0, 50, 100} {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: 100,
						Message: fmt.Sprintf("Completed step %g of 100", p)}); err != nil {
						return nil, err
					}
				}
			}
			return text(fmt.Sprint(tok)), nil
		})
}
