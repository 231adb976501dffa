package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolmesh/toolmesh/internal/telemetry"
	"github.com/toolmesh/toolmesh/internal/wire"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/problembase"
	"github.com/toolmesh/toolmesh/internal/redact"
)

// errCallEnded is returned by an emit after the call's terminal event.
var errCallEnded = errors.New("the call has already ended")

// call is one admitted call's state.
type call struct {
	w        *Worker
	tool     *tool
	reply    string
	batch    *batch  // the batch it came in (its replies name it), or nil
	key      callKey // (identity, call id): how control messages find the call
	callerID string
	trace    *traceFields // nil for an untraced call
	interval time.Duration
	started  time.Time
	deadline time.Time
	body     []byte // the call's JSON object, after any metadata line
	cancelFn context.CancelCauseFunc
	credit   chan struct{}   // stream mode: signalled on each grant
	ctx      context.Context // the handler's, for its emits
	// req is what the handler gets; its Bearer and IdempotencyKey are set
	// from the metadata line when the call is read, the rest when the
	// handler starts.
	req Request
	// bearer is the bearer as the call brought it (nil: none), redacted
	// from everything the call reports: a middleware may change or clear
	// req.Bearer, which must not turn the redaction off.
	bearer *string
	sentAt sentClock // when the reply subject last carried a message
	share  shareKey  // the sender whose share the call holds (see shares)
	pickup int64     // the caller's pickup cutoff, unix ns (0: none)
	// namedAt is when the server confirmed a heartbeat naming the call
	// (unix ns; 0: not yet): from then on its caller can know it is taken
	// up (see announcer).
	namedAt atomic.Int64
	// round is the announcer's round that names the call, queued when it
	// was admitted (nil: none queued, see announceEarly).
	round *announceRound

	stream   bool
	unleased bool // no caller liveness: the deadline is the worker's bound
	// waited: the call, unleased, waited for room, so its sender is
	// checked before it starts; waitRefused: it was refused a wait (see
	// mayWait).
	waited, waitRefused bool
	tracked             bool // in w.calls (and its peer); guarded by w.callsMu
	shared              bool // the call holds a place in share
	// unconfirmed: the caller accepts ran "maybe" (maybe=1) and this
	// worker's spec of the tool is idempotent or read-only, or the call has
	// an idempotency key, so it starts without the server's confirmation.
	unconfirmed bool
	// serverArgs: server_args=1 on a bridged MCP server's tool, whose args
	// the server judges (not checked against input_schema here). Set when
	// the call is read, like the flags above; beside them it fills their
	// word, keeping the call in its size class.
	serverArgs bool

	mu      sync.Mutex // orders seq numbers with publishes, guards the rest
	ended   bool       // the terminal is decided: no more emits
	ask1    bool       // the caller answers questions (ask=1)
	fold    bool       // fold=1: stream framing, but the handler runs as unary
	asked   bool       // a question went out: every message is a numbered frame
	qseq    int32      // questions asked so far (beside the flags: no padding)
	seq     int64
	sent    int64   // non-terminal events accepted from the handler
	granted int64   // non-terminal events the caller has allowed
	out     *outbox // stream mode, or a call that asked: events not yet published

	questions map[string]*openQuestion // open questions by id
}

// run runs one admitted call from its context to its terminal event.
func (c *call) run() { c.runHolding(false) }

// runHolding is run for a call that may already hold an execution slot
// (slot): one taken, without waiting, by the reader that runs the call
// itself (see runsInline), so that nothing on its way to the handler
// waits.
func (c *call) runHolding(slot bool) {
	w := c.w
	defer w.inflight.Done()
	defer w.admitted.Add(-1)
	defer w.shares.give(c)
	defer c.tool.load.end()

	ctx, span := c.startSpan()
	ctx, cancel := context.WithCancelCause(ctx)
	c.cancelFn = cancel
	if !c.deadline.IsZero() {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithDeadline(ctx, c.deadline)
		defer cancelT()
	}
	if c.stream {
		c.credit = make(chan struct{}, 1) // only a stream waits for credit
	}
	c.ctx = ctx

	var p *envelope.Problem
	if !w.track(c) {
		if slot {
			<-w.slots
		}
		p = w.problems.New(envelope.CodeInvalidInput, fmt.Sprintf("call id %s is already in flight on this worker; every call needs its own id", c.key.id))
		p = c.finish(nil, p)
		c.observeRefused(ctx, p)
	} else {
		if w.stopCtx.Err() != nil { // stopped before this call was registered
			cancel(context.Cause(w.stopCtx))
		}
		p = c.finish(c.execute(ctx, slot)) // untracks c before its terminal goes out
	}
	cancel(nil)
	telemetry.EndSpan(span, p)
}

