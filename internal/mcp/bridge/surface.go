package bridge

import (
	"context"
	"fmt"
	"iter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/internal/sandbox/report"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/worker"
)

// surfaceOp is one MCP method of a bridged server offered on the mesh as
// a surface tool "<namespace>._mcp.<op>" (docs/protocol.md §24): its
// resources, prompts and completions, called like any tool.
type surfaceOp struct {
	op, method, input string
	streaming         bool
	// acts: the op may change what the server holds (not read_only).
	acts bool
	// offered reports whether the server's capabilities include the method.
	offered func(*mcp.ServerCapabilities) bool
	run     func(ctx context.Context, b *Bridge, sess *mcp.ClientSession, req *worker.Request, emit worker.Emitter) (any, error)
}

// The surface ops' input schemas.
const (
	noInput     = `{"type":"object","properties":{},"additionalProperties":false}`
	uriInput    = `{"type":"object","properties":{"uri":{"type":"string","minLength":1}},"required":["uri"],"additionalProperties":false}`
	promptInput = `{"type":"object","properties":{"name":{"type":"string","minLength":1},"arguments":{"type":"object","additionalProperties":{"type":"string"}},` +
		`"inputResponses":{"type":"object"},"requestState":{"type":"string"}},"required":["name"],"additionalProperties":false}`
	unlistedInput = `{"type":"object","properties":{"name":{"type":"string","minLength":1},"arguments":{"type":"object"}},"required":["name"],"additionalProperties":false}`
	completeInput = `{"type":"object","properties":{"ref":{"type":"object","properties":{"type":{"type":"string"},"name":{"type":"string"},"uri":{"type":"string"}},"required":["type"]},` +
		`"argument":{"type":"object","properties":{"name":{"type":"string"},"value":{"type":"string"}},"required":["name","value"]},` +
		`"context":{"type":"object"}},"required":["ref","argument"],"additionalProperties":false}`
)

// surfaceOps lists every surface op, each with the capability that offers it.
func surfaceOps() []surfaceOp {
	resources := func(c *mcp.ServerCapabilities) bool { return c.Resources != nil }
	prompts := func(c *mcp.ServerCapabilities) bool { return c.Prompts != nil }
	return []surfaceOp{
		{op: wire.MCPResourcesList, method: "resources/list", input: noInput, offered: resources, run: listResources},
		{op: wire.MCPResourceTemplatesList, method: "resources/templates/list", input: noInput, offered: resources, run: listTemplates},
		{op: wire.MCPResourcesRead, method: "resources/read", input: uriInput, offered: resources, run: readResource},
		{op: wire.MCPResourcesSubscribe, method: "resources/subscribe", input: uriInput, streaming: true,
			offered: func(c *mcp.ServerCapabilities) bool { return c.Resources != nil && c.Resources.Subscribe }, run: subscribe},
		{op: wire.MCPPromptsList, method: "prompts/list", input: noInput, offered: prompts, run: listPrompts},
		{op: wire.MCPPromptsGet, method: "prompts/get", input: promptInput, offered: prompts, run: getPrompt},
		{op: wire.MCPComplete, method: "completion/complete", input: completeInput,
			offered: func(c *mcp.ServerCapabilities) bool { return c.Completions != nil }, run: complete},
		{op: wire.MCPToolsCallUnlisted, method: "tools/call", input: unlistedInput, acts: true,
			offered: func(c *mcp.ServerCapabilities) bool { return c.Tools != nil }, run: callUnlisted},
	}
}

// surface returns the surface tools the server's capabilities offer.
func (b *Bridge) surface(sess *mcp.ClientSession) []hosted {
	ir := sess.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return nil
	}
	var out []hosted
	ns := b.cfg.Entry.Namespace
	for _, op := range surfaceOps() {
		if !op.offered(ir.Capabilities) {
			continue
		}
		s := envelope.ToolSpec{Name: wire.MCPSurfaceName(ns, op.op), Title: fmt.Sprintf("%s of MCP server %s", op.method, ns),
			Description: fmt.Sprintf("The bridged MCP server's %s, carried as a mesh call; toolmesh mcp serves it as that method (docs/protocol.md §24).", op.method),
			InputSchema: []byte(op.input), Streaming: op.streaming, Tags: []string{"mcp", wire.MCPSurfaceTag}}
		if !op.streaming && !op.acts {
			readOnly := true
			s.Annotations = &envelope.Annotations{ReadOnly: &readOnly}
		}
		if b.plan != nil {
			s.Sandbox = report.Summary(b.plan.Policy)
		}
		out = append(out, hosted{spec: s, handle: b.surfaceHandler(op)})
	}
	return out
}

// surfaceHandler runs op on the live session, failing like a tool call
// when the server is down or fails (the error redacted of the binding's
// secrets, as a tool call's is).
func (b *Bridge) surfaceHandler(op surfaceOp) worker.HandlerFunc {
	return func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
		sess := b.session()
		if sess == nil {
			return nil, b.downProblem("is down")
		}
		res, err := op.run(ctx, b, sess, req, emit)
		if err != nil {
			return nil, b.secrets.ProblemOf(b.failure(ctx, sess, op.method, err))
		}
		return res, nil
	}
}

// collect gathers every page of a listing.
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	out := []T{}
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func listResources(ctx context.Context, _ *Bridge, sess *mcp.ClientSession, _ *worker.Request, _ worker.Emitter) (any, error) {
	rs, err := collect(sess.Resources(ctx, nil))
	return map[string]any{"resources": rs}, err
}

func listTemplates(ctx context.Context, _ *Bridge, sess *mcp.ClientSession, _ *worker.Request, _ worker.Emitter) (any, error) {
	ts, err := collect(sess.ResourceTemplates(ctx, nil))
	return map[string]any{"resourceTemplates": ts}, err
}

func listPrompts(ctx context.Context, _ *Bridge, sess *mcp.ClientSession, _ *worker.Request, _ worker.Emitter) (any, error) {
	ps, err := collect(sess.Prompts(ctx, nil))
	return map[string]any{"prompts": ps}, err
}

// readResource reads a resource the server offers (ownedURI); nothing
// else reaches it.
func readResource(ctx context.Context, b *Bridge, sess *mcp.ClientSession, req *worker.Request, _ worker.Emitter) (any, error) {
	var p mcp.ReadResourceParams
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	uri, err := b.ownedURI(ctx, sess, p.URI)
	if err != nil {
		return nil, err
	}
	p.URI = uri
	return metaMapped(sess.ReadResource(ctx, &p))
}

func getPrompt(ctx context.Context, _ *Bridge, sess *mcp.ClientSession, req *worker.Request, _ worker.Emitter) (any, error) {
	return forward(ctx, req, sess.GetPrompt)
}

func complete(ctx context.Context, _ *Bridge, sess *mcp.ClientSession, req *worker.Request, _ worker.Emitter) (any, error) {
	return forward(ctx, req, sess.Complete)
}

// forward sends the call's arguments, bound as the request's params, to
// the server with send, and returns its result as metaMapped does.
func forward[P any, R mcp.Result](ctx context.Context, req *worker.Request, send func(context.Context, *P) (R, error)) (any, error) {
	var p P
	if err := req.Bind(&p); err != nil {
		return nil, err
	}
	return metaMapped(send(ctx, &p))
}

// metaMapped is a server's result with its _meta as the mesh carries it
// (mcpmap.ResultMeta), or the error.
func metaMapped[R mcp.Result](res R, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	res.SetMeta(mcpmap.ResultMeta(res.GetMeta()))
	return res, nil
}
