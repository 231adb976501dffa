package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
)

// Handler runs one tool call. It returns the result (any JSON-marshalable
// value; json.RawMessage passes through verbatim) or an error, which becomes
// the terminal error event: a *Problem reaches the caller as it
// is, any other error becomes tool_failed. Progress and deltas go through
// emit while the handler runs. ctx ends when the caller cancels, the budget
// is spent, the caller is lost or the worker stops.
type Handler interface {
	Handle(ctx context.Context, req *Request, emit Emitter) (any, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request, emit Emitter) (any, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req *Request, emit Emitter) (any, error) {
	return f(ctx, req, emit)
}

// Middleware wraps a Handler, net/http style: it may act before and after
// the call, change the request, or answer itself without calling next (a
// short circuit). Worker-wide middleware is Config.Middleware; a tool's
// own comes last in Register's (or AddTool's) arguments.
type Middleware func(next Handler) Handler

// chain wraps h in mw, the first outermost: chain(h, a, b) runs a, then
// b, then h.
func chain(h Handler, mw ...Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

// Request is one call as the handler sees it.
type Request struct {
	Tool   string
	CallID string
	// Args is the validated argument object.
	Args           json.RawMessage
	DryRun         bool
	Page           *envelope.Page
	ResponseFormat *envelope.ResponseFormat
	// Bearer is the caller's bearer token ("" when none). Never log it.
	Bearer string
	// IdempotencyKey is the caller's key for safe retries ("" when none).
	// The worker passes it on; a handler with side effects uses it to dedupe.
	IdempotencyKey string
	// Deadline is when the call's budget runs out (zero when unbounded).
	Deadline time.Time
	// Streaming is true when the caller asked for the event stream; in
	// unary mode, and in a stream call with fold=1 (the caller wants the
	// result a unary call returns), progress and deltas are not delivered.
	Streaming bool
	// Spec is the tool's spec.
	Spec *envelope.ToolSpec
	// Identity is who made the call, as the server stamped it
	// (docs/protocol.md §13.1): "acc/user" across accounts, "?" when the
	// stamp is unreadable, "" in a single-account mesh. A tool that keeps
	// per-caller state (the task service, §22.1) keys it by this.
	Identity string

	call *call // the live call Ask asks through (nil outside a call)
}

// Bind decodes the arguments into v. Arguments that do not fit v are the
// caller's mistake, so the error is an invalid_input Problem (returned
// from the handler as it is, it reaches the caller as invalid_input, not
// tool_failed).
func (r *Request) Bind(v any) error { return bindArgs(r.Tool, r.Args, v) }

// bindArgs decodes a tool's args into v; a misfit is invalid_input.
func bindArgs(tool string, args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return envelope.Problemf(envelope.CodeInvalidInput, "tool %s: args do not fit the tool's parameters: %v", tool, err)
	}
	return nil
}

// admitter is a Handler with room of its own that a call may have to wait
// for before it runs (a command-line tool's slots, package worker/cli,
// whose handler has this Admit method).
// The worker admits each call of the tool through Admit before it sends
// the call's start event, so that start means the handler runs rather
// than waits: a durable task reads running only then. Admit returns the
// context the handler then runs in and a release the worker calls once
// the handler has returned; an error refuses the call, unrun.
type admitter interface {
	Admit(ctx context.Context, req *Request) (context.Context, func(), error)
}

// Emitter sends non-terminal events of a call. In stream mode a call may
// run ahead of its reader by at most the caller's window; beyond it an
// emit blocks until the caller grants credit or the call ends, so a slow
// reader slows its own producer. In unary mode emits are accepted and
// dropped. An emit after the call has ended returns an error.
type Emitter interface {
	// Progress reports coarse progress, pct in 0..100.
	Progress(pct float64, message string) error
	// Delta sends partial output (any JSON-marshalable value).
	Delta(data any) error
}

// LogEmitter is an Emitter that also sends log messages: a progress
// event carrying the message (envelope.LogEvent, docs/protocol.md §5.1).
// The worker's emitters and workertest.Recorder are LogEmitters; like
// progress, a log message reaches only a streaming caller.
type LogEmitter interface {
	Emitter
	Log(m envelope.LogMessage) error
}
