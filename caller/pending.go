package caller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

// pending is one call in flight. The inbox callback appends to its queue
// and never blocks; the queue is bounded by the credit window in stream
// mode (a worker that overruns it ends the call) and by one event in
// unary mode.
type pending struct {
	c      *Caller
	id     string
	tool   string
	stream bool
	window int
	span   trace.Span
	notify chan struct{}

	mu             sync.Mutex
	queue          []envelope.ToolEvent
	nextSeq        int64
	lastHeard      time.Time
	workerID       string
	spoken         bool   // a worker has sent something for this call
	terminalQueued bool   // a terminal event is queued: nothing more is accepted
	over           bool   // the terminal was handed to the reader
	consumed       int    // events read since the last credit grant
	chunks         []byte // the event being reassembled from chunks
	chunkNext      int    // the piece expected next (1-based; 0: none in progress)
}

func (p *pending) signal() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// liveness is what the watchdog needs to judge one call.
type liveness struct {
	workerID string
	last     time.Time // the last word, or the call's start before any
	spoken   bool      // a worker has said anything at all
	over     bool      // the terminal is queued: nothing left to judge
}

func (p *pending) liveness() liveness {
	p.mu.Lock()
	defer p.mu.Unlock()
	return liveness{workerID: p.workerID, last: p.lastHeard, spoken: p.spoken, over: p.terminalQueued}
}

// heard records a heartbeat.
func (p *pending) heard(workerID string) {
	p.mu.Lock()
	p.lastHeard = time.Now()
	p.spoken = true
	if p.workerID == "" {
		p.workerID = workerID
	}
	p.mu.Unlock()
}

// deliver queues one event, checking its sequence number: a hole ends the
// call with stream_gap rather than handing over a silently holed stream.
func (p *pending) deliver(seq int64, ev envelope.ToolEvent) {
	p.mu.Lock()
	if p.terminalQueued {
		p.mu.Unlock()
		return
	}
	if seq != p.nextSeq {
		want := p.nextSeq
		p.mu.Unlock()
		p.fail(p.c.problems.New(envelope.CodeStreamGap, fmt.Sprintf("expected event %d of call %s, got %d: events were lost in transit", want, p.id, seq)), true)
		return
	}
	if p.stream && !ev.IsTerminal() && len(p.queue) >= p.window {
		// The reader has not yet consumed the whole window, so a correct
		// worker cannot have sent this: ending the call keeps the caller's
		// memory bounded whatever a worker does.
		p.mu.Unlock()
		p.fail(p.c.problems.New(envelope.CodeInternal, fmt.Sprintf("worker sent event %d of call %s beyond the %d-event credit window", seq, p.id, p.window)), true)
		return
	}
	p.nextSeq++
	p.lastHeard = time.Now()
	p.spoken = true
	if ev.Type == envelope.EventStart && p.workerID == "" {
		if wid, ok := ev.Metadata["worker_id"].(string); ok {
			p.workerID = wid
		}
	}
	p.queue = append(p.queue, ev)
	if ev.IsTerminal() {
		p.terminalQueued = true
	}
	p.mu.Unlock()
	p.signal()
}

