package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
)

// newTestWorker starts an in-process server with a worker on it, and
// returns a second connection on which the test speaks raw NATS.
func newTestWorker(t testing.TB, cfg Config) (*Worker, *nats.Conn) {
	t.Helper()
	e, err := embedded.Start(context.Background(), embedded.Config{InProcessOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	var conns [2]*nats.Conn
	for i := range conns {
		if conns[i], err = e.Connect(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conns[i].Close)
	}
	w, err := New(conns[0], cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w, conns[1]
}

// mustRegister registers h for spec on w and fails the test if w refuses.
func mustRegister(t testing.TB, w *Worker, spec envelope.ToolSpec, h Handler, mw ...Middleware) {
	t.Helper()
	if err := w.Register(spec, h, mw...); err != nil {
		t.Fatal(err)
	}
}

var noop = HandlerFunc(func(context.Context, *Request, Emitter) (any, error) { return "ok", nil })

func TestRegisterValidates(t *testing.T) {
	w, _ := newTestWorker(t, Config{})
	cases := []struct {
		name string
		spec envelope.ToolSpec
	}{
		{"bad name", envelope.ToolSpec{Name: "a b"}},
		{"subject wildcard", envelope.ToolSpec{Name: "a.>"}},
		{"non-object input schema", envelope.ToolSpec{Name: "a", InputSchema: json.RawMessage(`{"type":"array"}`)}},
		{"invalid output schema", envelope.ToolSpec{Name: "a", OutputSchema: json.RawMessage(`{"type":12}`)}},
	}
	for _, c := range cases {
		var p *envelope.Problem
		if err := w.Register(c.spec, noop); !errors.As(err, &p) || p.Code != envelope.CodeInvalidConfig {
			t.Errorf("%s: got %v, want invalid_config", c.name, err)
		}
	}
	mustRegister(t, w, envelope.ToolSpec{Name: "a"}, noop)
	if err := w.Register(envelope.ToolSpec{Name: "a"}, noop); err == nil {
		t.Error("duplicate registration accepted")
	}
	if err := w.Register(envelope.ToolSpec{Name: "b"}, nil); err == nil {
		t.Error("nil handler accepted")
	}
	if got := w.Specs(); len(got) != 1 || got[0].Name != "a" {
		t.Errorf("specs %v", got)
	}
}

func TestDrainThenRegisterRefused(t *testing.T) {
	w, _ := newTestWorker(t, Config{})
	mustRegister(t, w, envelope.ToolSpec{Name: "a"}, noop)
	if err := w.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Drain(context.Background()); err != nil {
		t.Errorf("second drain: %v", err)
	}
	if err := w.Register(envelope.ToolSpec{Name: "b"}, noop); !errors.Is(err, errDraining) {
		t.Errorf("register after drain: %v", err)
	}
}

// A second call with an id already in flight is refused, and Stop still
// reaches the first: both are found by that id.
func TestDuplicateCallIDRefused(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	running := make(chan struct{}, 2)
	cancelled := make(chan error, 2)
	mustRegister(t, w, envelope.ToolSpec{Name: "block"}, HandlerFunc(func(ctx context.Context, _ *Request, _ Emitter) (any, error) {
		running <- struct{}{}
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		return nil, ctx.Err()
	}))
	call := func(reply string) {
		m := nats.NewMsg(wire.Subjects{}.Call("block"))
		m.Reply = reply
		m.Data = []byte("tm2 id=01SAMEIDSAMEIDSAMEIDSAMEID\n" + `{"args":{}}`)
		if err := raw.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	second, _ := raw.SubscribeSync("reply.second")
	call("reply.first")
	<-running
	call("reply.second")
	m, _ := nextPastBeats(t, second, "no answer to the duplicate")
	var ev envelope.ToolEvent
	if err := json.Unmarshal(m.Data, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Code != envelope.CodeInvalidInput {
		t.Fatalf("duplicate answered %+v, want invalid_input", ev)
	}
	w.Stop() // returns only once the first handler has ended
	if cause := <-cancelled; cause == nil || !strings.Contains(cause.Error(), "stopped") {
		t.Errorf("first call cancelled with %v, want the worker's stop", cause)
	}
	if len(running) != 0 {
		t.Error("the duplicate's handler ran")
	}
}

// A budget too large for a Duration is a long budget, not an expired one.
func TestHugeBudgetIsNotExpired(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	var deadline time.Time
	mustRegister(t, w, envelope.ToolSpec{Name: "t"}, HandlerFunc(func(_ context.Context, req *Request, _ Emitter) (any, error) {
		deadline = req.Deadline
		return "ok", nil
	}))
	// A caller that proves it is alive (its reply subject carries its id):
	// an unleased call's life is bounded.
	sub := sendCall(t, raw, "t", "_INBOX.c1.call1", []byte("tm2 timeout=9999999999999 caller=c1\n"+`{"args":{}}`))
	reply, err := sub.NextMsg(20 * time.Second)
	// The worker names a leased call in a heartbeat before it runs it
	// (protocol v2, §8.2): the result follows.
	for err == nil && bytes.HasPrefix(reply.Data, []byte("tm2 hb ")) {
		reply, err = sub.NextMsg(20 * time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	var ev envelope.ToolEvent
	if err := json.Unmarshal(reply.Data, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != envelope.EventResult {
		t.Fatalf("got %+v, want the result", ev)
	}
	if !deadline.After(time.Now().Add(100 * 365 * 24 * time.Hour)) {
		t.Errorf("deadline %v, want centuries away", deadline)
	}
}

// Liveness messages for callers with nothing in flight here are not
// remembered: made-up caller ids cannot grow the worker's memory.
func TestAliveWithoutCallsIsIgnored(t *testing.T) {
	w, _ := newTestWorker(t, Config{})
	for i := range 1000 {
		w.onControl(&nats.Msg{Data: wire.Control{Op: wire.OpAlive, CallerID: fmt.Sprint("made-up-", i)}.Encode()})
	}
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	if len(w.peers) != 0 {
		t.Fatalf("%d made-up callers remembered", len(w.peers))
	}
}

// A worker id callers could not put in a subject (a wildcard, an empty
// token) is refused at New: callers would ignore it, so the worker's calls
// could never be cancelled, credited or kept alive.
func TestWorkerIDMustFitASubject(t *testing.T) {
	_, nc := newTestWorker(t, Config{})
	for _, id := range []string{"w*", "a..b", "a.>", "has space", ".lead", strings.Repeat("x", 257)} {
		w, err := New(nc, Config{ID: id, Logger: slog.New(slog.DiscardHandler)})
		var p *envelope.Problem
		if err == nil {
			w.Stop()
			t.Errorf("id %q was accepted", id)
		} else if !errors.As(err, &p) || p.Code != envelope.CodeInvalidConfig {
			t.Errorf("id %q: %v, want invalid_config", id, err)
		}
	}
	w, err := New(nc, Config{ID: "pool.01J0000000000000000000000", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("a pooled ULID id was refused: %v", err)
	}
	w.Stop()
}

// A v1 caller's header metadata is ignored (protocol v2 reads none): its
// call runs as a plain call and gets one bare answer, however hostile
// the headers.
func TestHeadersAreIgnored(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	seen := make(chan *Request, 1)
	mustRegister(t, w, envelope.ToolSpec{Name: "t"}, HandlerFunc(func(_ context.Context, req *Request, emit Emitter) (any, error) {
		seen <- req
		_ = emit.Delta("dropped: not a stream")
		return "ok", nil
	}))
	m := nats.NewMsg(wire.Subjects{}.Call("t"))
	for k, v := range map[string]string{"Toolmesh-Mode": "stream", "Toolmesh-Call-Id": "a.b.>", "Toolmesh-Timeout": "soon",
		"Authorization": "Bearer secret", "Toolmesh-Idempotency-Key": "k"} {
		m.Header.Set(k, v)
	}
	m.Data = []byte(`{"args":{}}`)
	reply, err := raw.RequestMsg(m, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := envelope.ParseEvent(reply.Data)
	if err != nil || ev.Type != envelope.EventResult || len(reply.Header) != 0 {
		t.Fatalf("answer %q (headers %v): %v, want one bare result", reply.Data, reply.Header, err)
	}
	if got := <-seen; got.Streaming || got.Bearer != "" || got.IdempotencyKey != "" || !got.Deadline.After(time.Now()) {
		t.Fatalf("headers reached the handler: %+v", got)
	}
}

// A call naming a caller id its reply subject does not carry cannot take
// over that caller's heartbeats (nor, through them, its probes and its
// calls): it gets no peer, and no heartbeat goes to it.
func TestForeignCallerIDTakesOverNothing(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	release := make(chan struct{})
	mustRegister(t, w, envelope.ToolSpec{Name: "block"}, HandlerFunc(func(ctx context.Context, _ *Request, _ Emitter) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "ok", nil
	}))
	defer close(release)
	victim, _ := raw.SubscribeSync("_INBOX.victim.*")
	attacker, _ := raw.SubscribeSync("_INBOX.attacker.*")
	send := func(reply, id string) {
		body := "tm2 id=" + id + " caller=victim interval=100\n" + `{"args":{}}`
		if err := raw.PublishRequest(wire.Subjects{}.Call("block"), reply, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	send("_INBOX.victim.V1", "V1")
	send("_INBOX.attacker.A1", "A1")
	for beats := 0; beats < 3; {
		m, err := victim.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := wire.ParseFrame(m.Data); err == nil && f.Kind == wire.FrameBeat && len(f.Payload) > 0 {
			if strings.Contains(string(f.Payload), "A1") {
				t.Fatalf("the victim's heartbeat names the foreign call: %q", m.Data)
			}
			beats++
		}
	}
	// Any beat the worker sent the foreign subject went out before the
	// victim's third, on the same connection, so it would be queued by now.
	if m, err := attacker.NextMsg(time.Millisecond); err == nil {
		t.Fatalf("the foreign call's subject got %q", m.Data)
	}
}
