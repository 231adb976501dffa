package caller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/caller/internal/liveness"
	"github.com/toolmesh/toolmesh/internal/wire"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/envelope"
)

// pending is one call in flight. The inbox callback appends to its queue
// and never blocks; the queue is bounded by the credit window in stream
// mode (a worker that overruns it ends the call) and by one event in
// unary mode. What only some calls need (stream credit, chunk
// reassembly, a held settle Problem, questions) lives behind pointers
// made on first use, so a unary call in flight is 192 bytes, not 384:
// the caller's heap per call in flight is what a flood of calls costs.
type pending struct {
	c     *Caller
	id    string
	batch *batch // the batch it was sent in, or nil (guarded by Caller.mu)
	tool  string
	// extra is what only a traced call or one that asks has; nil for the
	// rest, and never changed once the call is sent.
	extra *pendingExtra
	// notify wakes the reader of a call that may need waking for every
	// event; it is nil for a call whose reader waits once, on gate (wait.go).
	notify chan struct{}
	// gate is locked from the call's registration until its reader may
	// go on, when notify is nil: unlocked once, by wake.
	gate sync.Mutex
	// watch is the watch of the call's context it waits in, linked by
	// watchPrev and watchNext (guarded by Caller.mu).
	watch                *ctxWatch
	watchPrev, watchNext *pending

	mu    sync.Mutex
	queue []envelope.ToolEvent // events from head on wait unread
	head  int32
	// interval is the worker's beat interval in milliseconds (at most
	// wire.MaxHeartbeat's, which is all judging it needs); 0 until it beats.
	interval int32
	nextSeq  int64
	// pickup is the call's pickup cutoff as sent, and lastHeard when a
	// worker last spoke of it (or the call's start), as offsets from
	// Caller.epoch: monotonic, in a third of a time.Time's room.
	pickup    time.Duration // immutable
	lastHeard time.Duration
	workerID  string
	rare      *pendingRare // guarded by mu; made by more (a stream call's at start)

	stream         bool // immutable
	maybe          bool // immutable: sent maybe=1, so lost unnamed it may have run (settle.go)
	spoken         bool // a worker has sent something for this call
	terminalQueued bool // a terminal event is queued: nothing more is accepted
	over           bool // the terminal was handed to the reader
	woken          bool // gate was unlocked
}

// pendingRare is a call's state that a plain unary call never touches.
type pendingRare struct {
	window    int    // stream mode: the credit window
	consumed  int    // events read since the last credit grant
	unread    int    // events queued or in the Stream's hand, not yet read (stream mode)
	chunks    []byte // the event being reassembled from chunks
	chunkNext int    // the piece expected next (1-based; 0: none in progress)
	// due is the Problem a watchdog tick decided for a call no worker has
	// named, held until a settle marker shows nothing naming it was on
	// its way (see settle.go); dueAt is when it was decided.
	due   *envelope.Problem
	dueAt time.Time
}

// pendingExtra is a call's state that only traced calls and calls that
// ask have, set before the call is sent.
type pendingExtra struct {
	span trace.Span // nil: the call is not traced
	// asking is set for a call that declared ask=1 or answers questions
	// (nil: neither).
	asking *askState
}

// span is p's client span: a no-op one when the call is not traced.
func (p *pending) span() trace.Span {
	if p.extra == nil || p.extra.span == nil {
		return p.c.tracer.Noop()
	}
	return p.extra.span
}

// ask is p's asking state, nil when p neither declared ask=1 nor answers questions.
func (p *pending) ask() *askState {
	if p.extra == nil {
		return nil
	}
	return p.extra.asking
}

// more returns p's rare state, making it on first use; p.mu must be held
// (or p not yet sent).
func (p *pending) more() *pendingRare {
	if p.rare == nil {
		p.rare = &pendingRare{}
	}
	return p.rare
}

// dueLocked is the Problem held for p's settle marker (nil: none); p.mu held.
func (p *pending) dueLocked() *envelope.Problem {
	if p.rare == nil {
		return nil
	}
	return p.rare.due
}

