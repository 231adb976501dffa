package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/redact"
	"github.com/toolmesh/toolmesh/mesh"
)

// errCallEnded is returned by an emit after the call's terminal event.
var errCallEnded = errors.New("the call has already ended")

// call is one admitted call's state.
type call struct {
	w        *Worker
	tool     *tool
	reply    string
	id       string
	key      callKey // (identity, id): how control messages find the call
	callerID string
	mode     string // "" for a plain NATS request, else unary or stream
	stream   bool
	unleased bool   // no caller liveness: the deadline is the worker's bound
	bearer   string // redacted from everything this call reports
	interval time.Duration
	started  time.Time
	deadline time.Time
	header   nats.Header
	body     []byte
	window   int
	cancelFn context.CancelCauseFunc
	credit   chan struct{}

	mu        sync.Mutex // orders seq numbers with publishes, guards the rest
	seq       int64
	sent      int64 // non-terminal events published
	granted   int64 // non-terminal events the caller has allowed
	ended     bool  // the terminal is decided: no more emits
	over      bool  // the terminal has been sent: no more heartbeats
	beat      *time.Timer
	out       nats.Msg    // reused for every event of this call
	seqHeader nats.Header // reused Toolmesh-Seq header
}

// reject answers a call that is refused before it runs.
func (c *call) reject(p *envelope.Problem) {
	c.mu.Lock()
	c.ended = true
	_ = c.terminateLocked(envelope.ErrorEvent(p))
	c.mu.Unlock()
}

// run runs one admitted call from its context to its terminal event.
func (c *call) run() {
	w := c.w
	defer w.inflight.Done()
	defer w.admitted.Add(-1)
	defer c.tool.load.end()

	ctx, span := c.startSpan()
	ctx, cancel := context.WithCancelCause(ctx)
	c.cancelFn = cancel
	if !c.deadline.IsZero() {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithDeadline(ctx, c.deadline)
		defer cancelT()
	}
	c.credit = make(chan struct{}, 1)

	var p *envelope.Problem
	if !c.track() {
		p = w.problems.New(envelope.CodeInvalidInput, fmt.Sprintf("call id %s is already in flight on this worker; every call needs its own id", c.id))
		p = c.finish(nil, p)
	} else {
		if w.stopCtx.Err() != nil { // stopped before this call was registered
			cancel(context.Cause(w.stopCtx))
		}
		c.startHeartbeat()
		p = c.finish(c.execute(ctx))
		c.stopHeartbeat()
		c.untrack()
	}
	cancel(nil)
	mesh.EndSpan(span, p)
}

// startSpan starts the call's server span, a child of the caller's.
func (c *call) startSpan() (context.Context, trace.Span) {
	ctx := c.w.prop.Extract(context.Background(), mesh.HeaderCarrier(c.header))
	ctx, span := c.w.tracer.Start(ctx, c.tool.spanName, c.tool.spanOpts...)
	if span.IsRecording() { // attributes cost allocations nobody reads when tracing is off
		span.SetAttributes(append(mesh.SpanAttributes(c.tool.spec.Name, c.id, c.stream),
			attribute.String("toolmesh.worker_id", c.w.cfg.ID))...)
	}
	return ctx, span
}

// track makes the call findable by control messages and stop; it
// reports false when a call with the same id is already in flight (control
// messages find calls by id, so two calls may not share one).
func (c *call) track() bool {
	w := c.w
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	if _, dup := w.calls[c.key]; dup {
		return false
	}
	w.calls[c.key] = c
	w.callerCalls[c.callerKey()]++
	return true
}

// untrack forgets the call, and its caller once none of its calls runs here.
func (c *call) untrack() {
	w := c.w
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	delete(w.calls, c.key)
	if ck := c.callerKey(); w.callerCalls[ck] <= 1 {
		delete(w.callerCalls, ck)
		delete(w.callers, ck)
	} else {
		w.callerCalls[ck]--
	}
}

// startHeartbeat starts beating for a caller that speaks the protocol
// (a plain NATS request has no mode and gets no heartbeats).
func (c *call) startHeartbeat() {
	if c.mode == "" {
		return
	}
	c.mu.Lock()
	c.beat = time.AfterFunc(c.interval, c.heartbeat)
	c.mu.Unlock()
}

