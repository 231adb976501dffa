package caller

import (
	"context"
	"io"
	"iter"
	"sync"

	"github.com/toolmesh/toolmesh/envelope"
)

// Stream is one streaming call: its events in order, ending with exactly
// one terminal event (result or error). Failures the mesh detects —
// worker_lost, stream_gap, connection_lost, cancelled, timeout — arrive as
// that terminal error event too, so a reader handles one shape.
//
// A stream goes through Config.Middleware and the retry policy as Call
// does: the middleware sees one Invocation and the terminal event (the
// events before it go to the reader as they arrive), and a retry-safe
// failure is retried while the reader has been given nothing of the
// failed attempt but its start event. The reader then sees each attempt's
// start event (its call_id and worker), and one terminal.
type Stream struct {
	c      *Caller
	ctx    context.Context // the stream's own: Close cancels it
	cancel context.CancelCauseFunc
	events chan streamItem // non-terminal events on their way to the reader
	done   chan struct{}   // closed once terminal is set
	sent   chan struct{}   // closed when an attempt is sent, or the call ended unsent

	mu       sync.Mutex
	p        *pending           // the current attempt
	id       string             // the current attempt's call id
	terminal envelope.ToolEvent // set before done is closed
	over     bool               // the reader has had the terminal
	sentOnce sync.Once
}

// streamBuffer is how many events may wait between the goroutine that
// takes them off the wire and the reader. With none, every event cost a
// goroutine switch each way; with a few, a fast reader takes them in runs.
// They still count against the credit window until the reader has them,
// so the buffer does not add to what a worker may send unread.
const streamBuffer = 32

// streamItem is one event for the reader and the attempt it came from,
// which counts it read (and grants credit) once the reader takes it.
type streamItem struct {
	ev envelope.ToolEvent
	p  *pending
}

// Stream starts tool with args in stream mode. An error is returned only
// when the call could not be sent at all (a *envelope.Problem, which
// middleware may also answer with); everything after that arrives as
// events.
func (c *Caller) Stream(ctx context.Context, tool string, args any, opts ...Option) (*Stream, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	s := &Stream{c: c, ctx: sctx, cancel: cancel, events: make(chan streamItem, streamBuffer),
		done: make(chan struct{}), sent: make(chan struct{})}
	go s.pump(tool, args, opts)
	<-s.sent
	select {
	case <-s.done:
		if s.id == "" && s.terminal.Problem() != nil {
			cancel(nil)
			return nil, s.terminal.Problem()
		}
	default:
	}
	return s, nil
}

// pump runs the call through the middleware chain and records its terminal.
func (s *Stream) pump(tool string, args any, opts []Option) {
	_, ev := s.c.invoker(s.ctx, &Invocation{Tool: tool, Args: args, Options: opts, stream: s})
	s.mu.Lock()
	s.terminal = ev
	s.mu.Unlock()
	close(s.done)
	s.markSent()
}

func (s *Stream) markSent() { s.sentOnce.Do(func() { close(s.sent) }) }

// attach records a sent attempt.
func (s *Stream) attach(p *pending) {
	s.mu.Lock()
	s.p, s.id = p, p.id
	s.mu.Unlock()
	s.markSent()
}

// hand queues one of p's events for the reader; false when ctx ends
// first. The event counts as read (§10) when the reader takes it.
func (s *Stream) hand(ctx context.Context, p *pending, ev envelope.ToolEvent) bool {
	// While the buffer has room (a reader keeping up), a plain send: a
	// select on two channels locks both, per event.
	select {
	case s.events <- streamItem{ev: ev, p: p}:
		return true
	default:
	}
	select {
	case s.events <- streamItem{ev: ev, p: p}:
		return true
	case <-ctx.Done():
		return false
	}
}

// streamEvent is the innermost Invoker of a stream: attempts, retried
// while retry-safe and while the reader has had nothing from them.
func (c *Caller) streamEvent(ctx context.Context, s *Stream, tool string, args any, o callOptions) (string, envelope.ToolEvent) {
	return c.withRetries(ctx, tool, o, func(ctx context.Context) (string, envelope.ToolEvent, bool) {
		return c.streamOnce(ctx, s, tool, args, o)
	})
}