// liveness is what the watchdog needs to judge p.
func (p *pending) liveness() liveness.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return liveness.Call{Tool: p.tool, WorkerID: p.workerID, Interval: time.Duration(p.interval) * time.Millisecond, Last: p.c.at(p.lastHeard), Spoken: p.spoken, Over: p.terminalQueued,
		Pickup: p.c.at(p.pickup), Due: p.dueLocked() != nil && !p.spoken, Maybe: p.maybe}
}

// heard records a heartbeat naming this call: the worker holding it and
// the interval it beats at, by which its silence is judged.
func (p *pending) heard(workerID string, interval time.Duration, now time.Time) {
	p.mu.Lock()
	p.lastHeard, p.spoken = p.c.offset(now), true
	p.interval = int32(min(interval, wire.MaxHeartbeat).Milliseconds())
	if p.workerID == "" {
		p.workerID = workerID
	}
	p.mu.Unlock()
}

// deliverFrame queues the events of one message: a bare event (numbered
// 1) or an events frame, parsed first and then queued under one lock with
// one wake-up for the reader, however many events the frame packs.
func (p *pending) deliverFrame(f wire.Frame) {
	if f.Kind == wire.FrameBare {
		p.deliverJSON(1, f.Payload)
		return
	}
	raw, err := f.Events()
	if err != nil {
		p.fail(p.c.problems.New(envelope.CodeInternal, "malformed events frame from the worker: "+err.Error()), true)
		return
	}
	// The inbox callback runs on one goroutine, so one scratch slice
	// serves every frame: no garbage of a ToolEvent per event.
	events := p.c.scratch[:0]
	if cap(events) < len(raw) {
		events = make([]envelope.ToolEvent, len(raw))
		p.c.scratch = events
	}
	events = events[:len(raw)]
	defer clear(events) // hold no frame's bytes past this one
	for i, r := range raw {
		// ParseEvent, not json.Unmarshal: one validation pass instead of
		// two, and the event's data aliases the message nats.go allocated.
		if events[i], err = envelope.ParseEvent(r); err != nil {
			p.fail(p.c.problems.New(envelope.CodeInternal, "malformed event from the worker: "+err.Error()), true)
			return
		}
	}
	p.deliver(f.Seq, events...)
}

// deliverBareInStream takes an unnumbered event on a stream call: only a
// worker's refusal of the call before it read the call's mode may be one
// (docs/protocol.md §6), so it is accepted as event 1 when it is an error
// and nothing has come before it; anything else is a broken stream.
func (p *pending) deliverBareInStream(data []byte) {
	ev, err := envelope.ParseEvent(data)
	p.mu.Lock()
	first := p.nextSeq == 1
	p.mu.Unlock()
	if err != nil || ev.Type != envelope.EventError || !first {
		p.fail(p.c.problems.New(envelope.CodeInternal, "the worker sent a stream event without its number"), true)
		return
	}
	p.deliver(1, ev)
}

// deliverJSON parses and queues one event; false once the call has ended.
func (p *pending) deliverJSON(seq int64, data []byte) bool {
	// ParseEvent, not json.Unmarshal: one validation pass instead of two,
	// and the event's data aliases the message nats.go allocated for us.
	ev, err := envelope.ParseEvent(data)
	if err != nil {
		p.fail(p.c.problems.New(envelope.CodeInternal, "malformed event from the worker: "+err.Error()), true)
		return false
	}
	return p.deliver(seq, ev)
}

// deliver queues events numbered from seq, checking the numbers: a hole
// ends the call with stream_gap rather than handing over a silently holed
// stream. It reports whether the call goes on.
func (p *pending) deliver(seq int64, events ...envelope.ToolEvent) bool {
	now := time.Now()
	p.mu.Lock()
	var prob *envelope.Problem
	for i, ev := range events {
		if prob = p.queueLocked(seq+int64(i), ev, now); prob != nil || p.terminalQueued {
			break
		}
	}
	goesOn := !p.terminalQueued
	p.mu.Unlock()
	if prob != nil {
		p.fail(prob, true)
		return false
	}
	p.signal()
	return goesOn
}