// stopHeartbeat stops the heartbeat, if any.
func (c *call) stopHeartbeat() {
	c.mu.Lock()
	if c.beat != nil {
		c.beat.Stop()
	}
	c.mu.Unlock()
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

// execute runs everything between admission and the terminal event.
func (c *call) execute(ctx context.Context) (json.RawMessage, *envelope.Problem) {
	w := c.w
	body, format, p := c.parseBody()
	if p != nil {
		return nil, p
	}
	select {
	case w.slots <- struct{}{}:
		defer func() { <-w.slots }()
	case <-ctx.Done():
		return nil, c.contextProblem(ctx)
	}
	if ctx.Err() != nil {
		return nil, c.contextProblem(ctx)
	}
	if c.stream {
		meta := map[string]any{"worker_id": w.cfg.ID}
		if err := c.emit(ctx, envelope.StartEvent(c.tool.spec.Name, c.id, meta)); err != nil {
			return nil, c.contextProblem(ctx)
		}
	}
	res, err := c.invoke(ctx, c.request(body))
	if ctx.Err() != nil {
		return nil, c.contextProblem(ctx)
	}
	if err != nil {
		return nil, w.problems.Rebase(envelope.AsProblem(err, envelope.CodeToolFailed))
	}
	return c.checkResult(res, body.ResponseFormat, format)
}

// parseBody decodes the call body and checks its args against the input
// schema, compiling a json_schema response format (nil otherwise).
func (c *call) parseBody() (envelope.Call, *envelope.Schema, *envelope.Problem) {
	w, t := c.w, c.tool
	// ParseCall: one validation pass, args alias the message's own payload.
	body, err := envelope.ParseCall(c.body)
	if err != nil {
		return body, nil, w.problems.New(envelope.CodeInvalidInput, "malformed call body: "+err.Error())
	}
	if t.input != nil {
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

// request is the call as its handler sees it.
func (c *call) request(body envelope.Call) *Request {
	t := c.tool
	return &Request{
		Tool: t.spec.Name, CallID: c.id, Args: body.Args, DryRun: body.DryRun, Page: body.Page,
		ResponseFormat: body.ResponseFormat, Bearer: c.bearer,
		IdempotencyKey: mesh.Header(c.header, mesh.HeaderIdempotencyKey),
		Deadline:       c.deadline, Streaming: c.stream, Spec: &t.spec,
	}
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
	} else if !envelope.ValidJSON(data) {
		return nil, w.problems.New(envelope.CodeOutputInvalid, "result is not valid JSON")
	}
	for _, s := range []*envelope.Schema{t.output, format} {
		if s == nil {
			continue
		}
		if v := s.Validate(data); len(v) > 0 {
			return nil, withBase(envelope.ValidationProblem(envelope.CodeOutputInvalid, "result", v), w.problems)
		}
	}
	if rf != nil && rf.Type == envelope.FormatJSONObject && !envelope.IsJSONObject(data) {
		return nil, w.problems.New(envelope.CodeOutputInvalid, "response_format json_object: the result is not a JSON object")
	}
	return data, nil
}

// withBase rewrites a Problem's type under the worker's base URI.
func withBase(p *envelope.Problem, r envelope.Registry) *envelope.Problem {
	p.Type = r.TypeURI(p.Code)
	return p
}

func bearer(h nats.Header) string {
	v := mesh.Header(h, mesh.HeaderAuthorization)
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// invoke runs the handler, turning a panic into handler_error.
func (c *call) invoke(ctx context.Context, req *Request) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg := redact.String(fmt.Sprint(r), c.bearer)
			c.w.log.Error("handler panicked", "tool", req.Tool, "call_id", req.CallID, "panic", msg, "stack", string(debug.Stack()))
			res, err = nil, c.w.problems.New(envelope.CodeHandlerError, fmt.Sprintf("tool %s panicked: %s", req.Tool, msg))
		}
	}()
	return c.tool.handler.Handle(ctx, req, emitter{c: c, ctx: ctx})
}

// contextProblem names why ctx ended.
func (c *call) contextProblem(ctx context.Context) *envelope.Problem {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errCallerCancelled):
		return c.w.problems.New(envelope.CodeCancelled, "the call was cancelled by its caller")
	case errors.Is(cause, errCallerLost):
		return c.w.problems.New(envelope.CodeCancelled, "the caller stopped proving it is alive; the call was cancelled")
	case errors.Is(cause, errPublishDenied):
		return c.w.problems.New(envelope.CodeForbidden, errPublishDenied.Error())
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && c.unleased:
		return c.w.problems.New(envelope.CodeTimeout, fmt.Sprintf(
			"the call reached this worker's limit of %s for calls whose caller does not prove it is alive (send %s and %s, or a shorter %s)",
			c.w.cfg.MaxUnleasedLife, mesh.HeaderCallerID, mesh.HeaderMode, mesh.HeaderTimeout))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return c.w.problems.New(envelope.CodeTimeout, fmt.Sprintf("the call's budget ran out after %s", time.Since(c.started).Round(time.Millisecond)))
	}
	return c.w.problems.New(envelope.CodeWorkerLost, fmt.Sprintf("worker %s stopped before the call finished: %v", c.w.cfg.ID, cause))
}

