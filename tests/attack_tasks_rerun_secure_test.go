package tests

import (
	"context"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// Under deploy/secure verbatim: the task service learns that a tool is
// idempotent from its spec, which it asks a worker for; workers may
// answer only the task service's own inbox, so the question must come
// from there. A task of an idempotent demo tool whose worker vanishes
// mid-run runs again on the pool's other worker and succeeds, rather
// than ending worker_lost as if the tool could not be run twice.
func TestSecureTaskOfAnIdempotentToolRunsAgainWhenItsWorkerVanishes(t *testing.T) {
	m := startSecure(t)
	m.taskService(t, tasks.Config{Heartbeat: 200 * time.Millisecond})
	yes := true
	spec := envelope.ToolSpec{Name: "demo.job", Annotations: &envelope.Annotations{Idempotent: &yes}}
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	firstNC, _ := m.dial(t, "tools")
	first := meshtest.NewWorker(t, firstNC, worker.Config{Pool: "demo"})
	register(t, first, spec, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, envelope.NewProblem(envelope.CodeToolFailed, "the vanished worker's run")
	})
	alice := m.caller(t, "alice")
	ctx := context.Background()
	id := submitTask(ctx, t, alice, "demo.job", map[string]any{})
	<-started
	second := m.demoWorker(t, worker.Config{})
	register(t, second, spec, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return map[string]bool{"done": true}, nil
	})
	firstNC.Close() // the first worker vanishes: the server has no subscription of it
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	rec, err := tasks.NewClient(alice).Get(wctx, id, true)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != tasks.Succeeded || rec.Attempt != 2 {
		t.Fatalf("the task ended %s after %d attempts (%s); want succeeded on the second", rec.State, rec.Attempt, rec.Terminal)
	}
}