// queueLocked queues one event numbered seq, or returns the Problem that
// ends the call; p.mu must be held.
func (p *pending) queueLocked(seq int64, ev envelope.ToolEvent, now time.Time) *envelope.Problem {
	if p.terminalQueued {
		return nil
	}
	if seq != p.nextSeq {
		return p.c.problems.New(envelope.CodeStreamGap, fmt.Sprintf("expected event %d of call %s, got %d: events were lost in transit", p.nextSeq, p.id, seq))
	}
	if isAsk(ev) {
		if prob := p.askLocked(ev); prob != nil {
			return prob
		}
	} else if p.stream && !ev.IsTerminal() && p.rare.unread >= p.rare.window {
		// The reader has not yet consumed the whole window (counting the
		// events the Stream has taken from the queue but not handed out),
		// so a correct worker cannot have sent this: ending the call keeps
		// the caller's memory bounded whatever a worker does.
		return p.c.problems.New(envelope.CodeInternal, fmt.Sprintf("worker sent event %d of call %s beyond the %d-event credit window", seq, p.id, p.rare.window))
	}
	p.nextSeq++
	p.lastHeard = p.c.offset(now)
	p.spoken = true
	if ev.Type == envelope.EventStart && p.workerID == "" {
		if wid, ok := ev.Metadata["worker_id"].(string); ok {
			p.workerID = wid
		}
	}
	p.queue = append(p.queue, ev)
	if p.stream && !isAsk(ev) {
		p.rare.unread++
	}
	if ev.IsTerminal() {
		p.terminalQueued = true
	}
	return nil
}

// chunk takes one piece ("i/n") of an event too large for one message:
// pieces must come in order with consecutive sequence numbers, the whole
// stays within the caller's MaxResultBytes, and the last piece delivers
// the reassembled event like any other (so it counts once against the
// credit window).
func (p *pending) chunk(seq int64, i, n int, data []byte) {
	p.mu.Lock()
	if p.terminalQueued {
		p.mu.Unlock()
		return
	}
	r := p.more()
	var prob *envelope.Problem
	switch {
	case seq != p.nextSeq || i != max(r.chunkNext, 1):
		prob = p.c.problems.New(envelope.CodeStreamGap, fmt.Sprintf("expected event %d (piece %d) of call %s, got %d (piece %d/%d): chunks were lost in transit", p.nextSeq, max(r.chunkNext, 1), p.id, seq, i, n))
	case len(r.chunks)+len(data) > p.c.cfg.MaxResultBytes,
		// Every piece but the last is as large as the first, so an event
		// announced in n pieces of this size is larger than the cap
		// before they come: end the call now, not after the server has
		// queued the whole of it for this connection.
		i == 1 && int64(n-1)*int64(len(data)) >= int64(p.c.cfg.MaxResultBytes):
		prob = p.c.problems.New(envelope.CodePayloadTooLarge, fmt.Sprintf("an event of call %s is larger than this caller's max_result_bytes (%d); the call was stopped", p.id, p.c.cfg.MaxResultBytes)).
			WithFix("Ask the tool for less (narrower arguments, paging), or raise the caller's MaxResultBytes.", envelope.MaybeIncorrect)
	}
	if prob != nil {
		r.chunks, r.chunkNext = nil, 0
		p.mu.Unlock()
		p.fail(prob, true)
		return
	}
	p.nextSeq++
	p.lastHeard, p.spoken = p.c.offset(time.Now()), true
	if i == 1 {
		// Every piece but the last is the size of the first: the whole is
		// at most n of them (and within the cap, checked above), so one
		// allocation holds it and no append copies it again.
		r.chunks = make([]byte, 0, min(int64(n)*int64(len(data)), int64(p.c.cfg.MaxResultBytes)))
	}
	r.chunks = append(r.chunks, data...)
	r.chunkNext = i + 1
	if i < n {
		p.mu.Unlock()
		return
	}
	whole := r.chunks
	r.chunks, r.chunkNext = nil, 0
	p.nextSeq-- // deliver numbers the whole event with the last piece's seq
	p.mu.Unlock()
	p.deliverJSON(seq, whole)
}

