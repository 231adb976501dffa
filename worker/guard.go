package worker

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"

	"github.com/toolmesh/toolmesh/envelope"
)

// errPublishDenied is the cancel cause of a call whose events the NATS
// server refuses to carry: nobody can hear the handler, so it stops.
var errPublishDenied = errors.New("the NATS server refused to carry this call's events (permissions)")

// callMsg is one call as it arrived: its reply subject, its bytes and the
// message's headers (only the server-stamped identity is read from them).
type callMsg struct {
	reply  string
	data   []byte
	header nats.Header
	batch  *batch // the batch message it came in, if any
	// batchID is the call's id as its batch line gave it (batched calls only).
	batchID string
	// called is the name the call called, for a tool serving a family of
	// names ("" for every other tool: the name is the tool's).
	called string
}

// newCall builds a call from its message, answering it at once (and
// returning nil) when its metadata is malformed, the body too large or the
// budget already spent. A call whose caller does not prove it is alive
// gets a bounded life: its budget or MaxUnleasedLife, whichever is shorter.
func (w *Worker) newCall(t *tool, m callMsg, received time.Time) *call {
	c := &call{w: w, tool: t, reply: m.reply, batch: m.batch, started: received, interval: w.cfg.Liveness.Heartbeat}
	c.req.Tool = m.called // kept in the request until it is made (see request)
	line, body, err := wire.SplitCall(m.data)
	var meta callMeta
	var prob *envelope.Problem
	if err != nil {
		prob = w.problems.New(envelope.CodeInvalidInput, "malformed call: "+err.Error()).WithFix(metaFix, envelope.MaybeIncorrect)
	} else {
		meta, prob = w.meta.parse(line)
	}
	c.setMeta(meta)
	if m.batch != nil {
		c.key.id, c.ask1 = m.batchID, false // a batched call is never asked (§23.1)
		if prob == nil && c.stream {
			prob = w.problems.New(envelope.CodeInvalidInput, "a batch carries unary calls only; send a stream call on its own").WithFix(metaFix, envelope.MaybeIncorrect)
		}
	}
	if c.key.id == "" {
		c.key.id = ulid.Make().String()
	}
	if c.serverReply() {
		c.markSent() // the mapping is fresh: no keepalive is due for a minute
	}
	c.key.identity = wire.Identity(m.header)
	if prob == nil {
		prob = w.refuseConflict(t, meta)
	}
	if prob == nil {
		prob = w.refuseEarly(m, meta)
	}
	c.body = body // also for OnRefused's args, when refused here
	if prob != nil {
		c.reject(prob)
		return nil
	}
	if meta.hasBudget {
		c.deadline = received.Add(meta.budget)
	}
	c.pickup = pickupNanos(meta.pickup)
	if c.callerID == "" || !c.repliesToCaller() { // nobody will prove the caller alive
		if life := received.Add(w.cfg.Liveness.MaxUnleasedLife); c.deadline.IsZero() || c.deadline.After(life) {
			c.deadline, c.unleased = life, true
		}
	}
	return c
}

// pickupNanos is a pickup cutoff as unix ns, as a call keeps it: 0 for
// none, at least 1 for one at or before 1970 (always past), and
// math.MaxInt64 for one later than int64 nanoseconds reach (never past).
func pickupNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Unix() >= math.MaxInt64/int64(time.Second):
		return math.MaxInt64
	}
	return max(t.UnixNano(), 1)
}

// setMeta copies a call's metadata into it.
func (c *call) setMeta(m callMeta) {
	c.key.id, c.callerID, c.stream = m.callID, m.callerID, m.mode == wire.ModeStream
	c.interval, c.granted = m.interval, int64(m.window)
	c.req.Bearer, c.req.IdempotencyKey, c.ask1 = m.bearer, m.idem, m.ask
	c.fold = c.stream && m.fold
	c.serverArgs = m.serverArgs && c.tool.spec.MCP != nil
	// Both sides must accept a lost call reported "maybe": the caller
	// (maybe=1) and this worker's own spec of the tool, or the caller's
	// idempotency key (§8.2).
	c.unconfirmed = m.maybe && (c.tool.retrySafe || m.idem != "")
	if m.bearer != "" {
		bearer := m.bearer // only a call with a bearer pays for its copy
		c.bearer = &bearer
	}
	if m.trace != (traceFields{}) {
		tf := m.trace // only a traced call pays for its own copy
		c.trace = &tf
	}
	if c.stream {
		c.out = &outbox{}
	}
}

