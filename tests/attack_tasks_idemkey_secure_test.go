package tests

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// Under deploy/secure verbatim: deduplication by idempotency key is the
// handler's job (§4.1 idem), and a careful handler keeps each identity's
// keys apart. The task service calls tools as its own identity for every
// owner, so the key it passes on must keep owners apart itself: alice's
// and bob's tasks under the same key each run and get their own result,
// as their plain calls under that key do, never the other's.
func TestSecureTasksOfTwoTenantsUnderOneIdempotencyKeyStayApart(t *testing.T) {
	m := startSecure(t)
	m.taskService(t, tasks.Config{})
	w := m.demoWorker(t, worker.Config{})
	var mu sync.Mutex
	done := map[[2]string]json.RawMessage{} // (identity, key) → the result first given
	register(t, w, envelope.ToolSpec{Name: "demo.pay"}, func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		k := [2]string{req.Identity, req.IdempotencyKey}
		if res, ok := done[k]; ok {
			return res, nil // a retry: the first result, nothing runs again
		}
		done[k] = req.Args
		return req.Args, nil
	})
	alice, bob := m.caller(t, "alice"), m.caller(t, "bob")
	ctx := context.Background()
	for _, c := range []struct {
		name string
		c    *caller.Caller
	}{{"alice", alice}, {"bob", bob}} {
		res, err := c.c.Call(ctx, "demo.pay", map[string]string{"payer": c.name + ", called"}, caller.WithIdempotencyKey("order-1"))
		if err != nil || string(res.Data) != `{"payer":"`+c.name+`, called"}` {
			t.Fatalf("%s's plain call: %s, %v", c.name, res.Data, err)
		}
		rec, err := tasks.NewClient(c.c).Run(ctx, "demo.pay", map[string]string{"payer": c.name}, caller.WithIdempotencyKey("order-1"))
		if err != nil || rec.State != tasks.Succeeded {
			t.Fatalf("%s's task: %+v, %v", c.name, rec, err)
		}
		var ev envelope.ToolEvent
		if err := json.Unmarshal(rec.Terminal, &ev); err != nil {
			t.Fatal(err)
		}
		if string(ev.Data) != `{"payer":"`+c.name+`"}` {
			t.Fatalf("%s's task under key order-1 answered %s: another tenant's result", c.name, ev.Data)
		}
	}
}
