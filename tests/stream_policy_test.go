package tests

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/worker"
)

// Leaving `range s.Events()` early without s.Close() ends the call: the
// handler, blocked on credit for its next delta, sees its context end.
func TestStreamLeftByBreakEndsTheCall(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	ended := make(chan error, 1)
	register(t, f.w, envelope.ToolSpec{Name: "endless", Streaming: true}, func(ctx context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
		for i := 0; ; i++ {
			if err := emit.Delta(i); err != nil || ctx.Err() != nil {
				ended <- context.Cause(ctx)
				return nil, ctx.Err()
			}
		}
	})
	s, err := f.c.Stream(context.Background(), "endless", nil, caller.WithWindow(4))
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range s.Events() {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == envelope.EventDelta {
			break // and no s.Close()
		}
	}
	if cause := <-ended; cause == nil {
		t.Fatal("the handler returned with its context still live")
	}
	if ev, err := s.Next(); err != nil || ev.Code != envelope.CodeCancelled || !errors.Is(ev.Problem(), context.Canceled) {
		t.Errorf("after being left the stream's terminal is %+v, %v; want cancelled", ev, err)
	}
}

// A failed stream's terminal error event comes with its Problem as the
// iterator's error, so `if err != nil` is the failure path.
func TestStreamIteratorErrorIsTheProblem(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "fails", Streaming: true}, func(_ context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
		_ = emit.Delta("partial")
		return nil, envelope.NewProblem(envelope.CodeToolFailed, "no luck")
	})
	s, err := f.c.Stream(context.Background(), "fails", nil)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	var types []envelope.EventType
	for ev, err := range s.Events() {
		types, errs = append(types, ev.Type), append(errs, err)
	}
	if len(types) != 3 || types[2] != envelope.EventError || errs[0] != nil || errs[1] != nil {
		t.Fatalf("events %v with errors %v", types, errs)
	}
	var p *envelope.Problem
	if !errors.As(errs[2], &p) || p.Code != envelope.CodeToolFailed || p.Detail != "no luck" {
		t.Fatalf("terminal error %v", errs[2])
	}
}

// flaky fails overloaded (retry_after 0: the handler ran and refused, so a
// retry is safe) until it has run n times, then streams one delta and
// succeeds. runs counts its runs.
func flaky(n int32, runs *atomic.Int32) worker.HandlerFunc {
	return func(_ context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
		if runs.Add(1) < n {
			return nil, envelope.NewProblem(envelope.CodeOverloaded, "busy").WithRetryAfter(0)
		}
		if err := emit.Delta("d"); err != nil {
			return nil, err
		}
		return map[string]string{"text": "done"}, nil
	}
}

// counting is caller middleware that counts the logical calls it sees.
func counting(n *atomic.Int32, streaming *atomic.Int32) caller.Middleware {
	return func(next caller.Invoker) caller.Invoker {
		return func(ctx context.Context, inv *caller.Invocation) (string, envelope.ToolEvent) {
			n.Add(1)
			if inv.Streaming() {
				streaming.Add(1)
			}
			return next(ctx, inv)
		}
	}
}