// announceEarly queues the heartbeat naming c as soon as c is admitted,
// so that the server's confirmation of it (see announced) travels while
// the call starts, decodes and validates its body and waits for a slot,
// instead of after. A call that needs no confirmation queues nothing.
func (c *call) announceEarly() {
	if c.mustConfirm() {
		c.round = c.w.announcer.announce(c)
	}
}

// mustConfirm reports whether c may start only once the server has
// confirmed a heartbeat naming it: its caller is known and did not
// accept, with this worker's agreement, a lost call reported "maybe"
// (protocol v2, §8.2).
func (c *call) mustConfirm() bool {
	return c.callerID != "" && !c.unconfirmed && c.repliesToCaller()
}

// announced names c to its caller before its handler starts, and
// reports the Problem (nil: it may start) of a call that must not start:
// its caller may already have reported it not run. A call whose caller is
// known starts only once the server has confirmed a heartbeat naming it,
// and only when that confirmation came before the call's pickup cutoff
// (protocol v2, §8.2); a call with no peer has nobody to tell. A call
// whose caller and tool both accept "maybe" (unconfirmed) waits for no
// confirmation, but still does not start past its cutoff unnamed: its
// caller may already have given it up.
func (c *call) announced(ctx context.Context) *envelope.Problem {
	if c.callerID == "" || !c.repliesToCaller() || c.namedInTime() {
		return nil
	}
	w := c.w
	if c.pastPickup(time.Now()) {
		return c.tooLate("got to the call after its caller's pickup cutoff, before any heartbeat had named it")
	}
	if c.unconfirmed {
		return nil
	}
	r := c.round
	if r == nil {
		r = w.announcer.announce(c)
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return c.contextProblem(ctx)
	}
	if r.at.IsZero() {
		return c.tooLate("could not get the NATS server to confirm a heartbeat naming the call")
	}
	if !c.namedInTime() {
		return c.tooLate("got the server's confirmation of the heartbeat naming the call only after its caller's pickup cutoff")
	}
	return nil
}

// namedInTime reports whether a heartbeat naming c was confirmed by the
// server before c's pickup cutoff.
func (c *call) namedInTime() bool {
	at := c.namedAt.Load()
	return at != 0 && (c.pickup == 0 || at <= c.pickup)
}

// pastPickup reports whether now is past c's pickup cutoff.
func (c *call) pastPickup(now time.Time) bool { return c.pickup != 0 && now.UnixNano() > c.pickup }

// tooLate is the Problem of a call that must not start: overloaded, with
// retry_after; the handler did not run (why says what happened).
func (c *call) tooLate(why string) *envelope.Problem {
	return c.w.problems.New(envelope.CodeOverloaded, fmt.Sprintf(
		"worker %s %s; the handler did not run and will not", c.w.cfg.ID, why)).
		WithRetryAfter(c.w.cfg.Limits.OverloadRetryAfter.Seconds())
}

// startSpan starts the call's server span, a child of the caller's.
func (c *call) startSpan() (context.Context, trace.Span) {
	// The root carries the call for the module's own handlers (package
	// workercall), at no allocation.
	var ctx context.Context = (*callRoot)(c)
	if c.trace != nil { // an untraced call costs no propagator work
		ctx = c.w.prop.Extract(ctx, *c.trace)
	}
	ctx, span := c.w.tracer.Start(ctx, c.tool.spanName, c.tool.spanOpts...)
	if span.IsRecording() { // attributes cost allocations nobody reads when tracing is off
		span.SetAttributes(append(telemetry.SpanAttributes(c.tool.spec.Name, c.key.id, c.stream),
			attribute.String("toolmesh.worker_id", c.w.cfg.ID))...)
	}
	return ctx, span
}

// callerKey names the call's caller as the worker tracks its liveness.
func (c *call) callerKey() callKey { return callKey{c.key.identity, c.callerID} }

// cancel ends the handler's context with cause; harmless once the call ended.
func (c *call) cancel(cause error) {
	if c.cancelFn != nil {
		c.cancelFn(cause)
	}
}

// grant adds n events of credit, saturating: a grant of MaxInt64 is
// unlimited credit, never an overflow that freezes the stream.
func (c *call) grant(n int) {
	c.mu.Lock()
	if int64(n) > math.MaxInt64-c.granted {
		c.granted = math.MaxInt64
	} else {
		c.granted += int64(n)
	}
	c.mu.Unlock()
	select {
	case c.credit <- struct{}{}:
	default:
	}
}