// refuseConflict is the Problem of a call validated against another spec
// of its tool than this worker's (docs/protocol.md §14.1): it must not
// run here. It is retried at once (retry_after 0, ran "no"): another
// worker of the tool's queue group, one with the caller's spec, may take
// it. The Problem names this worker and its own spec's digest, so the
// caller can say which workers differ.
func (w *Worker) refuseConflict(t *tool, meta callMeta) *envelope.Problem {
	if meta.spec == "" || meta.spec == t.digest {
		return nil
	}
	return w.problems.New(envelope.CodeToolConflict, fmt.Sprintf(
		"worker %s gives another spec of tool %q (digest %s) than the one the call was validated against (digest %s); the handler did not run",
		w.cfg.ID, t.spec.Name, t.digest, meta.spec)).
		WithRetryAfter(0).
		WithExtension("worker", w.cfg.ID).
		WithExtension("spec_digest", t.digest).
		WithExtension("call_spec_digest", meta.spec)
}

// refuseEarly is the Problem of a well-formed call that must not run: a
// body past MaxArgsBytes, or a budget already spent.
func (w *Worker) refuseEarly(m callMsg, meta callMeta) *envelope.Problem {
	if len(m.data) > w.cfg.Limits.MaxArgsBytes {
		return w.problems.New(envelope.CodePayloadTooLarge,
			fmt.Sprintf("call body is %d bytes, more than this worker's limit of %d", len(m.data), w.cfg.Limits.MaxArgsBytes)).
			WithFix(largeArgsFix, envelope.MaybeIncorrect)
	}
	if meta.hasBudget && meta.budget <= 0 {
		return w.problems.New(envelope.CodeTimeout, "the call's budget was spent before it started; the handler did not run")
	}
	if late := w.lateForPickup(meta); late > 0 {
		return w.problems.New(envelope.CodeOverloaded, fmt.Sprintf(
			"worker %s read the call %s too late for its caller's pickup deadline; the handler did not run and will not", w.cfg.ID, late.Round(time.Millisecond))).
			WithRetryAfter(w.cfg.Limits.OverloadRetryAfter.Seconds())
	}
	return nil
}

// lateForPickup is how far past its pickup cutoff the worker reads a
// call; 0 when the call is in time or carries no cutoff. Its caller
// reports such a call not run (or soon will), so it must not run.
func (w *Worker) lateForPickup(meta callMeta) time.Duration {
	if meta.pickup.IsZero() {
		return 0
	}
	return max(time.Since(meta.pickup), 0)
}

// onViolation stops the calls whose events the server refused to carry,
// and logs a refused subscription (Register reports its own at once); see
// wire.OnViolation.
func (w *Worker) onViolation(op wire.Operation, subject string) {
	if w.stopCtx.Err() != nil {
		return
	}
	if op == wire.OpSubscribe {
		w.log.Error("the NATS server refused a subscription: this worker does not receive its messages", "subject", subject)
		return
	}
	w.callsMu.Lock()
	var hit []*call
	for _, c := range w.calls {
		if c.reply == subject {
			hit = append(hit, c)
		}
	}
	w.callsMu.Unlock()
	for _, c := range hit {
		c.cancel(errPublishDenied)
	}
	w.log.Error("the NATS server refused a publish", "subject", subject, "calls_stopped", len(hit))
}

// confirmSubscriptions round-trips to the server and fails, naming the
// subject, when its permissions refused one of subjects. The server sends
// the refusal before answering the round trip, and nats.go records it as
// the connection's last error before the round trip returns.
func (w *Worker) confirmSubscriptions(subjects ...string) error {
	if err := w.nc.FlushTimeout(w.confirmTimeout); err != nil {
		return fmt.Errorf("subscriptions not confirmed by the server: %w", err)
	}
	op, denied, ok := wire.Violation(w.nc.LastError())
	if !ok || op != wire.OpSubscribe {
		return nil
	}
	for _, s := range subjects {
		if s == denied {
			return wire.ForbiddenProblem(w.problems.New, op, denied,
				"this worker cannot take the messages it needs; grant the subject to the worker's NATS user, or host only the tools (and use the --pool) it is permitted")
		}
	}
	return nil
}

func (w *Worker) subjectsOf(subs []*nats.Subscription) []string {
	out := make([]string, 0, len(subs))
	for _, s := range subs {
		out = append(out, s.Subject)
	}
	return out
}
