package caller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// These tests put the caller against a hand-written worker speaking raw
// NATS, so they can break the protocol in ways the real worker never does.

const fakeWorkerID = "FAKEWORKER"

// fakeWorker serves tool "fake" with reply, and records the control
// messages sent to it.
type fakeWorker struct {
	nc       *nats.Conn
	controls chan wire.Control
}

func newFakeWorker(t *testing.T, nc *nats.Conn, reply func(fw *fakeWorker, m *nats.Msg)) *fakeWorker {
	t.Helper()
	fw := &fakeWorker{nc: nc, controls: make(chan wire.Control, 64)}
	subjects := wire.Subjects{}
	if _, err := nc.Subscribe(subjects.Call("fake"), func(m *nats.Msg) { reply(fw, m) }); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe(subjects.Control(fakeWorkerID), func(m *nats.Msg) {
		var c wire.Control
		if json.Unmarshal(m.Data, &c) == nil {
			fw.controls <- c
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return fw
}

// send publishes one numbered event to the call's inbox, as an events frame.
func (fw *fakeWorker) send(m *nats.Msg, seq int, event string) {
	body := wire.AppendEventsHead(nil, int64(seq), []int{len(event)})
	_ = fw.nc.Publish(m.Reply, append(body, event...))
}

const fakeStart = `{"type":"start","tool_id":"fake","call_id":"x","metadata":{"worker_id":"` + fakeWorkerID + `"}}`

func problemCode(t *testing.T, err error) envelope.Code {
	t.Helper()
	var p *envelope.Problem
	if !errors.As(err, &p) {
		t.Fatalf("want a Problem, got %v", err)
	}
	return p.Code
}

// streamFakeCode streams a call of tool "fake" through a new caller on
// e and returns the code of the Problem it ends with. The stream stays
// open until the test ends, as a deferred Close in the test would keep it.
func streamFakeCode(t *testing.T, e *embedded.Server) envelope.Code {
	t.Helper()
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
	s, err := c.Stream(context.Background(), "fake", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	_, err = s.Response()
	return problemCode(t, err)
}

// waitForCancel waits until the fake worker is told to cancel.
func waitForCancel(t *testing.T, fw *fakeWorker) {
	t.Helper()
	for {
		select {
		case c := <-fw.controls:
			if c.Op == wire.OpCancel {
				return
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the worker was never told to cancel")
		}
	}
}

// A hole in the sequence ends the call with stream_gap, and the worker is
// told to stop rather than left streaming into the void.
func TestSequenceHoleIsStreamGap(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	fw := newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
		fw.send(m, 1, fakeStart)
		fw.send(m, 3, `{"type":"delta","data":{"i":2}}`)
	})
	if code := streamFakeCode(t, e); code != envelope.CodeStreamGap {
		t.Fatalf("code = %s, want stream_gap", code)
	}
	waitForCancel(t, fw)
}

// An event that is not JSON is reported, not dropped and not waited on.
func TestMalformedEventIsReported(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) { _ = m.Respond([]byte(`{"type":`)) })
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
	_, err := c.Call(context.Background(), "fake", map[string]any{})
	if code := problemCode(t, err); code != envelope.CodeInternal {
		t.Fatalf("code = %s, want internal_error", code)
	}
}

// A worker that ignores the credit window cannot grow the caller's memory:
// the events within the window are delivered, then the call ends.
func TestCreditOverrunEndsTheCall(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	fw := newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
		fw.send(m, 1, fakeStart)
		for i := 2; i <= 50; i++ {
			fw.send(m, i, `{"type":"delta","data":{}}`)
		}
	})
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
	s, err := c.Stream(context.Background(), "fake", map[string]any{}, caller.WithWindow(4))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Nothing is read until the caller has given up on the worker, so
	// no credit was ever granted.
	waitForCancel(t, fw)
	var types []envelope.EventType
	for ev, err := range s.Events() {
		if (err != nil) != (ev.Type == envelope.EventError) {
			t.Fatalf("event %s came with error %v: only the terminal error event carries one", ev.Type, err)
		}
		types = append(types, ev.Type)
		if p := ev.Problem(); p != nil && p.Code != envelope.CodeInternal {
			t.Fatalf("code = %s, want internal_error", p.Code)
		}
	}
	want := []envelope.EventType{envelope.EventStart, envelope.EventDelta, envelope.EventDelta, envelope.EventDelta, envelope.EventError}
	if len(types) != len(want) {
		t.Fatalf("events = %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events = %v, want %v", types, want)
		}
	}
}

