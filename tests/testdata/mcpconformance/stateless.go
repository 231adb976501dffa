package main

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addStatelessTools adds the diagnostic tools of server-stateless and
// http-custom-header-server-validation (2026-07-28): one that needs the
// client's sampling capability, one that asks by elicitation on the
// request's own stream (an input_required result, never a request), one
// that logs (only to a request that set a log level), and
// one whose argument travels in an Mcp-Param header too.
func addStatelessTools(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "test_missing_capability", Description: "Needs the client's sampling capability; refused (-32021) without it",
		InputSchema: json.RawMessage(noArgs)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
				data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
				return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "this tool needs the client's sampling capability", Data: data}
			}
			return text("The client declared sampling"), nil
		})
	s.AddTool(&mcp.Tool{Name: "test_streaming_elicitation", Description: "Asks by elicitation: an input_required result on the request's stream",
		InputSchema: json.RawMessage(noArgs)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if name, ok := elicited(req.Params.InputResponses, "user_name", "name"); ok {
				return text("Hello, " + name + "!"), nil
			}
			return needs(mcp.InputRequestMap{"user_name": elicitReq("What is your name?", "name", "string")}, ""), nil
		})
	s.AddTool(&mcp.Tool{Name: "test_logging_tool", Description: "Logs while it runs; the messages reach only a request that set a log level",
		InputSchema: json.RawMessage(noArgs)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for _, msg := range []string{"Tool execution started", "Tool execution completed"} {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance-fixture", Data: msg}); err != nil {
					return nil, err
				}
			}
			return text("Tool with logging executed successfully"), nil
		})
	s.AddTool(&mcp.Tool{Name: "test_custom_header", Description: "Echoes its region, which also travels in the Mcp-Param-Region header",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Region string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return text("region: " + args.Region), nil
		})
}
