package caller

import (
	"context"
	"errors"
	"io"
	"iter"

	"github.com/toolmesh/toolmesh/envelope"
)

// Stream is one streaming call: its events in order, ending with exactly
// one terminal event (result or error). Failures the mesh detects —
// worker_lost, stream_gap, connection_lost, cancelled, timeout — arrive as
// that terminal error event too, so a reader handles one shape.
type Stream struct {
	p      *pending
	ctx    context.Context
	cancel context.CancelFunc
}

// Stream starts tool with args in stream mode. An error is returned only
// when the call could not be sent at all (a *envelope.Problem); everything
// after that arrives as events.
func (c *Caller) Stream(ctx context.Context, tool string, args any, opts ...Option) (*Stream, error) {
	o := c.options(opts)
	cancel := context.CancelFunc(func() {})
	if o.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
	}
	p, prob := c.start(ctx, tool, args, o, stream)
	if prob != nil {
		cancel()
		return nil, prob
	}
	return &Stream{p: p, ctx: ctx, cancel: cancel}, nil
}

// CallID returns the call's id, a ULID.
func (s *Stream) CallID() string { return s.p.id }

// Next returns the next event, blocking until one arrives. After the
// terminal event it returns io.EOF. If the stream's context ends first,
// the call is cancelled and Next returns the cancelled (or timeout) event.
func (s *Stream) Next() (envelope.ToolEvent, error) {
	ev, err := s.p.next(s.ctx)
	if err == nil && ev.IsTerminal() {
		s.cancel()
	}
	return ev, err
}

// Events ranges over the events, the terminal one included.
func (s *Stream) Events() iter.Seq2[envelope.ToolEvent, error] {
	return func(yield func(envelope.ToolEvent, error) bool) {
		for {
			ev, err := s.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(ev, err) || err != nil || ev.IsTerminal() {
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
			p := s.p.c.problems.New(envelope.CodeInternal, "stream already finished")
			return envelope.ProblemResponse(s.p.id, p), p
		}
		if ev.IsTerminal() {
			resp, _ := envelope.ResponseFromEvent(s.p.id, ev)
			if p := ev.Problem(); p != nil {
				return resp, p
			}
			return resp, nil
		}
	}
}

// Close cancels the call if it has not finished; it is safe to call twice.
func (s *Stream) Close() error {
	s.p.mu.Lock()
	over := s.p.over
	s.p.mu.Unlock()
	if !over {
		prob := s.p.c.problems.New(envelope.CodeCancelled, "the stream was closed by its reader")
		s.p.abandon(prob)
		s.p.endSpan(prob)
	}
	s.cancel()
	return nil
}
