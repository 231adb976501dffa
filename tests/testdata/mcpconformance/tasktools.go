package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools of the suite's tasks-* scenarios (SEP-2663, the
// io.modelcontextprotocol/tasks extension). Each is written as one
// function of its arguments and the input responses gathered so far
// (SEP-2322 style): it returns its result, or the input requests it still
// needs. The same function serves both faces of a tool:
//   - registered with the SDK, a plain tool: a call returns the result or
//     an input_required round (this is how the bridge, over stdio, calls
//     it; the mesh's gateway is then what serves it as a task);
//   - served by the fixture's own tasks front (taskfront.go) to an HTTP
//     client that declared the extension: a task that runs the function,
//     parks input_required while it needs input, and runs it again once
//     tasks/update brings the responses.

// taskTool is one tool of the tasks scenarios.
type taskTool struct {
	name, desc, schema string
	// support is "optional" (a task for a client that declared the
	// extension, a plain call otherwise) or "required" (-32021 without it).
	support string
	// before, when set, asks in the tools/call's own rounds before any
	// task is made (tasks-mrtr-composition); nil when it has all it needs.
	before func(responses mcp.InputResponseMap) mcp.InputRequestMap
	// run does the work: its result, or the input requests still open.
	run func(ctx context.Context, args json.RawMessage, responses mcp.InputResponseMap) (*mcp.CallToolResult, mcp.InputRequestMap, error)
}

// taskTools are the suite's task-supporting tools.
func taskTools() []taskTool {
	askName := func(responses mcp.InputResponseMap) mcp.InputRequestMap {
		if _, ok := elicited(responses, "user_name", "name"); ok {
			return nil
		}
		return mcp.InputRequestMap{"user_name": elicitReq("What is your name?", "name", "string")}
	}
	return []taskTool{
		{name: "slow_compute", desc: "Sleeps `seconds` seconds, then answers (task-supporting)", support: "optional",
			schema: `{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}`, run: slowCompute},
		{name: "failing_job", desc: "Reports a tool execution error after a second (task support required)", support: "required",
			schema: noArgs, run: failingJob},
		{name: "protocol_error_job", desc: "Fails with a protocol-level error (task-supporting)", support: "optional",
			schema: noArgs, run: func(context.Context, json.RawMessage, mcp.InputResponseMap) (*mcp.CallToolResult, mcp.InputRequestMap, error) {
				return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job failed on purpose"}
			}},
		{name: "confirm_delete", desc: "Asks to confirm before it deletes `filename` (task-supporting)", support: "optional",
			schema: `{"type":"object","properties":{"filename":{"type":"string"}}}`, run: confirmDelete},
		{name: "multi_input", desc: "Asks two questions at once (task-supporting)", support: "optional",
			schema: noArgs, run: multiInput},
		{name: "test_tool_with_task", desc: "Asks the user's name in the call's rounds, then works as a task (task support required)",
			support: "required", schema: noArgs, before: askName,
			run: func(_ context.Context, _ json.RawMessage, responses mcp.InputResponseMap) (*mcp.CallToolResult, mcp.InputRequestMap, error) {
				if reqs := askName(responses); reqs != nil {
					return nil, reqs, nil
				}
				name, _ := elicited(responses, "user_name", "name")
				return text("Task finished for " + name), nil, nil
			}},
	}
}

func slowCompute(ctx context.Context, args json.RawMessage, _ mcp.InputResponseMap) (*mcp.CallToolResult, mcp.InputRequestMap, error) {
	var a struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label"`
	}
	_ = json.Unmarshal(args, &a)
	select {
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-time.After(time.Duration(a.Seconds * float64(time.Second))):
	}
	return text(fmt.Sprintf("Computed %s after %gs", a.Label, a.Seconds)), nil, nil
}

func failingJob(ctx context.Context, _ json.RawMessage, _ mcp.InputResponseMap) (*mcp.CallToolResult, mcp.InputRequestMap, error) {
	select {
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-time.After(time.Second):
	}
	return errorText("failing_job failed, as it always does"), nil, nil
}

func confirmDelete(_ context.Context, args json.RawMessage, responses mcp.InputResponseMap) (*mcp.CallToolResult, mcp.InputRequestMap, error) {
	var a struct {
		Filename string `json:"filename"`
	}
	_ = json.Unmarshal(args, &a)
	r, ok := responses["confirm"].(*mcp.ElicitResult)
	if !ok {
		return nil, mcp.InputRequestMap{"confirm": elicitReq("Delete "+a.Filename+"?", "confirm", "boolean")}, nil
	}
	if r.Action != "accept" || r.Content["confirm"] != true {
		return text("Kept " + a.Filename), nil, nil
	}
	return text("Deleted " + a.Filename), nil, nil
}

func multiInput(_ context.Context, _ json.RawMessage, responses mcp.InputResponseMap) (*mcp.CallToolResult, mcp.InputRequestMap, error) {
	asks := mcp.InputRequestMap{
		"first":  elicitReq("First: what is your name?", "name", "string"),
		"second": elicitReq("Second: do you confirm?", "confirm", "boolean"),
	}
	missing := mcp.InputRequestMap{}
	for k, r := range asks {
		if _, ok := responses[k]; !ok {
			missing[k] = r
		}
	}
	if len(missing) > 0 {
		return nil, missing, nil
	}
	return text("Both inputs received"), nil, nil
}

// addTaskTools registers greet and every task tool as a plain SDK tool.
func addTaskTools(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "greet", Description: "Greets `name` (sync only)",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text("Hello, " + a.Name + "!"), nil
		})
	for _, t := range taskTools() {
		s.AddTool(&mcp.Tool{Name: t.name, Description: t.desc, InputSchema: json.RawMessage(t.schema)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				res, reqs, err := t.run(ctx, req.Params.Arguments, req.Params.InputResponses)
				if err != nil {
					return nil, err
				}
				if len(reqs) > 0 {
					return needs(reqs, ""), nil
				}
				return res, nil
			})
	}
}
