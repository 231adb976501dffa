package tests

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// A handler's own timeout (an inner context's deadline, wrapped or as a
// timeout Problem) is the handler's failure, tool_failed with ran "yes":
// the caller does not see it as context.DeadlineExceeded, as though its
// own budget had run out, and does not retry it under Idempotent().
func TestHandlerInnerTimeoutIsNotTheCallersTimeout(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{Retries: 3})
	var runs atomic.Int64
	innerDeadline := func(ctx context.Context) error {
		inner, cancel := context.WithDeadline(ctx, time.Now()) // already past
		defer cancel()
		<-inner.Done()
		return inner.Err()
	}
	failures := map[string]func(ctx context.Context) error{
		"db.wrapped": func(ctx context.Context) error { return fmt.Errorf("db query: %w", innerDeadline(ctx)) },
		"db.bare":    innerDeadline,
		"db.problem": func(ctx context.Context) error {
			return envelope.Problemf(envelope.CodeTimeout, "db query: %v", innerDeadline(ctx)).WithExtension("stderr_tail", "slow")
		},
		"db.cancelled": func(ctx context.Context) error {
			inner, cancel := context.WithCancel(ctx)
			cancel()
			return fmt.Errorf("db query: %w", inner.Err())
		},
	}
	for name, fail := range failures {
		register(t, f.w, envelope.ToolSpec{Name: name}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
			runs.Add(1)
			return nil, fail(ctx)
		})
	}
	for name := range failures {
		t.Run(name, func(t *testing.T) {
			runs.Store(0)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := f.c.Call(ctx, name, map[string]any{}, caller.Idempotent())
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				t.Errorf("the handler's inner context error reads as the caller's own: %v", err)
			}
			p := wantCode(t, err, envelope.CodeToolFailed)
			if p.Ran() != envelope.RanYes || p.Transient() {
				t.Errorf("ran %q, transient %v; want ran yes, not transient: %+v", p.Ran(), p.Transient(), p)
			}
			if name == "db.problem" && p.Extensions["stderr_tail"] != "slow" {
				t.Errorf("the handler's extensions were lost: %+v", p.Extensions)
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the handler ran %d times; an inner timeout must not be retried as the caller's", n)
			}
		})
	}
	// The call's own budget still reads as the caller's timeout.
	register(t, f.w, envelope.ToolSpec{Name: "db.wait"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("db query: %w", ctx.Err())
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := f.c.Call(ctx, "db.wait", map[string]any{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the call's own budget: %v, want context.DeadlineExceeded", err)
	}
}
