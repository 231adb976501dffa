package tests

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// gate is a tool whose calls block until released or cancelled, and
// which records how each of them ended.
type gate struct {
	started chan struct{}
	release chan struct{}
	mu      sync.Mutex
	causes  []error // the cancel cause of every call that was cancelled
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 1024), release: make(chan struct{})}
}

func (g *gate) handle(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
	g.started <- struct{}{}
	select {
	case <-g.release:
		return map[string]bool{"released": true}, nil
	case <-ctx.Done():
		g.mu.Lock()
		g.causes = append(g.causes, context.Cause(ctx))
		g.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (g *gate) cancelled() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.causes)
}

// waitStarted waits until n calls of g are running.
func (g *gate) waitStarted(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-g.started:
		case <-time.After(30 * time.Second):
			t.Fatal("calls never started")
		}
	}
}

// startCalls starts n calls of tool on c, each on its own goroutine, and
// returns the channel their outcomes arrive on.
func startCalls(c *caller.Caller, tool string, n int) chan error {
	out := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Call(context.Background(), tool, nil, caller.WithRetries(caller.NoRetries))
			out <- err
		}()
	}
	return out
}

// A worker beats once per caller per interval, naming all of its calls:
// with 50 calls of one caller in flight, every heartbeat message names
// all 50, where per-call heartbeats would send 50 messages naming one each.
func TestHeartbeatsArePerCallerNotPerCall(t *testing.T) {
	const calls = 50
	f := newMesh(t, worker.Config{}, caller.Config{Heartbeat: wire.MinHeartbeat})
	g := newGate()
	register(t, f.w, envelope.ToolSpec{Name: "gate"}, g.handle)
	spy := meshtest.Connect(t, f.srv)
	beats := subscribed(t, spy, "_INBOX."+f.c.ID()+".*", 4096)
	done := startCalls(f.c, "gate", calls)
	g.waitStarted(t, calls)
	full := 0
	for full < 3 {
		m := <-beats
		fr, err := wire.ParseFrame(m.Data)
		if err != nil {
			t.Fatalf("reply %q: %v", m.Data, err)
		}
		if fr.Kind != wire.FrameBeat {
			t.Fatalf("unexpected reply %q while every call blocks", m.Data)
		}
		named := 0
		fr.EachCallID(func([]byte) { named++ })
		if fr.Worker != f.w.ID() || fr.Interval != wire.MinHeartbeat.Milliseconds() {
			t.Fatalf("heartbeat %q: want worker %s, interval %d", m.Data, f.w.ID(), wire.MinHeartbeat.Milliseconds())
		}
		switch {
		case named == calls:
			full++
		case full > 0:
			// Once every call runs, each beat names them all: one message
			// per caller per interval.
			t.Fatalf("a heartbeat after all %d calls started names %d of them", calls, named)
		}
	}
	close(g.release)
	for range calls {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// A caller that dies loses exactly its own calls: the worker cancels them
// (the caller stopped proving it is alive) while another caller's calls
// on the same worker run on and finish.
func TestLostCallerEndsExactlyItsCalls(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{Heartbeat: wire.MinHeartbeat})
	g := newGate()
	register(t, f.w, envelope.ToolSpec{Name: "gate"}, g.handle)
	doomedNC := meshtest.Connect(t, f.srv)
	doomed := meshtest.NewCaller(t, doomedNC, caller.Config{Heartbeat: wire.MinHeartbeat})
	survivors := startCalls(f.c, "gate", 5)
	g.waitStarted(t, 5)
	_ = startCalls(doomed, "gate", 5)
	g.waitStarted(t, 5)
	doomedNC.Close()
	waitFor(t, "the dead caller's calls cancelled", func() bool { return g.cancelled() == 5 })
	g.mu.Lock()
	for _, cause := range g.causes {
		if cause == nil || cause.Error() != "caller stopped sending liveness messages" {
			t.Errorf("a call was cancelled by %v, not by its caller's loss", cause)
		}
	}
	g.mu.Unlock()
	close(g.release)
	for range 5 {
		if err := <-survivors; err != nil {
			t.Fatalf("a live caller's call failed: %v", err)
		}
	}
	if n := g.cancelled(); n != 5 {
		t.Fatalf("%d calls cancelled, want only the dead caller's 5", n)
	}
}

// A worker that dies loses exactly its own calls: the caller ends them
// worker_lost while its calls on another worker run on and finish.
func TestLostWorkerEndsExactlyItsCalls(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{Heartbeat: wire.MinHeartbeat})
	live := newGate()
	register(t, f.w, envelope.ToolSpec{Name: "gate.live"}, live.handle)
	doomedNC := meshtest.Connect(t, f.srv)
	doomedW := meshtest.NewWorker(t, doomedNC, worker.Config{})
	dead := newGate()
	register(t, doomedW, envelope.ToolSpec{Name: "gate.dead"}, dead.handle)
	survivors := startCalls(f.c, "gate.live", 4)
	lost := startCalls(f.c, "gate.dead", 4)
	live.waitStarted(t, 4)
	dead.waitStarted(t, 4)
	doomedNC.Close()
	for range 4 {
		err := <-lost
		wantCode(t, err, envelope.CodeWorkerLost)
	}
	if n := live.cancelled(); n != 0 {
		t.Fatalf("%d calls on the live worker were cancelled", n)
	}
	close(live.release)
	for range 4 {
		if err := <-survivors; err != nil {
			t.Fatalf("a call on the live worker failed: %v", err)
		}
	}
}
