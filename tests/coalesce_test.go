package tests

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// callAll makes n calls to tool from `parallel` goroutines, each with
// args {"i": i}, and fails the test unless every call gets its own args
// back.
func callAll(t *testing.T, c *caller.Caller, tool string, n, parallel int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				res, err := c.Call(context.Background(), tool, map[string]int64{"i": i})
				if err != nil {
					t.Errorf("call %d: %v", i, err)
					return
				}
				if want := fmt.Sprintf(`{"i":%d}`, i); string(res.Data) != want {
					t.Errorf("call %d got %s", i, res.Data)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Four workers in one queue group share a saturating load from one
// coalescing caller fairly: batches are capped, so each worker takes
// within ±15% of a quarter of the calls. It counts calls, not time.
//
// NATS hands each message to a queue member at random, so with 24,000
// calls in batches of at most 8 (at least 3,000 messages) a worker's share
// has a standard deviation under 4%: ±15% is four of them.
func TestCoalescedLoadIsSharedFairly(t *testing.T) {
	const workers, calls = 4, 24000
	srv := meshtest.StartServer(t, embedded.Config{})
	var counts [workers]atomic.Int64
	for k := range workers {
		w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
		register(t, w, envelope.ToolSpec{Name: "fair"}, func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
			counts[k].Add(1)
			return req.Args, nil
		})
	}
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	callAll(t, c, "fair", calls, 256)
	batches, batched := c.CoalesceStats()
	t.Logf("%d batches carried %d of %d calls", batches, batched, calls)
	if batches > 0 && batched > 8*batches {
		t.Fatalf("%d batches carried %d calls: more than 8 a batch", batches, batched)
	}
	var total int64
	for k := range counts {
		total += counts[k].Load()
	}
	if total != calls {
		t.Fatalf("workers ran %d calls, want %d", total, calls)
	}
	for k := range counts {
		share := float64(counts[k].Load()) / (calls / workers)
		if share < 0.85 || share > 1.15 {
			t.Errorf("worker %d ran %d calls, %.0f%% of a fair share", k, counts[k].Load(), 100*share)
		}
	}
}

// Under deploy/secure, a batch crosses the account boundary on one
// server-made reply subject: each call's reply comes back naming it, and
// the mapping is released only after the last call of the batch ended —
// a call still running when another has answered still gets through.
func TestSecureBatchRepliesAndReleaseAfterTheLastCall(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	release := make(chan struct{})
	register(t, w, envelope.ToolSpec{Name: "demo.mixed"}, func(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		if string(req.Args) == `{"wait":true}` {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return req.Args, nil
	})
	anc, _ := m.dial(t, "alice")
	inbox := nats.NewInbox()
	sub, err := anc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	calls := []string{"tm2 id=FAST\n{\"args\":{\"fast\":true}}", "tm2 id=SLOW\n{\"args\":{\"wait\":true}}"}
	body := wire.AppendBatchHead(nil, []int{len(calls[0]), len(calls[1])})
	body = append(append(body, calls[0]...), calls[1]...)
	if err := anc.PublishRequest("toolmesh.call.demo.mixed", inbox, body); err != nil {
		t.Fatal(err)
	}
	next := func() (string, string) {
		t.Helper()
		msg, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		f, err := wire.ParseFrame(msg.Data)
		if err != nil || f.ID == "" {
			t.Fatalf("reply %q: %v", msg.Data, err)
		}
		evs, err := f.Events()
		if err != nil {
			t.Fatal(err)
		}
		ev, err := envelope.ParseEvent(evs[0])
		if err != nil {
			t.Fatal(err)
		}
		return f.ID, string(ev.Data)
	}
	if id, data := next(); id != "FAST" || data != `{"fast":true}` {
		t.Fatalf("first reply: %s %s", id, data)
	}
	tools, err := m.srv.LookupAccount("TOOLS")
	if err != nil {
		t.Fatal(err)
	}
	if n := tools.NumPendingAllResponses(); n != 1 {
		t.Fatalf("%d reply mappings while a call of the batch runs, want 1", n)
	}
	close(release)
	if id, data := next(); id != "SLOW" || data != `{"wait":true}` {
		t.Fatalf("second reply: %s %s", id, data)
	}
	waitFor(t, "the batch's reply mapping released", func() bool { return tools.NumPendingAllResponses() == 0 })
}

// A coalescing caller's load across the account boundary: every call gets
// its own result, and no reply mapping outlives the calls.
func TestSecureCoalescedLoad(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	alice := m.caller(t, "alice")
	callAll(t, alice, "demo.echo", 4000, 128)
	batches, batched := alice.CoalesceStats()
	t.Logf("coalescing: %d batches carried %d calls", batches, batched)
	tools, err := m.srv.LookupAccount("TOOLS")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no reply mapping left in the TOOLS account", func() bool { return tools.NumPendingAllResponses() == 0 })
}
