package worker

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// runsOn names how the calling handler came to run: "reader" (on a
// subscription's goroutine, through onCall or onBatch on this very
// stack), "settled" (with the other work of a settled announcer round,
// runSettled) or "runner" (on a goroutine of its own).
func runsOn() string {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	for {
		f, more := frames.Next()
		switch {
		case strings.HasSuffix(f.Function, "(*Worker).onCall"), strings.HasSuffix(f.Function, "(*Worker).onBatch"):
			return "reader"
		case strings.HasSuffix(f.Function, "worker.runSettled"):
			return "settled"
		}
		if !more {
			return "runner"
		}
	}
}

// A handler declared Inline runs on the subscription's goroutine when
// nothing before it waits; a call that must wait for the pickup
// confirmation (a destructive tool's, or one whose caller wants it) runs
// with the other work of the round naming it once that is settled, and
// is named before its result; every call of a handler not declared
// Inline runs on a runner of its own.
func TestInlineHandlerRunsWhereNothingWaits(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	where := make(chan string, 1)
	h := HandlerFunc(func(context.Context, *Request, Emitter) (any, error) {
		where <- runsOn()
		return "ok", nil
	})
	yes := true
	idem := &envelope.Annotations{Idempotent: &yes}
	for name, reg := range map[string]struct {
		h Handler
		a *envelope.Annotations
	}{"inline": {Inline(h), idem}, "own": {h, idem}, "destroy": {Inline(h), &envelope.Annotations{Destructive: &yes}}, "ownDestroy": {h, nil}} {
		mustRegister(t, w, envelope.ToolSpec{Name: name, Annotations: reg.a}, reg.h)
	}
	for i, tc := range []struct {
		tool, extra string
		on          string
		named       bool
	}{
		{"inline", " maybe=1", "reader", false},
		{"inline", "", "settled", true}, // the caller wants the confirmation
		{"own", " maybe=1", "runner", false},
		{"destroy", " maybe=1", "settled", true},
		{"ownDestroy", "", "runner", true},
	} {
		named := namedBeforeResult(t, raw, tc.tool, "R"+string(rune('a'+i)), tc.extra)
		if got := <-where; got != tc.on {
			t.Errorf("tool %s with%q: ran %s, want %s", tc.tool, tc.extra, got, tc.on)
		}
		if named != tc.named {
			t.Errorf("tool %s with%q: named before its result = %v, want %v", tc.tool, tc.extra, named, tc.named)
		}
	}
	if ev := rawCall(t, raw, "inline", []byte(`{"args":{}}`)); ev.Type != envelope.EventResult || <-where != "reader" {
		t.Errorf("a call with no caller to wait for: %+v, want a result from the subscription's goroutine", ev)
	}
}

// The next call of a fast handler that is not declared Inline is not held
// up by one of its calls that blocks, however fast its calls typically
// are: only the declaration lets a handler run on the subscription's
// goroutine.
func TestUndeclaredFastHandlerThatBlocksDoesNotHoldUpTheNextCall(t *testing.T) {
	testBlockedCallHoldsNothingUp(t, false)
}

// A handler declared Inline whose calls turn out slow (typically longer
// than handoffAfter) has its calls handed off: one that then blocks does
// not hold up the next.
func TestInlineHandlerWhoseCallsAreSlowIsHandedOff(t *testing.T) {
	testBlockedCallHoldsNothingUp(t, true)
}

// testBlockedCallHoldsNothingUp warms a tool with calls (fast ones, or
// for a handler declared Inline slow ones until the tool counts them
// slow), then checks that a call answers while another blocks.
func testBlockedCallHoldsNothingUp(t *testing.T, declared bool) {
	w, raw := newTestWorker(t, Config{})
	entered, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	var h Handler = HandlerFunc(func(ctx context.Context, req *Request, _ Emitter) (any, error) {
		if string(req.Args) == `{"block":true}` {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "blocked", nil
		}
		// A declared handler that breaks its promise: it runs long.
		for start := time.Now(); declared && time.Since(start) <= maxRunSample; {
		}
		return "ok", nil
	})
	if declared {
		h = Inline(h)
	}
	mustRegister(t, w, envelope.ToolSpec{Name: "t"}, h)
	w.mu.Lock()
	tl := w.tools["t"]
	w.mu.Unlock()
	for i := 0; i < 20 || (declared && !tl.slowCalls()); i++ {
		if i == 200 {
			t.Fatalf("after %d calls of %s each, the tool's calls are not slow (average %s)", i, maxRunSample, time.Duration(tl.typical.Load()))
		}
		if ev := rawCall(t, raw, "t", []byte(`{"args":{}}`)); ev.Type != envelope.EventResult {
			t.Fatalf("warm-up call: %+v", ev)
		}
	}
	blocked := sendCall(t, raw, "t", nats.NewInbox(), []byte("tm2 mode=unary\n"+`{"args":{"block":true}}`))
	<-entered
	if ev := rawCall(t, raw, "t", []byte(`{"args":{}}`)); ev.Type != envelope.EventResult {
		t.Fatalf("the call behind the blocked one: %+v, want a result", ev)
	}
	if _, err := blocked.NextMsg(0); err == nil {
		t.Fatal("the blocking call answered before it was released")
	}
}

