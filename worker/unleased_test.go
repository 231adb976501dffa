package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/fairshare"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/internal/workercall"
	"github.com/toolmesh/toolmesh/mesh/embedded"
)

// execLog is what a gated tool ran, in order, by the "who" of its args.
type execLog struct {
	mu   sync.Mutex
	runs []string
}

func (l *execLog) add(who string) {
	l.mu.Lock()
	l.runs = append(l.runs, who)
	l.mu.Unlock()
}

func (l *execLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.runs...)
}

// gatedWorker is a worker on an embedded server running tool "t" one
// call at a time: each run is logged, then waits for gate to close. The
// one slot is the worker's own (MaxConcurrent 1) or, with toolSlots, the
// tool's (an admitter, as a CLI tool's max_concurrent is).
func gatedWorker(t *testing.T, gate chan struct{}, log *execLog, toolSlots bool) (*Worker, *embedded.Server) {
	t.Helper()
	e, err := embedded.Start(context.Background(), embedded.Config{InProcessOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	lim := Limits{MaxConcurrent: 1, MaxQueued: 16, MaxPerIdentity: 17}
	if toolSlots {
		lim.MaxConcurrent = 64
	}
	w, err := New(connect(t, e), Config{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var h Handler = HandlerFunc(func(ctx context.Context, r *Request, _ Emitter) (any, error) {
		var args struct{ Who string }
		_ = json.Unmarshal(r.Args, &args)
		log.add(args.Who)
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return "ok", nil
	})
	if toolSlots {
		h = oneSlotTool{h, fairshare.New(1, 16)}
	}
	mustRegister(t, w, envelope.ToolSpec{Name: "t"}, h)
	return w, e
}

// oneSlotTool is a handler with one slot of its own (an admitter).
type oneSlotTool struct {
	Handler
	slots *fairshare.Semaphore
}

func (o oneSlotTool) Admit(ctx context.Context, r *Request) (context.Context, func(), error) {
	call := workercall.Of(ctx, r.Identity)
	if err := o.slots.Acquire(ctx, call.Sender(), call.WillWait); err != nil {
		return nil, nil, err
	}
	return ctx, o.slots.Release, nil
}

func connect(t *testing.T, e *embedded.Server) *nats.Conn {
	t.Helper()
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func callFrom(who string) []byte { return []byte(`{"args":{"who":"` + who + `"}}`) }

// bob sends unleased calls (plain, as `nats req` does, his inbox a
// wildcard subscription as every request mux's is) to a tool busy with
// the first of them, and disconnects while the rest wait. Checked
// against what the tool ran, not what callers were told: none of his
// waiting calls runs once he is gone, while alice's call, sent the same
// way by nats.go's own request and waiting behind his, runs and is
// answered — the check beside her reply inbox leaves her call alone.
func TestUnleasedCallsOfAGoneSenderDoNotRun(t *testing.T) {
	forEachSlotKind(t, testGoneSender)
}

// forEachSlotKind runs test as a subtest with the worker's own slots and
// again with per-tool slots.
func forEachSlotKind(t *testing.T, test func(t *testing.T, toolSlots bool)) {
	for _, toolSlots := range []bool{false, true} {
		t.Run(map[bool]string{false: "worker slots", true: "tool slots"}[toolSlots], func(t *testing.T) {
			test(t, toolSlots)
		})
	}
}

func testGoneSender(t *testing.T, toolSlots bool) {
	gate, log := make(chan struct{}), &execLog{}
	w, e := gatedWorker(t, gate, log, toolSlots)
	const bobCalls = 6
	bob := connect(t, e)
	bobInbox := nats.NewInbox()
	if _, err := bob.Subscribe(bobInbox+".*", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	for i := range bobCalls {
		if err := bob.PublishRequest(wire.Subjects{}.Call("t"), bobInbox+"."+strconv.Itoa(i), callFrom("bob-"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, "bob's first call running and the rest waiting", func() bool {
		return len(log.snapshot()) == 1 && w.admitted.Load() == bobCalls
	})

	alice := connect(t, e)
	answer := make(chan *nats.Msg, 1)
	go func() {
		m, err := alice.Request(wire.Subjects{}.Call("t"), callFrom("alice"), time.Minute)
		if err != nil {
			t.Errorf("alice's call: %v", err)
		}
		answer <- m
	}()
	testutil.WaitFor(t, "alice's call waiting behind bob's", func() bool { return w.admitted.Load() == bobCalls+1 })

	bob.Close()
	testutil.WaitFor(t, "the server to forget bob's inbox", func() bool {
		_, err := alice.Request(bobInbox+".gone", nil, 200*time.Millisecond)
		return errors.Is(err, nats.ErrNoResponders)
	})
	close(gate)

	m := <-answer
	if ev, err := envelope.ParseEvent(m.Data); err != nil || ev.Problem() != nil {
		t.Fatalf("alice's answer %q (%v), want a result", m.Data, err)
	}
	testutil.WaitFor(t, "every call answered", func() bool { return w.admitted.Load() == 0 })
	if got := log.snapshot(); len(got) != 2 || !strings.HasPrefix(got[0], "bob-") || got[1] != "alice" {
		t.Fatalf("the tool ran %v; want one of bob's calls (running before he left), then alice's: none of bob's waiting calls", got)
	}
	st, _ := w.ToolStats("t")
	if st.Errors != bobCalls-1 || !strings.HasPrefix(st.LastError, string(envelope.CodeCancelled)) {
		t.Fatalf("tool stats: %d errors, last %q; want bob's %d waiting calls cancelled", st.Errors, st.LastError, bobCalls-1)
	}
}

// An unleased call whose sender the worker cannot see leave — one from
// another account (a stamped identity), or with no inbox prefix to probe
// beside — is refused overloaded, unrun, when it finds no room, rather
// than queued.
func TestUnleasedCallThatCannotBeCheckedDoesNotWait(t *testing.T) {
	forEachSlotKind(t, testCannotBeChecked)
}

func testCannotBeChecked(t *testing.T, toolSlots bool) {
	gate, log := make(chan struct{}), &execLog{}
	w, e := gatedWorker(t, gate, log, toolSlots)
	nc := connect(t, e)
	answers := make(chan *nats.Msg, 8)
	if _, err := nc.ChanSubscribe("inbox.ab.>", answers); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.ChanSubscribe("short", answers); err != nil {
		t.Fatal(err)
	}
	send := func(reply string, hdr nats.Header, who string) {
		t.Helper()
		if err := nc.PublishMsg(&nats.Msg{Subject: wire.Subjects{}.Call("t"), Reply: reply, Header: hdr, Data: callFrom(who)}); err != nil {
			t.Fatal(err)
		}
	}
	send("inbox.ab.first", nil, "first")
	testutil.WaitFor(t, "the first call running", func() bool { return len(log.snapshot()) == 1 })
	send("inbox.ab.bob", nats.Header{"Nats-Request-Info": {`{"acc":"BOB","user":"bob"}`}}, "bob")
	send("short", nil, "short")
	testutil.WaitFor(t, "both calls answered while the first still runs", func() bool { return len(answers) == 2 })
	for range 2 {
		m := <-answers
		ev, err := envelope.ParseEvent(m.Data)
		if err != nil || ev.Problem() == nil {
			t.Fatalf("answer on %s: %q (%v), want a refusal", m.Subject, m.Data, err)
		}
		if p := ev.Problem(); p.Code != envelope.CodeOverloaded || p.Ran() != envelope.RanNo || p.RetryAfter == nil ||
			!strings.Contains(p.Detail, "does not wait") {
			t.Fatalf("answer on %s: %+v, want overloaded, unrun, with retry_after, saying it does not wait", m.Subject, p)
		}
	}
	close(gate)
	testutil.WaitFor(t, "every call answered", func() bool { return w.admitted.Load() == 0 })
	if got := log.snapshot(); len(got) != 1 {
		t.Fatalf("the tool ran %v, want only the first call", got)
	}
}
