package caller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// callResult is one call's outcome, by the index the test gave it.
type callResult struct {
	i   int
	res envelope.Response
	err error
}

// queueCalls holds tool's sender, makes n calls with args {"i": i} that
// queue behind it, and returns the release that sends them as one batch
// (n <= 16) and the channel their outcomes arrive on.
func queueCalls(t *testing.T, c *caller.Caller, tool string, n int) (release func(), out chan callResult) {
	t.Helper()
	queued, release := caller.HoldSender(c, tool)
	out = make(chan callResult, n)
	for i := range n {
		go func() {
			res, err := c.Call(context.Background(), tool, map[string]int{"i": i}, caller.WithRetries(caller.NoRetries))
			out <- callResult{i, res, err}
		}()
	}
	testutil.WaitFor(t, fmt.Sprintf("%d calls queued", n), func() bool { return queued() == n })
	return release, out
}

// batchOf splits a batch message the fake worker received, failing the
// test when it is not one.
func batchOf(t *testing.T, m *nats.Msg) (calls [][]byte, ids []string) {
	calls, ids, err := wire.SplitBatch(m.Data)
	if err != nil {
		t.Errorf("not a batch: %v: %q", err, m.Data)
	}
	return calls, ids
}

// argsOf returns a call body's args.
func argsOf(call []byte) json.RawMessage {
	_, body, _ := wire.SplitCall(call)
	var v struct{ Args json.RawMessage }
	_ = json.Unmarshal(body, &v)
	return v.Args
}

// Calls queued behind a publish go out as one batch message, and each
// gets its own result back, routed by the id its reply names — whether
// the worker answers each call in a frame of its own (in any order) or
// all of them in one ends frame.
func TestBatchedCallsGetTheirOwnResults(t *testing.T) {
	answers := map[string]func(fw *fakeWorker, m *nats.Msg, calls [][]byte, ids []string){
		"frames, backwards": func(fw *fakeWorker, m *nats.Msg, calls [][]byte, ids []string) {
			for i := len(calls) - 1; i >= 0; i-- {
				ev := `{"type":"result","data":` + string(argsOf(calls[i])) + `}`
				_ = fw.nc.Publish(m.Reply, wire.WithCallID([]byte(ev), ids[i]))
			}
		},
		"one ends frame": func(fw *fakeWorker, m *nats.Msg, calls [][]byte, ids []string) {
			var sizes []int
			var evs []byte
			for _, call := range calls {
				ev := `{"type":"result","data":` + string(argsOf(call)) + `}`
				sizes, evs = append(sizes, len(ev)), append(evs, ev...)
			}
			_ = fw.nc.Publish(m.Reply, append(wire.AppendEndsHead(nil, ids, sizes), evs...))
		},
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) {
			e := meshtest.StartServer(t, embedded.Config{})
			newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
				calls, ids := batchOf(t, m)
				answer(fw, m, calls, ids)
			})
			c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
			release, out := queueCalls(t, c, "fake", 5)
			release()
			for range 5 {
				r := <-out
				if r.err != nil {
					t.Fatalf("call %d: %v", r.i, r.err)
				}
				if want := fmt.Sprintf(`{"i":%d}`, r.i); string(r.res.Data) != want {
					t.Fatalf("call %d got %s, want %s", r.i, r.res.Data, want)
				}
			}
			if batches, calls := c.CoalesceStats(); batches != 1 || calls != 5 {
				t.Fatalf("stats: %d batches carrying %d calls, want one batch of 5", batches, calls)
			}
		})
	}
}