// fail queues a terminal error decided on this side, unless the call
// already has its terminal; with cancelWorker it also tells the worker to stop.
func (p *pending) fail(prob *envelope.Problem, cancelWorker bool) {
	p.mu.Lock()
	if p.terminalQueued {
		p.mu.Unlock()
		return
	}
	p.terminalQueued = true
	p.queue = append(p.queue, envelope.ErrorEvent(prob))
	wid := p.workerID
	p.mu.Unlock()
	p.signal()
	if cancelWorker && wid != "" {
		p.c.sendControl(wid, wire.Control{Op: wire.OpCancel, CallID: p.id})
	}
}

// abandon fails the call, stops routing its events and ends its span. Any
// heartbeat that still arrives for it makes the caller send a cancel.
func (p *pending) abandon(prob *envelope.Problem) {
	p.stopAsking()
	p.fail(prob, true)
	p.c.remove(p.id)
}

// read counts one stream event as read by the stream's reader, granting
// the worker credit for every half window read (protocol §10). It is
// called when the reader takes the event, not when it leaves the queue,
// so the events the Stream holds in hand count against the window too.
func (p *pending) read(ev envelope.ToolEvent) {
	if isAsk(ev) {
		return // questions and answers take no credit (protocol §23)
	}
	p.mu.Lock()
	grant, wid := 0, ""
	r := p.rare // a stream call's, made at start
	r.unread--
	r.consumed++
	if r.consumed >= r.window/2 && p.workerID != "" {
		grant, wid, r.consumed = r.consumed, p.workerID, 0
	}
	p.mu.Unlock()
	if grant > 0 {
		p.c.sendControl(wid, wire.Control{Op: wire.OpCredit, CallID: p.id, N: grant})
	}
}

// next returns the call's next event; after the terminal it returns io.EOF.
// When ctx ends first the call is cancelled (or timed out): the worker is
// told, and the reader gets the cancelled/timeout error event.
func (p *pending) next(ctx context.Context) (envelope.ToolEvent, error) {
	for {
		p.mu.Lock()
		if int(p.head) < len(p.queue) {
			ev := p.queue[p.head]
			p.queue[p.head] = envelope.ToolEvent{}
			if p.head++; int(p.head) == len(p.queue) {
				p.queue, p.head = p.queue[:0], 0 // the backing array is reused
			}
			if ev.IsTerminal() {
				p.over = true
			}
			p.mu.Unlock()
			p.handOver(ev)
			if ev.IsTerminal() {
				p.stopAsking()
				p.c.remove(p.id)
				p.endSpan(ev.Problem())
				p.giveBack()
			}
			return ev, nil
		}
		if p.over {
			p.mu.Unlock()
			return envelope.ToolEvent{}, io.EOF
		}
		p.mu.Unlock()
		if !p.wait(ctx) {
			p.abandon(p.contextProblem(ctx))
		}
	}
}

func (p *pending) contextProblem(ctx context.Context) *envelope.Problem {
	var cause *envelope.Problem
	if errors.As(context.Cause(ctx), &cause) {
		return cause // e.g. Stream.Close's: closed by its reader
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return p.c.problems.New(envelope.CodeTimeout, fmt.Sprintf("call %s to %s ran out of budget", p.id, p.tool)).WithRan(envelope.RanMaybe)
	}
	return p.c.problems.New(envelope.CodeCancelled, fmt.Sprintf("call %s to %s was cancelled by the caller", p.id, p.tool)).WithRan(envelope.RanMaybe)
}