// chunk takes one piece ("i/n") of an event too large for one message:
// pieces must come in order with consecutive sequence numbers, the whole
// stays within the caller's MaxResultBytes, and the last piece delivers
// the reassembled event like any other (so it counts once against the
// credit window).
func (p *pending) chunk(seq int64, mark string, data []byte) {
	i, n, ok := parseChunk(mark)
	p.mu.Lock()
	if p.terminalQueued {
		p.mu.Unlock()
		return
	}
	var prob *envelope.Problem
	switch {
	case !ok:
		prob = p.c.problems.New(envelope.CodeInternal, fmt.Sprintf("malformed chunk mark %q from the worker", mark))
	case seq != p.nextSeq || i != max(p.chunkNext, 1):
		prob = p.c.problems.New(envelope.CodeStreamGap, fmt.Sprintf("expected event %d (piece %d) of call %s, got %d (piece %s): chunks were lost in transit", p.nextSeq, max(p.chunkNext, 1), p.id, seq, mark))
	case len(p.chunks)+len(data) > p.c.cfg.MaxResultBytes:
		prob = p.c.problems.New(envelope.CodePayloadTooLarge, fmt.Sprintf("an event of call %s is larger than this caller's max_result_bytes (%d); the call was stopped", p.id, p.c.cfg.MaxResultBytes)).
			WithFix("Ask the tool for less (narrower arguments, paging), or raise the caller's MaxResultBytes.", envelope.MaybeIncorrect)
	}
	if prob != nil {
		p.chunks, p.chunkNext = nil, 0
		p.mu.Unlock()
		p.fail(prob, true)
		return
	}
	p.nextSeq++
	p.lastHeard, p.spoken = time.Now(), true
	p.chunks = append(p.chunks, data...)
	p.chunkNext = i + 1
	if i < n {
		p.mu.Unlock()
		return
	}
	whole := p.chunks
	p.chunks, p.chunkNext = nil, 0
	p.nextSeq-- // deliver numbers the whole event with the last piece's seq
	p.mu.Unlock()
	ev, err := envelope.ParseEvent(whole)
	if err != nil {
		p.fail(p.c.problems.New(envelope.CodeInternal, "malformed chunked event from the worker: "+err.Error()), true)
		return
	}
	p.deliver(seq, ev)
}

// parseChunk reads a chunk mark "i/n" with 1 <= i <= n.
func parseChunk(mark string) (i, n int, ok bool) {
	a, b, found := strings.Cut(mark, "/")
	i, errI := strconv.Atoi(a)
	n, errN := strconv.Atoi(b)
	return i, n, found && errI == nil && errN == nil && i >= 1 && i <= n
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
		p.c.sendControl(wid, mesh.Control{Op: mesh.OpCancel, CallID: p.id})
	}
}

// abandon fails the call, stops routing its events and ends its span. Any
// heartbeat that still arrives for it makes the caller send a cancel.
func (p *pending) abandon(prob *envelope.Problem) {
	p.fail(prob, true)
	p.c.remove(p.id)
}

// next returns the call's next event; after the terminal it returns io.EOF.
// When ctx ends first the call is cancelled (or timed out): the worker is
// told, and the reader gets the cancelled/timeout error event.
func (p *pending) next(ctx context.Context) (envelope.ToolEvent, error) {
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			ev := p.queue[0]
			p.queue[0] = envelope.ToolEvent{}
			p.queue = p.queue[1:]
			grant, wid := 0, ""
			if p.stream && !ev.IsTerminal() {
				p.consumed++
				if p.consumed >= p.window/2 && p.workerID != "" {
					grant, wid, p.consumed = p.consumed, p.workerID, 0
				}
			}
			if ev.IsTerminal() {
				p.over = true
			}
			p.mu.Unlock()
			if grant > 0 {
				p.c.sendControl(wid, mesh.Control{Op: mesh.OpCredit, CallID: p.id, N: grant})
			}
			if ev.IsTerminal() {
				p.c.remove(p.id)
				p.endSpan(ev.Problem())
			}
			return ev, nil
		}
		if p.over {
			p.mu.Unlock()
			return envelope.ToolEvent{}, io.EOF
		}
		p.mu.Unlock()
		select {
		case <-p.notify:
		case <-ctx.Done():
			p.abandon(p.contextProblem(ctx))
		}
	}
}

func (p *pending) contextProblem(ctx context.Context) *envelope.Problem {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return p.c.problems.New(envelope.CodeTimeout, fmt.Sprintf("call %s to %s ran out of budget", p.id, p.tool))
	}
	return p.c.problems.New(envelope.CodeCancelled, fmt.Sprintf("call %s to %s was cancelled by the caller", p.id, p.tool))
}