// Stream and Dispatch take the one policy path Call takes: the caller's
// middleware sees each logical call once, and retry-safe failures are
// retried up to WithRetries.
func TestStreamAndDispatchTakeMiddlewareAndRetries(t *testing.T) {
	var seen, streaming, runs atomic.Int32
	f := newMesh(t, worker.Config{}, caller.Config{Middleware: []caller.Middleware{counting(&seen, &streaming)}})
	spec := envelope.ToolSpec{Name: "flaky.tool", Streaming: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}
	register(t, f.w, spec, flaky(3, &runs))
	ctx := context.Background()

	s, err := f.c.Stream(ctx, "flaky.tool", nil, caller.WithRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	var types []envelope.EventType
	eachEvent(t, s, func(ev envelope.ToolEvent) {
		types = append(types, ev.Type)
	})
	if runs.Load() != 3 || seen.Load() != 1 || streaming.Load() != 1 {
		t.Fatalf("Stream: handler ran %d times (want 3), middleware saw %d calls (%d streaming), want 1", runs.Load(), seen.Load(), streaming.Load())
	}
	want := []envelope.EventType{envelope.EventStart, envelope.EventStart, envelope.EventStart, envelope.EventDelta, envelope.EventResult}
	if !slices.Equal(types, want) {
		t.Fatalf("the retried stream's reader saw %v, want %v: each attempt's start, then the delta and one terminal", types, want)
	}

	runs.Store(0)
	seen.Store(0)
	// The toolset is exported from the spec the worker serves: Dispatch
	// sends its digest, and a worker with another spec would refuse.
	ts, err := provider.Export([]envelope.ToolSpec{spec}, provider.ExportOptions{Provider: provider.Anthropic})
	if err != nil {
		t.Fatal(err)
	}
	name, _ := ts.Names.ProviderName("flaky.tool")
	out := json.RawMessage(`{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"c1","name":"` + name + `","input":{}}]}`)
	d, err := f.c.Dispatch(ctx, ts, out, caller.WithCallOptions(caller.WithRetries(3)))
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 3 || seen.Load() != 1 || d.Outcomes[0].Problem != nil {
		t.Fatalf("Dispatch: handler ran %d times (want 3), middleware saw %d calls (want 1), outcome %+v", runs.Load(), seen.Load(), d.Outcomes[0])
	}

	// Without retries the failure is the stream's terminal, and the
	// middleware still saw the call.
	runs.Store(0)
	seen.Store(0)
	s, err = f.c.Stream(ctx, "flaky.tool", nil, caller.WithRetries(caller.NoRetries))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Response()
	var p *envelope.Problem
	if !errors.As(err, &p) || p.Code != envelope.CodeOverloaded || runs.Load() != 1 || seen.Load() != 1 {
		t.Fatalf("no retries: %v after %d runs, middleware saw %d", err, runs.Load(), seen.Load())
	}
}

// StreamAs decodes deltas and the result; a delta that does not fit D ends
// the range with output_invalid (and cancels the call), a failed call
// with its own Problem.
func TestStreamAs(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "count", Streaming: true}, count)
	register(t, f.w, envelope.ToolSpec{Name: "fails", Streaming: true}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return nil, envelope.NewProblem(envelope.CodeToolFailed, "no luck")
	})
	type delta struct{ I int }
	cases := []struct {
		name, tool string
		wantDeltas int
		wantCode   envelope.Code
		wantCount  int
	}{
		{"fits", "count", 3, "", 3},
		{"tool fails", "fails", 0, envelope.CodeToolFailed, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := caller.StreamAs[delta, struct{ Count int }](context.Background(), f.c, c.tool, map[string]int{"n": 3})
			if err != nil {
				t.Fatal(err)
			}
			n, last := 0, error(nil)
			for d, err := range s.Deltas() {
				if last = err; err == nil && d.I != n+1 {
					t.Fatalf("delta %d is %+v", n+1, d)
				} else if err == nil {
					n++
				}
			}
			out, err := s.Result()
			code := envelope.Code("")
			if p := envelope.AsProblem(err, envelope.CodeInternal); p != nil {
				code = p.Code
			}
			if n != c.wantDeltas || out.Count != c.wantCount || code != c.wantCode || (c.wantCode != "") != (last != nil) {
				t.Fatalf("%d deltas, result %+v, %v (range ended with %v)", n, out, err, last)
			}
		})
	}
	s, err := caller.StreamAs[string, any](context.Background(), f.c, "count", map[string]int{"n": 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range s.Deltas() {
		wantCode(t, err, envelope.CodeOutputInvalid)
	}
	if _, err := s.Result(); err == nil || envelope.AsProblem(err, envelope.CodeInternal).Code != envelope.CodeOutputInvalid {
		t.Fatalf("Result after a bad delta: %v", err)
	}
}
