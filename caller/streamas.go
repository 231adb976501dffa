package caller

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/toolmesh/toolmesh/envelope"
)

// TypedStream is a streaming call read as Go values: deltas of type D and
// a result of type Out, the caller's side of the worker's
// TypedEmitter[D] (worker.AddStreamTool).
type TypedStream[D, Out any] struct {
	s          *Stream
	tool       string
	onProgress func(pct float64, message string)
	result     Out
	err        error
	ended      bool
}

// StreamAs starts tool in stream mode like Caller.Stream, to be read as
// typed deltas (Deltas) and a typed result (Result). An error is returned
// only when the call could not be sent at all.
func StreamAs[D, Out any](ctx context.Context, c *Caller, tool string, args any, opts ...Option) (*TypedStream[D, Out], error) {
	s, err := c.Stream(ctx, tool, args, opts...)
	if err != nil {
		return nil, err
	}
	return &TypedStream[D, Out]{s: s, tool: tool}, nil
}

// OnProgress has fn called with every progress event as the stream is
// read (pct is -1 when the event has none); it returns t.
func (t *TypedStream[D, Out]) OnProgress(fn func(pct float64, message string)) *TypedStream[D, Out] {
	t.onProgress = fn
	return t
}

// CallID returns the call's id.
func (t *TypedStream[D, Out]) CallID() string { return t.s.CallID() }

// Deltas ranges over the deltas, each decoded into D. It ends at the
// terminal event, which Result then returns; a failed call, or a delta
// that does not fit D (an output_invalid Problem, and the call is
// cancelled), is yielded as the error and ends the range. Leaving the
// range early closes the stream.
func (t *TypedStream[D, Out]) Deltas() iter.Seq2[D, error] {
	return func(yield func(D, error) bool) {
		for ev, err := range t.s.Events() {
			var d D
			switch {
			case ev.IsTerminal():
				t.finish(ev)
				if err != nil && !yield(d, err) {
					return
				}
				return
			case ev.Type == envelope.EventProgress:
				t.progress(ev)
				continue
			case ev.Type != envelope.EventDelta:
				continue
			}
			if derr := json.Unmarshal(ev.Data, &d); derr != nil {
				t.fail(t.s.c.problems.New(envelope.CodeOutputInvalid, fmt.Sprintf("tool %s: a delta does not fit %T: %v", t.tool, d, derr)))
				yield(d, t.err)
				return
			}
			if !yield(d, nil) {
				return
			}
		}
	}
}

// Result reads to the terminal event, dropping any deltas not yet read,
// and returns the result decoded into Out, or the call's Problem (an
// output_invalid one when the result does not fit Out).
func (t *TypedStream[D, Out]) Result() (Out, error) {
	for !t.ended {
		ev, err := t.s.Next()
		if err != nil {
			t.fail(t.s.c.problems.New(envelope.CodeInternal, "stream already finished"))
			break
		}
		if ev.Type == envelope.EventProgress {
			t.progress(ev)
		}
		if ev.IsTerminal() {
			t.finish(ev)
		}
	}
	return t.result, t.err
}

// Close cancels the call if it has not finished.
func (t *TypedStream[D, Out]) Close() error { return t.s.Close() }

func (t *TypedStream[D, Out]) progress(ev envelope.ToolEvent) {
	if t.onProgress == nil {
		return
	}
	pct, ok := ev.Percent()
	if !ok {
		pct = -1
	}
	t.onProgress(pct, ev.Message)
}

// finish records the terminal event's outcome.
func (t *TypedStream[D, Out]) finish(ev envelope.ToolEvent) {
	t.ended = true
	if p := ev.Problem(); p != nil {
		t.err = p
		return
	}
	if err := json.Unmarshal(ev.Data, &t.result); err != nil {
		t.err = t.s.c.problems.New(envelope.CodeOutputInvalid, fmt.Sprintf("tool %s: the result does not fit %T: %v", t.tool, t.result, err))
	}
}

// fail ends the typed stream with p, cancelling the call.
func (t *TypedStream[D, Out]) fail(p *envelope.Problem) {
	t.ended, t.err = true, p
	_ = t.s.Close()
}
