package bridge

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
	"github.com/toolmesh/toolmesh/worker"
)

// askers are the bridge's mesh calls in flight, through which a bridged
// server's elicitation/create becomes a question to the mesh caller
// (docs/protocol.md §23.8).
//
// An MCP server's request does not say which of the client's calls it
// belongs to (over stdio nothing can), so a server's elicitation is put to
// the mesh caller only while exactly one call is in flight on the bridge;
// with none or several it is declined, never put to a caller who may not
// be the one it concerns.
type askers struct {
	mu    sync.Mutex
	calls map[*worker.Request]asker
}

// asker is one call in flight: its context, and its sink when it streams.
type asker struct {
	ctx  context.Context
	sink *sink
}

// track records req (with its call's context and sink, nil for a unary
// call) until the returned func runs.
func (a *askers) track(ctx context.Context, req *worker.Request, sk *sink) func() {
	a.mu.Lock()
	if a.calls == nil {
		a.calls = map[*worker.Request]asker{}
	}
	a.calls[req] = asker{ctx: ctx, sink: sk}
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.calls, req)
		a.mu.Unlock()
	}
}

// only returns the one call in flight, if there is exactly one.
func (a *askers) only() (*worker.Request, context.Context, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for req, c := range a.calls {
		if len(a.calls) == 1 {
			return req, c.ctx, 1
		}
	}
	return nil, nil, len(a.calls)
}

// onlySink returns the sink of the one call in flight, if there is
// exactly one and it streams.
func (a *askers) onlySink() (*sink, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.calls {
		if len(a.calls) == 1 {
			return c.sink, 1
		}
	}
	return nil, len(a.calls)
}

// onElicit answers a bridged server's elicitation/create with the mesh
// caller's answer (mcpmap.ElicitQuestion, mcpmap.ElicitResult). Set only
// when the binding lists elicitation in client_capabilities, so the
// bridge declares the capability to a server only then.
func (b *Bridge) onElicit(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	decline := &mcp.ElicitResult{Action: envelope.ActionDecline}
	message, schema, err := mcpmap.ElicitQuestion(r.Params)
	if err != nil {
		return decline, nil
	}
	req, callCtx, n := b.askers.only()
	if req == nil {
		b.log.Warn("declined a server's elicitation: it cannot be tied to one call", "calls_in_flight", n)
		return decline, nil
	}
	askCtx, cancel := context.WithCancel(callCtx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel) // the server gave up on its request
	defer stop()
	a, err := req.Ask(askCtx, worker.Question{Message: message, Schema: schema})
	if err != nil {
		return &mcp.ElicitResult{Action: outcomeOf(err)}, nil
	}
	return mcpmap.ElicitResult(a.Action, a.Content), nil
}

// outcomeOf is what the server is told when the mesh could not answer:
// decline when the caller cannot answer at all, cancel otherwise (the
// question timed out or the call ended).
func outcomeOf(err error) string {
	var p *envelope.Problem
	if errors.As(err, &p) && p.Code == envelope.CodeInputRequired {
		return envelope.ActionDecline
	}
	return envelope.ActionCancel
}
