package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/internal/textcut"
)

// maxDeltaBytes bounds the deltas a result accumulates; past it the rest
// are counted, and the result says so, never cut silently.
const maxDeltaBytes = 1 << 20

// callHandler returns the MCP handler of one mesh tool. The SDK cancels
// ctx on notifications/cancelled (and, over 2026-07-28 HTTP, when the
// response stream closes); the mesh stream then cancels the worker's call.
// An MCPResult tool's results are MCP tool results already (kind).
func (g *Gateway) callHandler(meshTool string, tool *mcp.Tool, kind relayKind) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := g.call(ctx, req, meshTool, kind)
		if res != nil {
			res = fitOutputSchema(res, tool)
		}
		return res, err
	}
}

// call runs one tools/call as a mesh stream and relays it, or as a unary
// mesh call when nothing but its result can reach the client (unary.go).
func (g *Gateway) call(ctx context.Context, req *mcp.CallToolRequest, meshTool string, kind relayKind) (*mcp.CallToolResult, error) {
	if !g.filter.allows(meshTool) {
		// Defence in depth: a denied tool is never registered.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", req.Params.Name)}
	}
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var opts []caller.Option
	if kind.spec != nil {
		opts = append(opts, kind.spec) // runs only where the served spec is
	}
	if kind.retrySafe {
		opts = append(opts, caller.Idempotent())
	}
	if kind.serverArgs {
		// A bridged server's tool: its args are the server's to judge, as
		// they would be directly.
		opts = append(opts, caller.WithServerArgs())
	}
	if bearer := bearerOf(req); bearer != "" {
		opts = append(opts, caller.WithBearer(bearer))
	}
	if stateless(req) {
		res, err := g.statelessCall(ctx, req, meshTool, kind, opts)
		if !errors.Is(err, errNotHeld) {
			return refusal(res, err)
		}
	}
	opts = append(opts, elicitOptions(req)...)
	if kind.unaryFits && !g.wantsEvents(req) {
		return refusal(g.callUnary(ctx, meshTool, json.RawMessage(args), opts), nil)
	}
	st, err := g.cfg.Caller.Stream(ctx, meshTool, json.RawMessage(args), opts...)
	if err != nil {
		return problemResult(envelope.AsProblem(err, envelope.CodeInternal)), nil
	}
	defer st.Close()
	return refusal(relay(ctx, req, st, kind.mcpResult), nil)
}

// stateless reports whether req came at 2026-07-28 or later.
func stateless(req *mcp.CallToolRequest) bool {
	return req.Session == nil || req.Session.InitializeParams() == nil || req.Session.InitializeParams().ProtocolVersion >= protocolStateless
}

// refusal turns a bridged server's refusal of a call for a client
// capability the client did not declare (-32021, carried as the
// Problem's mcp_error) into that JSON-RPC error, as the server sent it.
func refusal(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err != nil || res == nil || !res.IsError {
		return res, err
	}
	body, ours := res.StructuredContent.(problemBody)
	if !ours {
		return res, nil
	}
	var p envelope.Problem
	if json.Unmarshal(body, &p) != nil {
		return res, nil
	}
	if je := rpcError(&p); je.Code == codeMissingCapability {
		return nil, je
	}
	return res, nil
}

// codeMissingCapability is MCP's MissingRequiredClientCapabilityError.
const codeMissingCapability = mcp.CodeMissingRequiredClientCapabilities

// fitOutputSchema keeps an error result the gateway made of a Problem
// valid for a tool that declares an output schema: MCP clients (the
// official TypeScript SDK among them) check structuredContent against
// that schema even when isError is set, and a Problem does not match it.
// There the problem+json travels as a second text block instead of as
// structuredContent. An MCP server's own error result (problemResult) is
// served as the server sent it.
func fitOutputSchema(res *mcp.CallToolResult, tool *mcp.Tool) *mcp.CallToolResult {
	body, ours := res.StructuredContent.(problemBody)
	if !res.IsError || tool.OutputSchema == nil || !ours {
		return res
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: string(body)})
	res.StructuredContent = nil
	return res
}