// streamOnce makes one attempt, handing its events to the reader as they
// arrive; delivered reports whether any but the start event was queued for it
// (after which the attempt is not retried).
func (c *Caller) streamOnce(ctx context.Context, s *Stream, tool string, args any, o callOptions) (id string, terminal envelope.ToolEvent, delivered bool) {
	p, prob := c.start(ctx, tool, args, o, stream)
	if prob != nil {
		return "", envelope.ErrorEvent(prob), false
	}
	s.attach(p)
	for {
		ev, err := p.next(ctx)
		if err != nil { // only after the terminal, which is returned below
			return p.id, envelope.ErrorEvent(c.problems.New(envelope.CodeInternal, err.Error())), delivered
		}
		if ev.IsTerminal() {
			return p.id, ev, delivered
		}
		if s.hand(ctx, p, ev) && ev.Type != envelope.EventStart {
			delivered = true
		}
	}
}

// attempt returns the current attempt, nil before the first is sent.
func (s *Stream) attempt() *pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// CallID returns the call's id, a ULID: the current attempt's when the
// call was retried.
func (s *Stream) CallID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Next returns the next event, blocking until one arrives. After the
// terminal event it returns io.EOF. If the stream's context ends first,
// the call is cancelled and Next returns the cancelled (or timeout) event.
func (s *Stream) Next() (envelope.ToolEvent, error) {
	if s.over {
		return envelope.ToolEvent{}, io.EOF
	}
	if s.ctx.Err() != nil {
		// Closed, or its context ended: what waits unread is dropped,
		// and the terminal says why.
		<-s.done
		s.over = true
		return s.terminal, nil
	}
	// An event already waiting is taken with a plain receive: a select on
	// two channels locks both, per event.
	select {
	case it := <-s.events:
		return s.take(it), nil
	default:
	}
	select {
	case it := <-s.events:
		return s.take(it), nil
	case <-s.done:
	}
	// Every event was queued before done was closed: they come first.
	select {
	case it := <-s.events:
		return s.take(it), nil
	default:
	}
	s.over = true
	s.cancel(nil)
	return s.terminal, nil
}

// take gives the reader one queued event and counts it read.
func (s *Stream) take(it streamItem) envelope.ToolEvent {
	it.p.read(it.ev)
	return it.ev
}

// Events ranges over the events, the terminal one included. The terminal
// error event comes with its *envelope.Problem as the error, so
//
//	for ev, err := range s.Events() {
//		if err != nil { return err } // the call failed
//		…
//	}
//
// handles failure. Leaving the loop early (break, return) closes the
// stream: the call is cancelled and its handler's context ends.
func (s *Stream) Events() iter.Seq2[envelope.ToolEvent, error] {
	return func(yield func(envelope.ToolEvent, error) bool) {
		for {
			ev, err := s.Next()
			if err != nil { // io.EOF: the terminal was read before
				return
			}
			if p := ev.Problem(); p != nil {
				err = p
			}
			if !yield(ev, err) {
				_ = s.Close()
				return
			}
			if ev.IsTerminal() {
				return
			}
		}
	}
}

// Response reads to the terminal event and returns the call's Response,
// with a *envelope.Problem error when the call failed.
func (s *Stream) Response() (envelope.Response, error) {
	for {
		ev, err := s.Next()
		if err != nil {
			p := s.c.problems.New(envelope.CodeInternal, "stream already finished")
			return envelope.ProblemResponse(s.CallID(), p), p
		}
		if ev.IsTerminal() {
			resp, rerr := envelope.ResponseFromEvent(s.CallID(), ev)
			if rerr != nil {
				p := s.c.problems.New(envelope.CodeInternal, rerr.Error())
				return envelope.ProblemResponse(s.CallID(), p), p
			}
			if p := ev.Problem(); p != nil {
				return resp, p
			}
			return resp, nil
		}
	}
}

// Close cancels the call if it has not finished and waits until the
// worker has been told; it is safe to call twice.
func (s *Stream) Close() error {
	s.cancel(s.c.problems.New(envelope.CodeCancelled, "the stream was closed by its reader"))
	<-s.done
	return nil
}
