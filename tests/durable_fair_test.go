package tests

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// Under deploy/secure: bob floods one tool with long tasks until his own
// queue of it is full. alice's task on another tool still runs to its end
// while every one of bob's is queued or running (none can end: they park
// until the test ends), and her submit to the flooded tool is accepted.
// bob's tasks that read running are exactly those whose handler started.
func TestSecureTenantFloodDelaysOnlyItself(t *testing.T) {
	const flood, perOwner = 300, 4
	m := startSecure(t)
	m.taskService(t, tasks.Config{MaxQueuedPerTool: flood,
		MaxRunningPerOwner: perOwner, MaxRunningPerOwnerTool: perOwner})
	var started, ended atomic.Int64
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	// A worker whose per-sender share (half its 16 slots) the old
	// dispatch let one owner's flood fill for every owner.
	w := m.demoWorker(t, worker.Config{Limits: worker.Limits{MaxConcurrent: 16}})
	register(t, w, envelope.ToolSpec{Name: "demo.park"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		started.Add(1)
		defer ended.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return map[string]bool{"parked": true}, nil
	})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	alice := m.caller(t, "alice")
	bob := m.caller(t, "bob")
	ctx := context.Background()
	for i := range flood {
		if _, err := tasks.NewClient(bob).Submit(ctx, "demo.park", map[string]int{"i": i}); err != nil {
			t.Fatalf("bob's submit %d: %v", i+1, err)
		}
	}
	_, err := tasks.NewClient(bob).Submit(ctx, "demo.park", map[string]int{"i": flood})
	wantCode(t, err, envelope.CodeOverloaded)
	waitFor(t, "bob's first tasks to start", func() bool { return started.Load() == perOwner })

	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rec, err := tasks.NewClient(alice).Run(wctx, "demo.echo", map[string]string{"message": "hi"})
	if err != nil || rec.State != tasks.Succeeded {
		t.Fatalf("alice's task beside bob's flood: %+v, %v", rec, err)
	}
	if n := ended.Load(); n != 0 {
		t.Fatalf("%d of bob's tasks ended; alice's was to run while all of his wait", n)
	}
	running, err := tasks.NewClient(bob).List(ctx, tasks.Running, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(len(running)); got != started.Load() || got > perOwner {
		t.Errorf("%d of bob's tasks read running, %d handlers started (his bound %d)", got, started.Load(), perOwner)
	}
	if _, err := tasks.NewClient(alice).Submit(ctx, "demo.park", map[string]int{"i": 0}); err != nil {
		t.Fatalf("alice's submit to the tool bob flooded: %v", err)
	}
}