// execute runs everything between admission and the terminal event, and
// says in every Problem whether the handler ran: a call refused or ended
// before its handler began did not run (envelope.RanNo), one that failed
// after did (envelope.RanYes).
// slot: c already holds an execution slot (see runHolding).
func (c *call) execute(ctx context.Context, slot bool) (json.RawMessage, *envelope.Problem) {
	res, p := c.prepare(ctx, slot)
	if p != nil {
		p = p.WithRan(envelope.RanNo)
		c.observeRefused(ctx, p)
		return nil, p
	}
	defer func() { <-c.w.slots }()
	if res.release != nil {
		defer res.release()
		ctx = res.ctx
	}
	data, p := c.runHandler(ctx, res)
	return data, p.WithRan(envelope.RanYes)
}

// prepared is a call ready for its handler: its body and compiled
// response format, holding an execution slot.
type prepared struct {
	body   callBody
	format *envelope.Schema
	// ctx and release, when the tool admits calls itself (an admitter): the
	// handler's context and the admission's end.
	ctx     context.Context
	release func()
}

// prepare parses and checks the call and takes a slot (and, in stream
// mode, sends start): everything before the handler, which has not run
// when prepare fails. On success the caller must give the slot back.
// slot: c holds its slot already; prepare gives it back when it fails.
func (c *call) prepare(ctx context.Context, slot bool) (prepared, *envelope.Problem) {
	w := c.w
	body, format, p := c.parseBody()
	if p != nil {
		if slot {
			<-w.slots
		}
		return prepared{}, p
	}
	if !slot && !c.acquireSlot(ctx) {
		if c.waitRefused {
			return prepared{}, c.mustNotWait()
		}
		return prepared{}, c.contextProblem(ctx)
	}
	p = c.announced(ctx)
	if p == nil && ctx.Err() != nil {
		p = c.contextProblem(ctx)
	}
	var pc prepared
	if p == nil && c.tool.admit != nil {
		pc, p = c.admitted(ctx, body)
	}
	if p == nil {
		p = c.checkSender(ctx)
	}
	if p == nil && c.stream {
		meta := map[string]any{"worker_id": w.cfg.ID}
		if err := c.emit(ctx, envelope.ToolEvent{Type: envelope.EventStart, ToolID: c.tool.spec.Name, CallID: c.key.id, Metadata: meta}); err != nil {
			p = c.contextProblem(ctx)
		}
	}
	if p == nil && c.tool.approve {
		p = c.approve(ctx, body.Args) // the handler has not run while approval waits
	}
	if p != nil {
		if pc.release != nil {
			pc.release()
		}
		<-w.slots
		return prepared{}, p
	}
	pc.body, pc.format = body, format
	return pc, nil
}

// admitted waits for the tool's own admission of the call (an admitter),
// before its start: a refusal is the call's Problem, unrun.
func (c *call) admitted(ctx context.Context, body callBody) (prepared, *envelope.Problem) {
	actx, release, err := c.tool.admit.Admit(ctx, c.request(body))
	if err == nil {
		return prepared{ctx: actx, release: release}, nil
	}
	if c.waitRefused {
		return prepared{}, c.mustNotWait()
	}
	if ctx.Err() != nil {
		return prepared{}, c.contextProblem(ctx)
	}
	return prepared{}, c.w.problems.Rebase(handlerProblem(err))
}

// runHandler runs the handler of a prepared call and checks its result.
func (c *call) runHandler(ctx context.Context, pc prepared) (json.RawMessage, *envelope.Problem) {
	w, body, format := c.w, pc.body, pc.format
	t0 := time.Now()
	res, err := c.invoke(ctx, c.request(body))
	c.tool.observeRun(time.Since(t0))
	if ctx.Err() != nil {
		return nil, c.contextProblem(ctx)
	}
	if err != nil {
		return nil, w.problems.Rebase(handlerProblem(err))
	}
	return c.checkResult(res, body.ResponseFormat, format)
}