// A dropped connection fails the calls in flight at once with
// connection_lost: the deadline and the heartbeat watch are both far away,
// so any other outcome would be a wait the caller did not need.
func TestConnectionLossFailsCallsInFlight(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	received := make(chan struct{}, 1)
	newFakeWorker(t, meshtest.Connect(t, e), func(*fakeWorker, *nats.Msg) { received <- struct{}{} })
	nc, err := e.Connect(nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c := meshtest.NewCaller(t, nc, caller.Config{Heartbeat: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	errs := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "fake", map[string]any{})
		errs <- err
	}()
	<-received
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := problemCode(t, <-errs); code != envelope.CodeConnectionLost {
		t.Fatalf("code = %s, want connection_lost", code)
	}
}

// A call no worker ever reads ends with worker_lost once the pickup
// timeout passes, rather than waiting for a deadline it does not have.
func TestUnreadCallEndsWorkerLost(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	newFakeWorker(t, meshtest.Connect(t, e), func(*fakeWorker, *nats.Msg) {}) // swallows every call
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{Heartbeat: 10 * time.Millisecond})
	_, err := c.Call(context.Background(), "fake", map[string]any{})
	var p *envelope.Problem
	if !errors.As(err, &p) || p.Code != envelope.CodeWorkerLost {
		t.Fatalf("want worker_lost, got %v", err)
	}
	if !strings.Contains(p.Detail, "no worker took up the call") {
		t.Errorf("detail %q does not say the call was never taken up", p.Detail)
	}
}

// A busy worker cannot beat for calls still unread in its buffer, so
// silence before a worker's first word is not judged by the heartbeat
// rule: a call read only after many intervals still gets its result.
func TestLatePickupIsNotWorkerLost(t *testing.T) {
	const beat = 10 * time.Millisecond
	e := meshtest.StartServer(t, embedded.Config{})
	newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
		<-time.After(10 * wire.MissedBeats * beat) // the silence under test
		_ = m.Respond([]byte(`{"type":"result","data":{"ok":true}}`))
	})
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{Heartbeat: beat, PickupTimeout: time.Hour})
	resp, err := c.Call(context.Background(), "fake", map[string]any{})
	if err != nil {
		t.Fatalf("a late but live worker was judged lost: %v", err)
	}
	if v, _ := resp.Get("ok"); string(v) != "true" {
		t.Fatalf("response %+v", resp)
	}
}

// A call made with tracing off carries no trace fields in its metadata
// line: nothing for the worker to extract either.
func TestUntracedCallCarriesNoTraceContext(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	bodies := make(chan []byte, 1)
	newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
		bodies <- m.Data
		_ = m.Respond([]byte(`{"type":"result","data":{}}`))
	})
	c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{})
	if _, err := c.Call(context.Background(), "fake", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	line, _, err := wire.SplitCall(<-bodies)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{wire.MetaTraceparent, wire.MetaTracestate, wire.MetaBaggage} {
		if strings.Contains(string(line), " "+key+"=") {
			t.Errorf("untraced call's metadata %q carries %s", line, key)
		}
	}
}

// A worker that refuses a stream call before it has read the call's mode
// answers with a bare error; the caller hands over that error, not an
// internal_error about a missing number.
func TestStreamRefusedEarlyKeepsItsError(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	newFakeWorker(t, meshtest.Connect(t, e), func(fw *fakeWorker, m *nats.Msg) {
		p := envelope.NewProblem(envelope.CodeInvalidInput, "metadata id: character '.' is not allowed")
		data, _ := envelope.ErrorEvent(p).AppendJSON(nil)
		_ = m.Respond(data)
	})
	if code := streamFakeCode(t, e); code != envelope.CodeInvalidInput {
		t.Fatalf("code = %s, want the worker's invalid_input", code)
	}
}

// A heartbeat naming thousands of ids the caller does not know makes it
// send a bounded number of cancels, not one per id.
func TestUnknownIDsInABeatCauseBoundedCancels(t *testing.T) {
	e := meshtest.StartServer(t, embedded.Config{})
	wnc := meshtest.Connect(t, e)
	fw := newFakeWorker(t, wnc, func(fw *fakeWorker, m *nats.Msg) {
		beat := wire.AppendBeatHead(nil, fakeWorkerID, 1000)
		for i := range 1000 {
			beat = append(beat, fmt.Sprintf("UNKNOWN%d ", i)...)
		}
		_ = fw.nc.Publish(m.Reply, beat)
		_ = m.Respond([]byte(`{"type":"result","data":{}}`))
	})
	cnc := meshtest.Connect(t, e)
	c := meshtest.NewCaller(t, cnc, caller.Config{})
	if _, err := c.Call(context.Background(), "fake", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	// The beat was handled before the result, so its cancels went out on
	// cnc before Call returned; a marker sent after them on the same
	// connection arrives after all of them.
	if err := cnc.Publish(wire.Subjects{}.Control(fakeWorkerID), wire.Control{Op: "marker"}.Encode()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for ctl := range fw.controls {
		if ctl.Op == "marker" {
			break
		}
		n++
	}
	if n == 0 || n > 16 {
		t.Fatalf("%d cancels for one heartbeat naming 1000 unknown ids, want 1 to 16", n)
	}
}