// A worker answers only the calls it was sent: a reply on a batch's
// subject naming a call that went elsewhere is dropped, and that call
// still gets its own worker's answer.
func TestBatchReplyCannotAnswerAnotherCall(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	var batchReply = make(chan string, 1)
	newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
		if wire.IsBatch(m.Data) {
			batchReply <- m.Reply // answered below, once the other call is out
			return
		}
		_ = m.Respond([]byte(`{"type":"result","data":{"from":"its own worker"}}`))
	})
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
	release, out := queueCalls(t, c, "fake", 2)
	release()
	reply := <-batchReply
	// Another call, alone on its own subject (its id is its last token).
	// The batch's worker tries to answer it first, on the batch's subject;
	// then its own worker answers, on the same connection, so in order.
	nc := meshtest.Connect(t, e)
	if _, err := nc.Subscribe(wire.Subjects{}.Call("other"), func(m *nats.Msg) {
		id := m.Reply[strings.LastIndexByte(m.Reply, '.')+1:]
		_ = nc.Publish(reply, wire.WithCallID([]byte(`{"type":"result","data":{"from":"the batch's worker"}}`), id))
		_ = nc.Publish(m.Reply, []byte(`{"type":"result","data":{"from":"its own worker"}}`))
	}); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	res, err := c.Call(context.Background(), "other", nil)
	if err != nil || string(res.Data) != `{"from":"its own worker"}` {
		t.Fatalf("other call: %+v, %v", res, err)
	}
	_ = nc.Publish(reply, []byte(`{"type":"error","code":"tool_failed","message":"refused"}`))
	for range 2 {
		if r := <-out; problemCode(t, r.err) != envelope.CodeToolFailed {
			t.Fatalf("batched call %d: %v", r.i, r.err)
		}
	}
}

// The server's no-responders answer to a batch ends every call of it with
// tool_not_found at once.
func TestNoRespondersEndsTheWholeBatch(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
	release, out := queueCalls(t, c, "nobody", 4)
	release()
	for range 4 {
		if r := <-out; problemCode(t, r.err) != envelope.CodeToolNotFound {
			t.Fatalf("call %d: %v", r.i, r.err)
		}
	}
}

// A batch the worker refuses whole (one error event naming no call) ends
// every call of the batch with that error; a message naming no call that
// is not an error is a broken worker, internal_error.
func TestBatchRefusedWhole(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply string
		want  envelope.Code
	}{
		{"error", `{"type":"error","code":"invalid_input","message":"malformed batch"}`, envelope.CodeInvalidInput},
		{"result", `{"type":"result","data":{}}`, envelope.CodeInternal},
		{"garbage", "tm2 ev seq=1 len=99\n{}", envelope.CodeInternal},
		{"lying ends frame", "tm2 ends ids=A,B len=2\n{}", envelope.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := meshtest.StartServer(t, embedded.Config{})
			newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) { _ = m.Respond([]byte(tc.reply)) })
			c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
			release, out := queueCalls(t, c, "fake", 3)
			release()
			var codes []envelope.Code
			for range 3 {
				codes = append(codes, problemCode(t, (<-out).err))
			}
			if slices.IndexFunc(codes, func(c envelope.Code) bool { return c != tc.want }) >= 0 {
				t.Fatalf("codes %v, want %s for all", codes, tc.want)
			}
		})
	}
}

// With coalescing off, calls never queue: each goes out on its own.
func TestCoalesceOffSendsEachCallAlone(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	batches := make(chan bool, 64)
	newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
		batches <- wire.IsBatch(m.Data)
		_ = m.Respond([]byte(`{"type":"result","data":{}}`))
	})
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{NoCoalescing: true})
	_, release := caller.HoldSender(c, "fake") // held, but not used when off
	defer release()
	for range 3 {
		if _, err := c.Call(context.Background(), "fake", nil); err != nil {
			t.Fatal(err)
		}
		if <-batches {
			t.Fatal("a batch was sent with coalescing off")
		}
	}
}

// Streams are never batched: with the tool's sender held, as if a publish
// were in progress, a stream still goes out at once, on its own.
func TestStreamsAreNeverQueued(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	got := make(chan bool, 1)
	newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
		got <- wire.IsBatch(m.Data)
		fw.send(m, 1, `{"type":"result","data":{}}`)
	})
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
	queued, release := caller.HoldSender(c, "fake")
	defer release()
	s, err := c.Stream(context.Background(), "fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	if batched := <-got; batched || queued() != 0 {
		t.Fatalf("stream batched %v, %d calls queued", batched, queued())
	}
	if _, err := s.Response(); err != nil {
		t.Fatal(err)
	}
}