// handlerProblem is the Problem of a handler's error while the call's own
// context is still live. Only the call's own deadline and cancel may read
// as the caller's (code timeout or cancelled, which errors.Is matches to
// context.DeadlineExceeded and context.Canceled, and a caller may retry as
// its own timeout): a context error of the handler's own making (an inner
// timeout, "db query: context deadline exceeded") or a timeout Problem it
// returns is the handler's failure, tool_failed. A cancelled Problem the
// handler returns stands: it says the caller dismissed a question or an
// approval, which is the caller's doing.
func handlerProblem(err error) *envelope.Problem {
	var p *envelope.Problem
	if !errors.As(err, &p) {
		return envelope.NewProblem(envelope.CodeToolFailed, err.Error())
	}
	if p.Code != envelope.CodeTimeout {
		return p
	}
	q := envelope.NewProblem(envelope.CodeToolFailed, "the tool's own time limit ran out, not the call's budget: "+p.Detail)
	for k, v := range p.Extensions { // stderr_tail, ran
		q = q.WithExtension(k, v)
	}
	return q
}

// malformedBodyFix is the fix of a call body that is not {"args":{…}, …}:
// most often a bare arguments object sent with a plain `nats req`.
const malformedBodyFix = `Send the call body as a JSON object with the tool's arguments under "args": nats req <prefix>.call.<tool> '{"args":{…}}' (a bare arguments object is not a call body; docs/protocol.md §4.2).`

// parseBody decodes the call body and checks its args against the input
// schema, compiling a json_schema response format (nil otherwise).
func (c *call) parseBody() (callBody, *envelope.Schema, *envelope.Problem) {
	w, t := c.w, c.tool
	// ParseCall: one validation pass, args alias the message's own payload.
	body, err := parseCallBody(c.body)
	if err != nil {
		// Not the args but the body around them is wrong: the fix says
		// what a body is, not "see violations" (there are none).
		return body, nil, w.problems.New(envelope.CodeInvalidInput, "malformed call body: "+err.Error()).
			WithFix(malformedBodyFix, envelope.HasPlaceholders)
	}
	if t.input != nil && !c.serverArgs {
		if v := t.input.Validate(body.Args); len(v) > 0 {
			return body, nil, withBase(envelope.ValidationProblem(envelope.CodeInvalidInput, "args", v), w.problems)
		}
	}
	if rf := body.ResponseFormat; rf != nil && rf.Type == envelope.FormatJSONSchema {
		s, err := w.responseFormatSchema(rf.JSONSchema.Schema)
		if err != nil {
			return body, nil, w.problems.New(envelope.CodeInvalidInput, "response_format.json_schema.schema: "+err.Error())
		}
		return body, s, nil
	}
	return body, nil, nil
}

// toolCalled is the name the call called: its tool's, or for a tool
// serving a family of names (workercall.Family) the one its subject
// named.
func (c *call) toolCalled() string {
	if c.req.Tool != "" {
		return c.req.Tool
	}
	return c.tool.spec.Name
}

// request is the call as its handler sees it.
func (c *call) request(body callBody) *Request {
	t := c.tool
	c.req = Request{
		Tool: c.toolCalled(), CallID: c.key.id, Args: body.Args, DryRun: body.DryRun, Page: body.Page,
		ResponseFormat: body.ResponseFormat, Bearer: c.req.Bearer,
		IdempotencyKey: c.req.IdempotencyKey,
		Deadline:       c.deadline, Streaming: c.stream && !c.fold, Spec: &t.spec, call: c,
		Identity: c.key.identity,
	}
	return &c.req // part of the call: no allocation of its own
}

// checkResult encodes a handler's result and checks it against the
// tool's output schema and the caller's response format.
func (c *call) checkResult(res any, rf *envelope.ResponseFormat, format *envelope.Schema) (json.RawMessage, *envelope.Problem) {
	w, t := c.w, c.tool
	if res == nil {
		return nil, w.problems.New(envelope.CodeMissingTerminal,
			fmt.Sprintf("tool %s returned neither a result nor an error", t.spec.Name))
	}
	data, ok := res.(json.RawMessage)
	if !ok {
		var err error
		if data, err = json.Marshal(res); err != nil {
			return nil, w.problems.New(envelope.CodeOutputInvalid, "result cannot be encoded as JSON: "+err.Error())
		}
	} else if !wire.Valid(data) {
		return nil, w.problems.New(envelope.CodeOutputInvalid, "result is not valid JSON")
	}
	if p := c.checkOutput(data); p != nil {
		return nil, p
	}
	if format != nil {
		if v := format.Validate(data); len(v) > 0 {
			return nil, withBase(envelope.ValidationProblem(envelope.CodeOutputInvalid, "result", v), w.problems)
		}
	}
	if rf != nil && rf.Type == envelope.FormatJSONObject && !wire.IsObject(data) {
		return nil, w.problems.New(envelope.CodeOutputInvalid, "response_format json_object: the result is not a JSON object")
	}
	return data, nil
}

