package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
)

// rawCall sends one unary call on raw and returns its terminal event.
func rawCall(t *testing.T, raw *nats.Conn, tool string, body []byte) envelope.ToolEvent {
	t.Helper()
	m := nats.NewMsg(wire.Subjects{}.Call(tool))
	m.Data = append([]byte("tm2 mode=unary\n"), body...)
	reply, err := raw.RequestMsg(m, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(reply.Data) || !json.Valid(reply.Data) {
		t.Fatalf("reply is not valid UTF-8 JSON: %q", reply.Data)
	}
	ev, err := envelope.ParseEvent(reply.Data)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// No handler starts after Stop returns, even while calls keep arriving:
// admission and Stop's wait are ordered. So too for a handler declared
// Inline, whose calls run on the subscription's goroutine, or, when they
// must wait for the pickup confirmation, with their settled round's work.
func TestStopOrdersAdmission(t *testing.T) {
	pickup := time.Now().Add(time.Hour).UnixMilli()
	named := fmt.Appendf(nil, "tm2 mode=unary caller=S interval=60000 pickup=%d\n{\"args\":{}}", pickup)
	for _, tc := range []struct {
		name   string
		inline bool
		data   []byte
	}{
		{"plain", false, []byte(`{"args":{}}`)},
		{"inline", true, []byte(`{"args":{}}`)},
		{"inline, confirmed", true, named},
	} {
		t.Run(tc.name, func(t *testing.T) { testStopOrdersAdmission(t, tc.inline, tc.data) })
	}
}

func testStopOrdersAdmission(t *testing.T, inline bool, data []byte) {
	for round := range 20 {
		w, raw := newTestWorker(t, Config{Limits: Limits{MaxConcurrent: 4, MaxQueued: 64}})
		var stopped, late atomic.Bool
		var h Handler = HandlerFunc(func(context.Context, *Request, Emitter) (any, error) {
			if stopped.Load() {
				late.Store(true)
			}
			return "ok", nil
		})
		if inline {
			h = Inline(h)
		}
		mustRegister(t, w, envelope.ToolSpec{Name: "t"}, h)
		var served atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			m := nats.NewMsg(wire.Subjects{}.Call("t"))
			m.Reply = "ignored"
			m.Data = data
			for i := 0; i < 2000; i++ {
				if raw.PublishMsg(m) != nil {
					return
				}
				served.Add(1)
			}
		}()
		testutil.WaitFor(t, "calls flowing", func() bool { s, _ := w.ToolStats("t"); return s.Requests > 0 })
		w.Stop()
		stopped.Store(true)
		<-done
		_ = raw.Flush()
		if late.Load() {
			t.Fatalf("round %d: a handler started after Stop returned", round)
		}
		if n := w.admitted.Load(); n != 0 {
			t.Fatalf("round %d: %d calls still admitted after Stop returned", round, n)
		}
	}
}

// Register waits for the server's confirmation without holding the
// worker's lock, and a registration never confirmed leaves nothing behind.
func TestRegisterConfirmIsUnlockedAndAtomic(t *testing.T) {
	e, err := embedded.Start(context.Background(), embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(e.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	w, err := New(nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	w.confirmTimeout = time.Hour // before anything reads it: Register is the first
	mustRegister(t, w, envelope.ToolSpec{Name: "a"}, noop)
	_ = e.Shutdown(context.Background())
	testutil.WaitFor(t, "the connection to notice", func() bool { return !nc.IsConnected() })
	before := nc.NumSubscriptions()
	regErr := make(chan error, 1)
	go func() { regErr <- w.Register(envelope.ToolSpec{Name: "b"}, noop) }()
	testutil.WaitFor(t, "register to subscribe", func() bool { return nc.NumSubscriptions() == before+2 })
	// Register is now waiting for the server. The worker must still answer.
	if specs := w.Specs(); len(specs) != 1 || specs[0].Name != "a" {
		t.Fatalf("specs during an unconfirmed register: %v", specs)
	}
	select {
	case err := <-regErr:
		t.Fatalf("register returned before its confirmation failed: %v", err)
	default:
	}
	nc.Close() // the confirmation can now never come
	if err := <-regErr; err == nil {
		t.Fatal("register of an unconfirmed tool succeeded")
	}
	if specs := w.Specs(); len(specs) != 1 {
		t.Fatalf("half-registered tool left behind: %v", specs)
	}
	if _, ok := w.ToolStats("b"); ok {
		t.Fatal("tool b has stats but was never registered")
	}
}

// A call subscription has bounded pending limits.
func TestCallSubscriptionPendingIsBounded(t *testing.T) {
	w, _ := newTestWorker(t, Config{})
	mustRegister(t, w, envelope.ToolSpec{Name: "a"}, noop)
	msgs, bytes, err := w.tools["a"].sub.PendingLimits()
	if err != nil || msgs <= 0 || bytes <= 0 {
		t.Fatalf("pending limits %d msgs, %d bytes (%v): unbounded", msgs, bytes, err)
	}
}

// Each failure is the caller's or the tool's as it really is, under the
// worker's problem base URI.
func TestHandlerProblemsAreHonest(t *testing.T) {
	const base = "https://errors.example.com/p"
	w, raw := newTestWorker(t, Config{ProblemBaseURI: base})
	tools := map[string]Handler{
		"bind": HandlerFunc(func(_ context.Context, req *Request, _ Emitter) (any, error) {
			var v struct{ N int }
			if err := req.Bind(&v); err != nil {
				return nil, err
			}
			return v, nil
		}),
		"plain": HandlerFunc(func(context.Context, *Request, Emitter) (any, error) { return nil, errors.New("disk full") }),
		"echo": HandlerFunc(func(_ context.Context, req *Request, _ Emitter) (any, error) {
			return req.Args, nil
		}),
	}
	for name, h := range tools {
		mustRegister(t, w, envelope.ToolSpec{Name: name}, h)
	}
	cases := []struct {
		tool string
		body string
		want envelope.Code
	}{
		{"bind", `{"args":{"N":"not a number"}}`, envelope.CodeInvalidInput},
		{"plain", `{"args":{}}`, envelope.CodeToolFailed},
		{"echo", "{\"args\":{\"s\":\"\xff\xfe\"}}", envelope.CodeInvalidInput},
	}
	for _, tc := range cases {
		ev := rawCall(t, raw, tc.tool, []byte(tc.body))
		p := ev.Problem()
		if p == nil || p.Code != tc.want {
			t.Errorf("%s: got %+v, want %s", tc.tool, ev, tc.want)
			continue
		}
		if !strings.HasPrefix(p.Type, base+"/") {
			t.Errorf("%s: problem type %q is not under %s", tc.tool, p.Type, base)
		}
	}
}

// A caller that is alive but has not proved it (it never sent a liveness
// message: it cannot address a worker it has not heard from) keeps its
// call: the worker probes it before cancelling anything.
func TestLiveCallerIsProbedNotCancelled(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	var probes atomic.Int64
	if _, err := raw.Subscribe("_INBOX.SILENT."+wire.ProbeToken, func(m *nats.Msg) {
		probes.Add(1)
		f, err := wire.ParseFrame(m.Data)
		if err != nil || f.Kind != wire.FrameBeat {
			t.Errorf("probe %q is not a heartbeat frame: %v", m.Data, err)
			return
		}
		_ = raw.Publish(wire.Subjects{}.Control(f.Worker), wire.Control{Op: wire.OpAlive, CallerID: "SILENT"}.Encode())
	}); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, w, envelope.ToolSpec{Name: "slow"}, HandlerFunc(func(ctx context.Context, _ *Request, _ Emitter) (any, error) {
		for probes.Load() < 3 { // outlive several leases
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(5 * time.Millisecond):
			}
		}
		return "done", nil
	}))
	sub := sendCall(t, raw, "slow", "_INBOX.SILENT.01CALL", []byte("tm2 mode=unary caller=SILENT interval=10\n"+`{"args":{}}`))
	reply, _ := nextPastBeats(t, sub, "the live caller's result")
	ev, err := envelope.ParseEvent(reply.Data)
	if err != nil || ev.Type != envelope.EventResult {
		t.Fatalf("a live caller's call ended %+v (%v)", ev, err)
	}
}

// A call whose message is still being dispatched when Stop returns (the
// subscription callback can run late) is refused as overloaded — the
// handler never runs — instead of being admitted after Stop's wait began.
func TestCallArrivingAfterStopIsRefused(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	var ran atomic.Bool
	mustRegister(t, w, envelope.ToolSpec{Name: "t"}, HandlerFunc(func(context.Context, *Request, Emitter) (any, error) {
		ran.Store(true)
		return "ok", nil
	}))
	sub, err := raw.SubscribeSync("late.reply")
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.Flush()
	tl := w.tools["t"]
	w.Stop()
	m := nats.NewMsg(wire.Subjects{}.Call("t"))
	m.Reply = "late.reply"
	m.Data = []byte("tm2 mode=unary\n" + `{"args":{}}`)
	w.onCall(tl, m) // what a subscription callback still in flight would do
	if n := w.admitted.Load(); n != 0 {
		t.Fatalf("%d calls admitted after Stop returned", n)
	}
	reply, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := envelope.ParseEvent(reply.Data)
	if err != nil || ev.Code != envelope.CodeOverloaded || !strings.Contains(ev.Message, "stopping") {
		t.Fatalf("late call answered %+v (%v), want overloaded: stopping", ev, err)
	}
	if ran.Load() {
		t.Fatal("the handler ran after Stop returned")
	}
}

// firstEventPastBeats publishes one call message (metadata line and body)
// to tool on raw and returns the first event answered, past any heartbeats.
func firstEventPastBeats(t *testing.T, raw *nats.Conn, tool, msg string) envelope.ToolEvent {
	t.Helper()
	m, _ := nextPastBeats(t, sendCall(t, raw, tool, nats.NewInbox(), []byte(msg)), "no answer")
	f, err := wire.ParseFrame(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := envelope.ParseEvent(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}
