package bridge

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/internal/workercall"
	"github.com/toolmesh/toolmesh/worker"
)

// maxRounds bounds the input_required rounds of one call: a server that
// keeps asking past it is failing, not asking.
const maxRounds = 10

// metaClientCapabilities is the per-request _meta key of the client
// capabilities at 2026-07-28.
const metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"

// declareFor sets, on a 2026-07-28 call, the client capabilities this
// call can honour: the binding's when the mesh caller answers questions
// (ask=1), none otherwise — so a server that needs one refuses the call
// (-32021) before its tool runs, as it would for that caller directly.
func (b *Bridge) declareFor(ctx context.Context, req *worker.Request, params *mcp.CallToolParams) {
	if b.protocol() != protocolStateless {
		return
	}
	caps := map[string]any{}
	if workercall.Of(ctx, req.Identity).CanAsk() {
		for _, c := range b.cfg.Entry.Server.ClientCapabilities {
			caps[c] = map[string]any{}
		}
	}
	if params.Meta == nil {
		params.Meta = mcp.Meta{}
	}
	params.Meta[metaClientCapabilities] = caps
}

// callRounds calls the tool and carries its server's input_required
// rounds (SEP-2322): each round's input requests become one question of
// the call (mcpmap.InputsQuestion), the accepted answer the responses the
// retry carries with the server's request state. A decline or a cancel
// ends the call declined or cancelled; the server is not asked again.
func (b *Bridge) callRounds(ctx context.Context, sess *mcp.ClientSession, req *worker.Request, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	for round := 1; ; round++ {
		res, err := sess.CallTool(ctx, params)
		if err != nil || len(res.InputRequests) == 0 {
			return res, err
		}
		if round > maxRounds {
			return nil, envelope.Problemf(envelope.CodeToolFailed, "the MCP server asked for input more than %d times in one call", maxRounds)
		}
		message, schema, err := mcpmap.InputsQuestion(res.InputRequests)
		if err != nil {
			return nil, envelope.Problemf(envelope.CodeToolFailed, "the MCP server's input requests cannot be asked: %v", err)
		}
		a, err := req.Ask(ctx, worker.Question{Message: message, Schema: schema})
		if err != nil {
			return nil, err
		}
		switch a.Action {
		case envelope.ActionDecline:
			return nil, envelope.NewProblem(envelope.CodeDeclined, "the caller declined the MCP server's input requests")
		case envelope.ActionCancel:
			return nil, envelope.NewProblem(envelope.CodeCancelled, "the caller dismissed the MCP server's input requests")
		}
		responses, err := mcpmap.InputResponses(a.Content)
		if err != nil {
			return nil, envelope.Problemf(envelope.CodeInvalidInput, "the answer to the MCP server's input requests: %v", err)
		}
		next := *params
		next.InputResponses, next.RequestState = responses, res.RequestState
		params = &next
	}
}