// checkOutput checks a result against the tool's output schema: the whole
// result, or for an MCPResult tool its shape and its structuredContent.
func (c *call) checkOutput(data json.RawMessage) *envelope.Problem {
	w, t := c.w, c.tool
	target, field := data, "result"
	if t.spec.MCPResult {
		sc, err := mcpStructured(data)
		if err != nil {
			return w.problems.New(envelope.CodeOutputInvalid, "mcp_result: "+err.Error())
		}
		if sc == nil && t.output != nil {
			return w.problems.New(envelope.CodeOutputInvalid, "mcp_result: the tool has an output schema but the result has no structuredContent")
		}
		target, field = sc, "result.structuredContent"
	}
	if t.output == nil {
		return nil
	}
	if v := t.output.Validate(target); len(v) > 0 {
		return withBase(envelope.ValidationProblem(envelope.CodeOutputInvalid, field, v), w.problems)
	}
	return nil
}

// withBase rewrites a Problem's type under the worker's base URI.
func withBase(p *envelope.Problem, r problembase.Registry) *envelope.Problem {
	p.Type = r.TypeURI(p.Code)
	return p
}

// acquireSlot takes an execution slot, waiting while all are taken; false
// when ctx ends first, or when the call may not wait (mayWait). A free
// slot is taken without touching ctx.Done, which would allocate the
// context's channel for nothing.
func (c *call) acquireSlot(ctx context.Context) bool {
	select {
	case c.w.slots <- struct{}{}:
		return true
	default:
	}
	if !c.mayWait() {
		return false
	}
	select {
	case c.w.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// redactor removes the call's bearer (as the call brought it) and any URL
// credentials from what the call reports.
func (c *call) redactor() *redact.Redactor {
	if c.bearer == nil {
		return redact.New()
	}
	return redact.New(*c.bearer)
}

// invoke runs the handler, turning a panic into handler_error.
func (c *call) invoke(ctx context.Context, req *Request) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg := c.redactor().String(fmt.Sprint(r))
			c.w.log.Error("handler panicked", "tool", req.Tool, "call_id", req.CallID, "panic", msg, "stack", string(debug.Stack()))
			res, err = nil, c.w.problems.New(envelope.CodeHandlerError, fmt.Sprintf("tool %s panicked: %s", req.Tool, msg))
		}
	}()
	return c.tool.handler.Handle(ctx, req, (*emitter)(c))
}

// contextProblem names why ctx ended.
func (c *call) contextProblem(ctx context.Context) *envelope.Problem {
	cause := context.Cause(ctx)
	if p := askProblem(cause, c.w.problems); p != nil {
		return p
	}
	switch {
	case errors.Is(cause, errCallerCancelled):
		return c.w.problems.New(envelope.CodeCancelled, "the call was cancelled by its caller")
	case errors.Is(cause, errCallerLost):
		return c.w.problems.New(envelope.CodeCancelled, "the caller stopped proving it is alive; the call was cancelled")
	case errors.Is(cause, errPublishDenied):
		return c.w.problems.New(envelope.CodeForbidden, errPublishDenied.Error())
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && c.unleased:
		return c.w.problems.New(envelope.CodeTimeout, fmt.Sprintf(
			"the call reached this worker's limit of %s for calls whose caller does not prove it is alive (send %s= in the call's metadata line, or a shorter %s=)",
			c.w.cfg.Liveness.MaxUnleasedLife, wire.MetaCaller, wire.MetaTimeout))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return c.w.problems.New(envelope.CodeTimeout, fmt.Sprintf("the call's budget ran out after %s", time.Since(c.started).Round(time.Millisecond)))
	}
	return c.w.problems.New(envelope.CodeWorkerLost, fmt.Sprintf("worker %s stopped before the call finished: %v", c.w.cfg.ID, cause))
}

// emitter is the Emitter handed to a handler: the call itself, so handing
// it over allocates nothing.
// Log sends a log message as a progress event (LogEmitter).
func (e *emitter) Log(m envelope.LogMessage) error {
	c := (*call)(e)
	return c.emit(c.ctx, envelope.LogEvent(m))
}

type emitter call

func (e *emitter) Progress(pct float64, message string) error {
	c := (*call)(e)
	return c.emit(c.ctx, envelope.ProgressEvent(pct, message))
}

func (e *emitter) Delta(data any) error {
	c := (*call)(e)
	raw, ok := data.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return fmt.Errorf("delta: %w", err)
		}
	}
	return c.emit(c.ctx, envelope.ToolEvent{Type: envelope.EventDelta, Data: raw})
}
