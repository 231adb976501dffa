package caller_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// blockingMesh is a test mesh whose tool "block" holds each call until
// release is closed or the call's context ends; entered receives one value
// per handler that started, and stopped one per handler whose context ended.
func blockingMesh(t *testing.T, n int) (m *meshtest.Mesh, entered, stopped chan struct{}, release chan struct{}) {
	t.Helper()
	m = meshtest.NewWith(t, meshtest.Config{Worker: worker.Config{Limits: worker.Limits{MaxConcurrent: n, MaxQueued: n, MaxPerIdentity: n}},
		Caller: caller.Config{Retries: caller.NoRetries}})
	entered, stopped, release = make(chan struct{}, n), make(chan struct{}, n), make(chan struct{})
	err := m.Worker.Register(envelope.ToolSpec{Name: "block"}, worker.HandlerFunc(
		func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
			entered <- struct{}{}
			select {
			case <-release:
				return map[string]bool{"ok": true}, nil
			case <-ctx.Done():
				stopped <- struct{}{}
				return nil, ctx.Err()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	return m, entered, stopped, release
}

// Many calls sharing one context wait in one shared watch of it: when the
// context is cancelled, every one of them ends cancelled, every handler is
// told to stop, and the watch is gone.
func TestSharedContextCancelsEveryCallInFlight(t *testing.T) {
	n := 2 * caller.WatchFrom
	m, entered, stopped, release := blockingMesh(t, n)
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := m.Caller.Call(ctx, "block", map[string]any{})
			errs <- err
		}()
	}
	for range n {
		<-entered
	}
	if got := caller.OpenWatches(m.Caller); got != 1 {
		t.Errorf("%d calls in flight on one context hold %d watches, want 1", n, got)
	}
	cancel()
	for range n {
		var p *envelope.Problem
		if err := <-errs; !errors.As(err, &p) || p.Code != envelope.CodeCancelled {
			t.Fatalf("a call whose context was cancelled returned %v, want cancelled", err)
		}
	}
	for range n {
		<-stopped
	}
	if got := caller.OpenWatches(m.Caller); got != 0 {
		t.Errorf("%d watches left after every call ended, want 0", got)
	}
}

// Calls sharing a context that end normally, and calls whose context
// can never end, get their results; nothing is left watched.
func TestCallsInFlightEndWithTheirResults(t *testing.T) {
	n := 2 * caller.WatchFrom
	m, entered, _, release := blockingMesh(t, 2*n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range 2 * n {
		callCtx := ctx
		if i%2 == 1 {
			callCtx = context.Background()
		}
		wg.Go(func() {
			resp, err := m.Caller.Call(callCtx, "block", map[string]any{})
			if err == nil && (!resp.Success || string(resp.Data) != `{"ok":true}`) {
				err = errors.New("result " + string(resp.Data) + `, want {"ok":true}`)
			}
			errs <- err
		})
	}
	for range 2 * n {
		<-entered
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a call returned %v, want its result", err)
		}
	}
	if got := caller.OpenWatches(m.Caller); got != 0 {
		t.Errorf("%d watches left after every call ended, want 0", got)
	}
}