// A call abandoned while it waits in the queue is not sent with the
// batch, and the batch is forgotten once the calls it carried end.
func TestAbandonedQueuedCallIsNotSent(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	sent := make(chan []string, 1)
	newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
		calls, ids := [][]byte{m.Data}, []string{"(alone)"}
		if wire.IsBatch(m.Data) {
			calls, ids = batchOf(t, m)
		}
		sent <- ids
		for i, call := range calls {
			ev := `{"type":"result","data":` + string(argsOf(call)) + `}`
			if wire.IsBatch(m.Data) {
				_ = fw.nc.Publish(m.Reply, wire.WithCallID([]byte(ev), ids[i]))
			} else {
				_ = m.Respond([]byte(ev))
			}
		}
	})
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
	queued, release := caller.HoldSender(c, "fake")
	gone, cancel := context.WithCancel(context.Background())
	abandoned := make(chan error, 1)
	go func() {
		_, err := c.Call(gone, "fake", map[string]int{"i": 0}, caller.WithRetries(caller.NoRetries))
		abandoned <- err
	}()
	kept := make(chan error, 2)
	for i := 1; i <= 2; i++ {
		go func() {
			_, err := c.Call(context.Background(), "fake", map[string]int{"i": i}, caller.WithRetries(caller.NoRetries))
			kept <- err
		}()
	}
	testutil.WaitFor(t, "3 calls queued", func() bool { return queued() == 3 })
	cancel()
	if code := problemCode(t, <-abandoned); code != envelope.CodeCancelled {
		t.Fatalf("the abandoned call ended %s", code)
	}
	release()
	if ids := <-sent; len(ids) != 2 {
		t.Fatalf("the batch carried %d calls, want the 2 still wanted", len(ids))
	}
	for range 2 {
		if err := <-kept; err != nil {
			t.Fatal(err)
		}
	}
	if n := caller.OpenBatches(c); n != 0 {
		t.Fatalf("%d batches still routed after their calls ended", n)
	}
}

// Calls queued behind a publish to a tool that four workers were heard on
// go out in four messages of two, not one batch of eight: each NATS hands
// to one worker of the queue group, so the calls keep the fleet's spread.
func TestQueuedCallsKeepTheFleetsSpread(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	const workers = 4
	var served [workers]atomic.Int64
	for k := range workers {
		w := meshtest.NewWorker(t, meshtest.Connect(t, e), worker.Config{})
		if err := w.Register(envelope.ToolSpec{Name: "spread"}, worker.HandlerFunc(
			func(context.Context, *worker.Request, worker.Emitter) (any, error) {
				served[k].Add(1)
				return map[string]int{}, nil
			})); err != nil {
			t.Fatal(err)
		}
	}
	// A long interval: a worker heard counts for 3 of them, however slow
	// the machine makes the warm-up below.
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{Heartbeat: 10 * time.Second})
	ctx := context.Background()
	// A worker names a call in a heartbeat before it runs it, and the
	// caller reads that heartbeat before the result: once every worker
	// has served a call, the caller has heard every one.
	testutil.WaitFor(t, "every worker to serve a call", func() bool {
		if _, err := c.Call(ctx, "spread", nil); err != nil {
			t.Fatal(err)
		}
		for k := range served {
			if served[k].Load() == 0 {
				return false
			}
		}
		return true
	})
	batchesBefore, callsBefore := c.CoalesceStats()
	queued, release := caller.HoldSender(c, "spread")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.Call(ctx, "spread", nil); err != nil {
				t.Error(err)
			}
		})
	}
	testutil.WaitFor(t, "8 calls to queue", func() bool { return queued() == 8 })
	release()
	wg.Wait()
	batches, calls := c.CoalesceStats()
	if b, n := batches-batchesBefore, calls-callsBefore; b != 4 || n != 8 {
		t.Fatalf("8 queued calls to a tool of %d workers went out in %d batches carrying %d calls, want 4 batches of 2", workers, b, n)
	}
}
