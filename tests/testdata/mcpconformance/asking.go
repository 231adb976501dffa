package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addAskingTools adds the tools that ask the client: for a model's
// completion (sampling) and for the user's input (elicitation).
func addAskingTools(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "test_sampling", Description: "Tests server-initiated sampling (LLM completion request)",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Prompt string }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 100,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: args.Prompt}}}})
			if err != nil {
				return errorText("Sampling not supported or error: " + err.Error()), nil
			}
			reply := "No response"
			if t, ok := res.Content.(*mcp.TextContent); ok {
				reply = t.Text
			}
			return text("LLM response: " + reply), nil
		})
	elicit(s, "test_elicitation", "Tests server-initiated elicitation (user input request)",
		`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`,
		`{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`)
	elicit(s, "test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", noArgs,
		`{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},`+
			`"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},`+
			`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},`+
			`"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}`)
	elicit(s, "test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", noArgs,
		`{"type":"object","properties":{`+
			`"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},`+
			`"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},`+
			`"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},`+
			`"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},`+
			`"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}`+
			`},"required":[]}`)
}

// elicit registers a tool that asks the client for input under
// requested and reports the answer.
func elicit(s *mcp.Server, name, desc, input, requested string) {
	s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(input)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Message string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			if args.Message == "" {
				args.Message = "Please review and update the form fields"
			}
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: args.Message, RequestedSchema: json.RawMessage(requested)})
			if err != nil {
				return errorText("Elicitation not supported or error: " + err.Error()), nil
			}
			content, _ := json.Marshal(res.Content)
			return text(fmt.Sprintf("User response: action=%s, content=%s", res.Action, content)), nil
		})
}

func errorText(s string) *mcp.CallToolResult {
	r := text(s)
	r.IsError = true
	return r
}
