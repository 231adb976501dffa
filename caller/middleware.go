package caller

import (
	"context"

	"github.com/toolmesh/toolmesh/envelope"
)

// Invocation is one logical call as caller middleware sees it: before
// any retry, with Config.Options ahead of the call's own options.
// Middleware may change it (add an option, rewrite the args) before
// passing it on, in place or as a copy (v := *inv): a new Invocation
// built from its exported fields alone makes a unary call.
type Invocation struct {
	Tool    string
	Args    any
	Options []Option
	stream  *Stream // the Stream that receives the call's events, for a stream
}

// Streaming reports whether the invocation is a Stream's (or a Dispatch
// call's): its non-terminal events go to the stream's reader as they
// arrive, and the Invoker returns the terminal one.
func (inv *Invocation) Streaming() bool { return inv.stream != nil }

// Invoker makes a call and returns its id ("" when it was never sent) and
// its terminal event: a result, or an error event carrying the Problem.
type Invoker func(ctx context.Context, inv *Invocation) (callID string, terminal envelope.ToolEvent)

// Middleware wraps an Invoker, net/http style: it may act before and
// after the call or answer itself without calling next (a short circuit,
// returning ErrorEvent of its Problem). Config.Middleware wraps
// every call — Call, CallAs, Stream, StreamAs and Dispatch's calls — the
// first outermost; each middleware runs once per logical call, around its
// retries.
type Middleware func(next Invoker) Invoker

// chain wraps inv in mw, the first outermost.
func chain(inv Invoker, mw []Middleware) Invoker {
	for i := len(mw) - 1; i >= 0; i-- {
		inv = mw[i](inv)
	}
	return inv
}

// invoke runs one logical call through the middleware chain.
func (c *Caller) invoke(ctx context.Context, tool string, args any, opts []Option) (string, envelope.ToolEvent) {
	if len(c.cfg.Middleware) == 0 { // no Invocation to build for nobody
		return c.send(ctx, &Invocation{Tool: tool, Args: args, Options: opts})
	}
	return c.invoker(ctx, &Invocation{Tool: tool, Args: args, Options: opts})
}

// send is the innermost Invoker: the call itself, retries included.
func (c *Caller) send(ctx context.Context, inv *Invocation) (string, envelope.ToolEvent) {
	if inv.stream != nil {
		return c.streamEvent(ctx, inv.stream, inv.Tool, inv.Args, c.options(inv.Options))
	}
	return c.callEvent(ctx, inv.Tool, inv.Args, c.options(inv.Options))
}
