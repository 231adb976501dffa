package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/toolmesh/toolmesh/internal/textcut"
	"strings"

	"github.com/toolmesh/toolmesh/internal/jsonx"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
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
	if bearer := bearerOf(req); bearer != "" {
		opts = append(opts, caller.WithBearer(bearer))
	}
	opts = append(opts, elicitOptions(req)...)
	if kind.unaryFits && !g.wantsEvents(req) {
		return g.callUnary(ctx, meshTool, json.RawMessage(args), opts), nil
	}
	st, err := g.cfg.Caller.Stream(ctx, meshTool, json.RawMessage(args), opts...)
	if err != nil {
		return problemResult(envelope.AsProblem(err, envelope.CodeInternal)), nil
	}
	defer st.Close()
	return relay(ctx, req, st, kind.mcpResult), nil
}

// fitOutputSchema keeps an error result valid for a tool that declares an
// output schema: MCP clients (the official TypeScript SDK among them)
// check structuredContent against that schema even when isError is set,
// and a Problem does not match it. There the problem+json travels as a
// second text block instead of as structuredContent.
func fitOutputSchema(res *mcp.CallToolResult, tool *mcp.Tool) *mcp.CallToolResult {
	if !res.IsError || tool.OutputSchema == nil || res.StructuredContent == nil {
		return res
	}
	body, _ := json.Marshal(res.StructuredContent)
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
	p := progress{ctx: ctx, req: req, token: req.Params.GetProgressToken()}
	var deltas deltaLog
	for ev := range st.Events() { // a failure is the terminal error event, handled below
		switch ev.Type {
		case envelope.EventProgress:
			if ev.Log != nil {
				p.log(ev.Log)
				continue
			}
			msg := ev.Message
			if ev.Pct != nil {
				msg = strings.TrimSpace(fmt.Sprintf("%.0f%% %s", *ev.Pct, ev.Message))
			}
			p.send(msg)
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
	_ = p.req.Session.Log(p.ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(l.Level), Logger: l.Logger, Data: l.Data})
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

// resultOf builds the MCP result of a mesh result: structuredContent (an
// object: the result itself, or {"result": …} for other JSON values) plus
// its text serialisation; deltas precede it as text blocks.
func resultOf(data json.RawMessage, deltas deltaLog) *mcp.CallToolResult {
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	structured := structured(data)
	res := &mcp.CallToolResult{StructuredContent: structured}
	deltas.prepend(res)
	// The caller validated the event's JSON: its text is the result's
	// text as it is, not encoded once more.
	res.Content = append(res.Content, &mcp.TextContent{Text: string(structured)})
	return res
}

// mcpResultOf serves the result of an MCPResult tool (an MCP tool result,
// as the bridge hosts one) unchanged: its content blocks, structuredContent
// and _meta; deltas, if the tool sent any, precede the blocks as text.
func mcpResultOf(data json.RawMessage, deltas deltaLog) *mcp.CallToolResult {
	var res mcp.CallToolResult
	if err := json.Unmarshal(data, &res); err != nil {
		return problemResult(envelope.NewProblem(envelope.CodeOutputInvalid, "the tool's MCP result cannot be decoded: "+err.Error()))
	}
	deltas.prepend(&res)
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	return &res
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

// structured returns data as an MCP structuredContent object.
func structured(data json.RawMessage) json.RawMessage {
	if jsonx.IsObject(data) {
		return data
	}
	const open, end = `{"result":`, `}`
	b := make([]byte, 0, len(open)+len(data)+len(end))
	return append(append(append(b, open...), data...), end...)
}

// problemResult turns a Problem into an MCP tool error: isError, the
// problem+json as structuredContent, and one line an LLM can act on.
// A Problem that carries an MCP server's own error content (mcp_content,
// as the bridge reports isError) has those blocks as its content instead,
// so the server's words reach the client unchanged.
func problemResult(p *envelope.Problem) *mcp.CallToolResult {
	body, _ := json.Marshal(p)
	content := []mcp.Content{&mcp.TextContent{Text: problemLine(p)}}
	if own := problemContent(p); len(own) > 0 {
		content = own
	}
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(body), Content: content}
}

// problemContent decodes a Problem's mcp_content extension (nil when it
// has none or it is not a list of MCP content blocks).
func problemContent(p *envelope.Problem) []mcp.Content {
	raw, ok := p.Extensions["mcp_content"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(map[string]any{"content": raw})
	if err != nil {
		return nil
	}
	var res mcp.CallToolResult
	if json.Unmarshal(b, &res) != nil {
		return nil
	}
	return res.Content
}

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