// finish sends the one terminal event and returns the Problem it carried
// (nil for a result): a result too large to send goes out as an error.
// Encoding a large result can take a while, so it happens outside c.mu:
// heartbeats keep the caller informed until the terminal is on its way.
func (c *call) finish(data json.RawMessage, p *envelope.Problem) *envelope.Problem {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return redact.Problem(p, c.bearer)
	}
	c.ended = true
	c.mu.Unlock()
	ev := envelope.ResultEvent(data)
	if p != nil {
		// Redacted before anything reads it: the error event, the tool's
		// last_error in $SRV.STATS and the span status all come from p.
		ev = envelope.ErrorEvent(redact.Problem(p, c.bearer))
	}
	ev, enc, _ := c.encodeLocked(ev) // a terminal event always encodes, if only as an error
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendTerminalLocked(ev, enc)
}

// emit sends a non-terminal event, waiting for credit in stream mode.
func (c *call) emit(ctx context.Context, ev envelope.ToolEvent) error {
	for {
		c.mu.Lock()
		if c.ended {
			c.mu.Unlock()
			return errCallEnded
		}
		if !c.stream {
			c.mu.Unlock()
			return nil
		}
		if c.sent < c.granted {
			c.sent++
			err := c.publishLocked(ev)
			c.mu.Unlock()
			return err
		}
		c.mu.Unlock()
		select {
		case <-c.credit:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// publishLocked numbers and publishes one event; c.mu must be held. An
// event larger than one message goes out in chunks; one past
// MaxResultBytes is never cut: a terminal one is replaced by a
// payload_too_large error, a non-terminal one is refused to the handler.
func (c *call) publishLocked(ev envelope.ToolEvent) error {
	ev, data, err := c.encodeLocked(ev)
	if err != nil {
		return err
	}
	return c.sendLocked(ev, data)
}

// terminateLocked sends the call's one terminal event; c.mu must be held.
// The tool's stats are recorded first, so a caller holding the terminal
// never reads stats that miss its call.
// It returns the Problem actually sent, nil for a result.
func (c *call) terminateLocked(ev envelope.ToolEvent) *envelope.Problem {
	ev, data, _ := c.encodeLocked(ev) // a terminal event always encodes, if only as an error
	return c.sendTerminalLocked(ev, data)
}

// sendTerminalLocked records the call's stats and sends its encoded
// terminal event; c.mu must be held.
func (c *call) sendTerminalLocked(ev envelope.ToolEvent, data []byte) *envelope.Problem {
	p := ev.Problem()
	c.tool.record(time.Since(c.started), p)
	c.over = true
	_ = c.sendLocked(ev, data)
	c.releaseReplyLocked()
	return p
}

// serverReplyPrefix starts the reply subjects nats-server makes for
// requests that crossed a service import (see deploy/secure).
const serverReplyPrefix = "_R_."

// releaseReplyLocked ends a server-made reply mapping once the call is
// over. The call export streams its responses, so the server keeps the
// mapping until its response threshold passes (minutes) unless told the
// stream is done, and an empty message is how a streamed response says so.
// Other replies (a single-account mesh) need nothing.
func (c *call) releaseReplyLocked() {
	if strings.HasPrefix(c.reply, serverReplyPrefix) {
		_ = c.w.nc.Publish(c.reply, nil)
	}
}

// encodeLocked returns ev's wire form (it reads nothing c.mu guards, so
// finish calls it unlocked). A terminal event that cannot go out
// as it is (unencodable, or past MaxResultBytes) is replaced by the error
// event that says so, and that event is returned with its bytes. An event
// larger than one message is fine: sendLocked chunks it.
func (c *call) encodeLocked(ev envelope.ToolEvent) (envelope.ToolEvent, []byte, error) {
	data, err := ev.AppendJSON(make([]byte, 0, 128+len(ev.Data)))
	if err != nil {
		if !ev.IsTerminal() {
			return ev, nil, err
		}
		ev = envelope.ErrorEvent(c.w.problems.New(envelope.CodeOutputInvalid, "terminal event cannot be encoded: "+err.Error()))
		data, _ = ev.AppendJSON(nil)
	}
	if limit := c.w.cfg.MaxResultBytes; len(data) > limit {
		p := c.w.problems.New(envelope.CodePayloadTooLarge,
			fmt.Sprintf("%s event is %d bytes, more than this worker's max_result_bytes (%d)", ev.Type, len(data), limit)).
			WithFix("Ask the tool for less (narrower arguments, paging), or raise the worker's MaxResultBytes and the caller's.", envelope.MaybeIncorrect)
		if !ev.IsTerminal() {
			return ev, nil, p
		}
		ev = envelope.ErrorEvent(p)
		data, _ = ev.AppendJSON(nil)
	}
	return ev, data, nil
}

// sendLocked numbers and publishes one encoded event: as one message, or
// as chunks when it is larger than the connection allows.
func (c *call) sendLocked(ev envelope.ToolEvent, data []byte) error {
	if piece := int(c.w.nc.MaxPayload()) - mesh.ChunkOverhead; len(data) > piece {
		return c.sendChunksLocked(ev, data, piece)
	}
	c.seq++
	// A unary call gets exactly one message, so it needs no sequence number:
	// the reply stays as cheap as a plain NATS response. A stream reuses one
	// message and header map: PublishMsg encodes them before it returns,
	// and c.mu is held.
	msg := &c.out
	msg.Subject, msg.Data, msg.Header = c.reply, data, nil
	if c.stream {
		if c.seqHeader == nil {
			c.seqHeader = nats.Header{mesh.HeaderSeq: make([]string, 1)}
		}
		c.seqHeader[mesh.HeaderSeq][0] = itoa(c.seq)
		msg.Header = c.seqHeader
	}
	if err := c.w.nc.PublishMsg(msg); err != nil {
		c.w.log.Warn("publish event", "call_id", c.id, "type", ev.Type, "err", err)
		return err
	}
	return nil
}

// sendChunksLocked sends data in pieces of at most piece bytes, each
// numbered (Toolmesh-Seq, in unary mode too) and marked i/n, so the caller
// reassembles the event in order and sees any lost piece as a gap.
func (c *call) sendChunksLocked(ev envelope.ToolEvent, data []byte, piece int) error {
	n := (len(data) + piece - 1) / piece
	total := strconv.Itoa(n)
	for i := 0; i < n; i++ {
		c.seq++
		part := data[i*piece : min((i+1)*piece, len(data))]
		msg := &nats.Msg{Subject: c.reply, Data: part, Header: nats.Header{
			mesh.HeaderSeq:   []string{itoa(c.seq)},
			mesh.HeaderChunk: []string{strconv.Itoa(i+1) + "/" + total},
		}}
		if err := c.w.nc.PublishMsg(msg); err != nil {
			c.w.log.Warn("publish event chunk", "call_id", c.id, "type", ev.Type, "chunk", i+1, "of", n, "err", err)
			return err
		}
	}
	return nil
}

// heartbeat proves the worker alive to the caller and checks the caller's lease.
func (c *call) heartbeat() {
	c.mu.Lock()
	if c.over {
		c.mu.Unlock()
		return
	}
	msg := &nats.Msg{Subject: c.reply, Header: nats.Header{
		mesh.HeaderHeartbeat: []string{"1"},
		mesh.HeaderWorkerID:  []string{c.w.cfg.ID},
		mesh.HeaderCallID:    []string{c.id},
	}}
	_ = c.w.nc.PublishMsg(msg)
	c.beat.Reset(c.interval)
	c.mu.Unlock()
	if c.callerID != "" {
		if seen := c.w.callerSeen(c.callerKey(), c.started); time.Since(seen) > mesh.MissedBeats*c.interval {
			c.w.suspectCaller(c)
		}
	}
}

// emitter is the Emitter handed to a handler.
type emitter struct {
	c   *call
	ctx context.Context
}

func (e emitter) Progress(pct float64, message string) error {
	return e.c.emit(e.ctx, envelope.ProgressEvent(pct, message))
}

func (e emitter) Delta(data any) error {
	raw, ok := data.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return fmt.Errorf("delta: %w", err)
		}
	}
	return e.c.emit(e.ctx, envelope.DeltaEvent(raw))
}
