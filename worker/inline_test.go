package worker

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

// onReader reports whether the calling goroutine is a subscription's,
// running a call itself: the call came through onCall or onBatch on this
// very stack.
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

// A handler declared Inline runs on the subscription's goroutine when
// nothing before it waits; a call that must wait for the pickup
// confirmation (a destructive tool's) is handed off, and so is every call
// of a handler not declared Inline.
func TestInlineHandlerRunsOnTheReaderOnlyWhenNothingWaits(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	where := make(chan bool, 1)
	h := HandlerFunc(func(context.Context, *Request, Emitter) (any, error) {
		where <- onReader()
		return "ok", nil
	})
	yes := true
	idem := &envelope.Annotations{Idempotent: &yes}
	for name, reg := range map[string]struct {
		h Handler
		a *envelope.Annotations
	}{"inline": {Inline(h), idem}, "own": {h, idem}, "destroy": {Inline(h), &envelope.Annotations{Destructive: &yes}}} {
		if err := w.Register(envelope.ToolSpec{Name: name, Annotations: reg.a}, reg.h); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		tool, extra   string
		reader, named bool
	}{
		{"inline", " maybe=1", true, false},
		{"inline", "", false, true}, // the caller wants the confirmation
		{"own", " maybe=1", false, false},
		{"destroy", " maybe=1", false, true},
	} {
		named := namedBeforeResult(t, raw, tc.tool, "R"+string(rune('a'+i)), tc.extra)
		if got := <-where; got != tc.reader {
			t.Errorf("tool %s with%q: ran on the subscription's goroutine = %v, want %v", tc.tool, tc.extra, got, tc.reader)
		}
		if named != tc.named {
			t.Errorf("tool %s with%q: named before its result = %v, want %v", tc.tool, tc.extra, named, tc.named)
		}
	}
	if ev := rawCall(t, raw, "inline", []byte(`{"args":{}}`)); ev.Type != envelope.EventResult || !<-where {
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
	if err := w.Register(envelope.ToolSpec{Name: "t"}, h); err != nil {
		t.Fatal(err)
	}
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
	blocked, err := raw.SubscribeSync(nats.NewInbox())
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(mesh.Subjects{}.Call("t"))
	m.Reply, m.Data = blocked.Subject, []byte("tm2 mode=unary\n"+`{"args":{"block":true}}`)
	if err := raw.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	<-entered
	if ev := rawCall(t, raw, "t", []byte(`{"args":{}}`)); ev.Type != envelope.EventResult {
		t.Fatalf("the call behind the blocked one: %+v, want a result", ev)
	}
	if _, err := blocked.NextMsg(0); err == nil {
		t.Fatal("the blocking call answered before it was released")
	}
}