// A batch of calls to a handler declared Inline that must each wait for
// the pickup confirmation runs once a round has named its calls: every
// call is answered with its result, and a heartbeat naming the calls
// comes before any of the results.
func TestInlineBatchRunsOnceNamed(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	where := make(chan string, 3)
	mustRegister(t, w, envelope.ToolSpec{Name: "t"}, Inline(HandlerFunc(func(_ context.Context, req *Request, _ Emitter) (any, error) {
		where <- runsOn()
		return req.Args, nil
	})))
	pickup := time.Now().Add(time.Minute).UnixMilli()
	var calls []string
	for _, id := range []string{"b1", "b2", "b3"} {
		calls = append(calls, fmt.Sprintf("tm2 id=%s mode=unary caller=B interval=60000 pickup=%d\n{\"args\":{\"id\":%q}}", id, pickup, id))
	}
	sub := sendCall(t, raw, "t", "_INBOX.B.01CALL", batchOf(calls...))
	named, got := false, map[string]envelope.ToolEvent{}
	for len(got) < len(calls) {
		msg, beats := nextPastBeats(t, sub, fmt.Sprintf("after %d results", len(got)))
		named = named || beats > 0 && len(got) == 0
		for id, ev := range replyEvents(t, msg) {
			got[id] = ev
		}
	}
	for id, ev := range got {
		if ev.Type != envelope.EventResult || string(ev.Data) != fmt.Sprintf(`{"id":%q}`, id) {
			t.Errorf("call %s ended %+v, want its args back", id, ev)
		}
	}
	if !named {
		t.Error("no heartbeat named the calls before their results")
	}
	for range calls {
		if on := <-where; on != "settled" {
			t.Errorf("a call ran %s, want with its settled round's work", on)
		}
	}
}

// replyEvents reads the events of one reply on a batch's subject, by
// the call id each names.
func replyEvents(t *testing.T, m *nats.Msg) map[string]envelope.ToolEvent {
	t.Helper()
	_, ids, evs := replyFrame(t, m)
	out := map[string]envelope.ToolEvent{}
	for i, id := range ids {
		ev, err := envelope.ParseEvent(evs[i])
		if err != nil {
			t.Fatalf("reply %q: %v", m.Data, err)
		}
		out[id] = ev
	}
	return out
}

// onReader reports whether the calling handler runs on a subscription's
// goroutine (onCall or onBatch is on its stack), whatever else is.
func onReader() bool {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "(*Worker).onCall") || strings.HasSuffix(f.Function, "(*Worker).onBatch") {
			return true
		}
		if !more {
			return false
		}
	}
}

// A call of a handler declared Inline that must wait for the pickup
// confirmation, read when no round is being settled and nothing waits
// behind it, has its round settled by the subscription's goroutine that
// read it and runs there once the round is settled, as a micro handler
// runs after a flush of its own; it is still named before its result. A
// batch of such calls does the same.
func TestNamedInlineCallSettlesOnItsReader(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	type ran struct {
		on     string
		reader bool
	}
	where := make(chan ran, 3)
	yes := true
	if err := w.Register(envelope.ToolSpec{Name: "destroy", Annotations: &envelope.Annotations{Destructive: &yes}},
		Inline(HandlerFunc(func(_ context.Context, req *Request, _ Emitter) (any, error) {
			where <- ran{runsOn(), onReader()}
			return req.Args, nil
		}))); err != nil {
		t.Fatal(err)
	}
	if !namedBeforeResult(t, raw, "destroy", "L", "") {
		t.Error("the lone call was not named before its result")
	}
	if got := <-where; got != (ran{"settled", true}) {
		t.Errorf("the lone call ran %+v, want settled on its reader", got)
	}
	pickup := time.Now().Add(time.Minute).UnixMilli()
	var calls []string
	for _, id := range []string{"s1", "s2"} {
		calls = append(calls, fmt.Sprintf("tm2 id=%s mode=unary caller=S interval=60000 pickup=%d\n{\"args\":{}}", id, pickup))
	}
	sub := sendCall(t, raw, "destroy", "_INBOX.S.01CALL", batchOf(calls...))
	if msg, err := sub.NextMsg(20 * time.Second); err != nil || !isBeat(msg) {
		t.Fatalf("the batch's first reply: %v, %v; want the heartbeat naming its calls", msg, err)
	}
	for range calls {
		if got := <-where; got != (ran{"settled", true}) {
			t.Errorf("a call of the batch ran %+v, want settled on its reader", got)
		}
	}
}

// A reader does not settle a round while another is being settled: it
// leaves its work to be queued for the next round, and queues nothing
// itself.
func TestReaderLeavesABusyAnnouncerItsRound(t *testing.T) {
	w, _ := newTestWorker(t, Config{})
	a := w.announcer
	a.mu.Lock()
	a.busy = true
	a.mu.Unlock()
	c := &call{w: w}
	if a.settleOnReader(nil, work{c: c}, c) {
		t.Fatal("a reader settled a round while another was being settled")
	}
	a.mu.Lock()
	queued := len(a.name) + len(a.round.then)
	a.busy = false
	a.mu.Unlock()
	if queued != 0 || c.round != nil {
		t.Errorf("the refused reader queued %d names or work and gave its call round %v; want nothing", queued, c.round)
	}
}