// bearerOf returns the bearer an HTTP client presented ("" over stdio).
func bearerOf(req *mcp.CallToolRequest) string {
	if req.Extra == nil || req.Extra.Header == nil {
		return ""
	}
	v, ok := strings.CutPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

// relay forwards a mesh stream's events: progress and deltas become
// notifications/progress when the client gave a progressToken, deltas are
// gathered into the result, and the terminal event becomes the result.
func relay(ctx context.Context, req *mcp.CallToolRequest, st *caller.Stream, mcpResult bool) *mcp.CallToolResult {
	return relayTo(ctx, &progress{ctx: ctx, req: req, token: req.Params.GetProgressToken()}, st, mcpResult)
}

// progressSink takes a call's progress and log messages.
type progressSink interface {
	send(msg string)
	log(l *envelope.LogMessage)
}

// relayTo is relay with progress and logs going to p.
func relayTo(ctx context.Context, p progressSink, st *caller.Stream, mcpResult bool) *mcp.CallToolResult {
	var deltas deltaLog
	for ev := range st.Events() { // a failure is the terminal error event, handled below
		switch ev.Type {
		case envelope.EventProgress:
			if ev.Log != nil {
				p.log(ev.Log)
				continue
			}
			p.send(mcpmap.ProgressMessage(ev.Pct, ev.Message))
		case envelope.EventDelta:
			deltas.add(ev.Data)
			p.send("delta " + textcut.Clip(string(ev.Data), 200))
		case envelope.EventResult:
			if mcpResult {
				return mcpResultOf(ev.Data, deltas)
			}
			return resultOf(ev.Data, deltas)
		case envelope.EventError:
			return problemResult(ev.Problem())
		}
	}
	return problemResult(envelope.NewProblem(envelope.CodeMissingTerminal, "the mesh stream ended without a terminal event"))
}

// progress sends notifications/progress for one call. MCP requires the
// progress value to increase with every notification, and mesh progress
// may repeat a percentage or come between deltas, so the value is the
// running count of progress and delta events; the percentage and the
// delta travel in the message.
type progress struct {
	ctx   context.Context
	req   *mcp.CallToolRequest
	token any
	n     float64
}

func (p *progress) send(msg string) {
	if p.token == nil {
		return
	}
	p.n++
	_ = p.req.Session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: msg})
}

// log sends a tool's log message as notifications/message; the SDK sends
// it only when the client asked for its level or a more verbose one
// (logging/setLevel), and none before the client set a level.
func (p *progress) log(l *envelope.LogMessage) {
	if p.req.Session == nil {
		return
	}
	_ = p.req.Session.Log(p.ctx, mcpmap.LoggingParams(l))
}

// deltaLog accumulates a call's deltas up to maxDeltaBytes.
type deltaLog struct {
	items   []json.RawMessage
	bytes   int
	dropped int
}

func (d *deltaLog) add(data json.RawMessage) {
	if d.bytes+len(data) > maxDeltaBytes {
		d.dropped++
		return
	}
	d.bytes += len(data)
	d.items = append(d.items, append(json.RawMessage(nil), data...))
}

// resultOf builds the MCP result of a mesh result (mcpmap.StructuredResult);
// deltas precede it as text blocks.
func resultOf(data json.RawMessage, deltas deltaLog) *mcp.CallToolResult {
	res := mcpmap.StructuredResult(data)
	deltas.prepend(res)
	return res
}

// mcpResultOf serves the result of an MCPResult tool (an MCP tool result,
// as the bridge hosts one) unchanged (mcpmap.ServerResult): its content
// blocks, structuredContent and _meta; deltas, if the tool sent any,
// precede the blocks as text.
func mcpResultOf(data json.RawMessage, deltas deltaLog) *mcp.CallToolResult {
	res, err := mcpmap.ServerResult(data)
	if err != nil {
		return problemResult(envelope.NewProblem(envelope.CodeOutputInvalid, "the tool's MCP result cannot be decoded: "+err.Error()))
	}
	deltas.prepend(res)
	return res
}

// prepend puts the deltas before res's content as text blocks, and says
// in the text and in _meta how many were not kept.
func (d *deltaLog) prepend(res *mcp.CallToolResult) {
	var blocks []mcp.Content
	for _, item := range d.items {
		blocks = append(blocks, &mcp.TextContent{Text: string(item)})
	}
	if d.dropped > 0 {
		blocks = append(blocks, &mcp.TextContent{Text: fmt.Sprintf("(%d further deltas were not kept: over %d bytes)", d.dropped, maxDeltaBytes)})
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		res.Meta["io.toolmesh/deltas_dropped"] = d.dropped
	}
	if len(blocks) > 0 {
		res.Content = append(blocks, res.Content...)
	}
}

// problemResult turns a Problem into an MCP tool error: isError, the
// problem+json as structuredContent, and one line an LLM can act on. A
// Problem that carries an MCP server's own error result (the bridge's,
// mcpmap.ErrorProblem) is that result, exactly as the server sent it.
func problemResult(p *envelope.Problem) *mcp.CallToolResult {
	if own, ok := mcpmap.ErrorResult(p); ok {
		return own
	}
	body, _ := json.Marshal(p)
	return &mcp.CallToolResult{IsError: true, StructuredContent: problemBody(body),
		Content: []mcp.Content{&mcp.TextContent{Text: problemLine(p)}}}
}

// problemBody is the problem+json of an error result the gateway made
// (problemResult), told apart from a server's own structuredContent.
type problemBody json.RawMessage

// MarshalJSON writes the problem+json as it is.
func (b problemBody) MarshalJSON() ([]byte, error) { return b, nil }

// problemLine is "<code>: <detail> Fix: … Retry after Ns." on one line.
func problemLine(p *envelope.Problem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", p.Code, textcut.Clip(p.Detail, 500))
	if p.SuggestedFix != nil && p.SuggestedFix.Description != "" {
		fmt.Fprintf(&b, " Fix: %s", p.SuggestedFix.Description)
	}
	if p.RetryAfter != nil {
		fmt.Fprintf(&b, " Retry after %gs.", *p.RetryAfter)
	} else {
		b.WriteString(" Not transient: do not retry unchanged.")
	}
	return strings.ReplaceAll(b.String(), "\n", " ")
}
