package worker

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// batchOf builds a batch message of whole call bodies.
func batchOf(calls ...string) []byte {
	sizes := make([]int, len(calls))
	var body []byte
	for i, c := range calls {
		sizes[i] = len(c)
		body = append(body, c...)
	}
	return append(wire.AppendBatchHead(nil, sizes), body...)
}

// sendBatch sends data to tool and returns the replies, by call id, as
// they come: in events frames with id= or ends frames. It stops once the
// replies name n calls (or once one message names none).
func sendBatch(t *testing.T, raw *nats.Conn, tool string, data []byte, n int) (map[string]envelope.ToolEvent, []*nats.Msg) {
	t.Helper()
	sub := sendCall(t, raw, tool, nats.NewInbox(), data)
	got := map[string]envelope.ToolEvent{}
	var msgs []*nats.Msg
	for len(got) < n {
		m, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("after replies for %d of %d calls: %v", len(got), n, err)
		}
		msgs = append(msgs, m)
		f, ids, evs := replyFrame(t, m)
		switch f.Kind {
		case wire.FrameBare:
			return got, msgs
		case wire.FrameEvents:
			if f.ID == "" || f.Seq != 1 || len(evs) != 1 {
				t.Fatalf("reply %q: want one event numbered 1 naming its call", m.Data)
			}
		}
		for i, id := range ids {
			ev, err := envelope.ParseEvent(evs[i])
			if _, dup := got[id]; dup || err != nil {
				t.Fatalf("reply %q: call %s answered twice, or %v", m.Data, id, err)
			}
			got[id] = ev
		}
	}
	return got, msgs
}

// Every call of a batch is run and answered on its own, its reply naming
// it with id=: a call with bad args or bad metadata gets its own error
// and spoils nothing for the others.
func TestBatchCallsAnsweredEachAlone(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	spec := envelope.ToolSpec{Name: "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}}}`)}
	mustRegister(t, w, spec, HandlerFunc(func(_ context.Context, req *Request, _ Emitter) (any, error) {
		return req.Args, nil
	}))
	data := batchOf(
		"tm2 id=A caller=C\n{\"args\":{\"i\":1}}",
		"tm2 id=B caller=C\n{\"args\":{\"i\":\"two\"}}", // fails the schema
		"tm2 id=C caller=C timeout=soon\n{\"args\":{}}", // malformed metadata
		"tm2 id=D\n{\"args\":{\"i\":4}}",
		"tm2 id=E caller=C\nnot json",
	)
	want := map[string]string{"A": `{"i":1}`, "B": "invalid_input", "C": "invalid_input", "D": `{"i":4}`, "E": "invalid_input"}
	got, _ := sendBatch(t, raw, "echo", data, len(want))
	for id, ev := range got {
		res := string(ev.Data)
		if p := ev.Problem(); p != nil {
			res = string(p.Code)
		}
		if res != want[id] {
			t.Fatalf("call %s: got %s, want %q", id, res, want[id])
		}
		delete(want, id)
	}
	if len(want) != 0 {
		t.Fatalf("unanswered: %v", want)
	}
}

// A batch the worker cannot split into calls it could name is refused
// whole: one error event, without id=, and no handler runs.
func TestMalformedBatchRefusedWhole(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	ran := make(chan struct{}, 8)
	mustRegister(t, w, envelope.ToolSpec{Name: "echo"}, HandlerFunc(func(context.Context, *Request, Emitter) (any, error) {
		ran <- struct{}{}
		return "ok", nil
	}))
	for _, data := range []string{
		"tm2 batch len=5\n{}",                             // lengths lie
		"tm2 batch len=11\n{\"args\":{}}",                 // a call without an id
		"tm2 batch\n",                                     // no len
		string(batchOf("tm2 id=A\n{}", "tm2 id=a.b\n{}")), // an id that is no token
	} {
		_, msgs := sendBatch(t, raw, "echo", []byte(data), 1)
		m := msgs[0]
		f, err := wire.ParseFrame(m.Data)
		if err != nil || f.Kind != wire.FrameBare {
			t.Fatalf("%q: reply %q", data, m.Data)
		}
		ev, err := envelope.ParseEvent(f.Payload)
		if err != nil || ev.Problem() == nil || ev.Problem().Code != envelope.CodeInvalidInput {
			t.Fatalf("%q: reply %q", data, m.Data)
		}
	}
	select {
	case <-ran:
		t.Fatal("a handler ran for a refused batch")
	default:
	}
}

// Terminals of a batch's calls that become ready while another of its
// replies is being published travel together in one ends frame, sent by
// the publishing goroutine before it returns; a lone one goes at once.
func TestBatchRepliesCoalesce(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	inbox := nats.NewInbox()
	sub, err := raw.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	b := &batch{w: w, reply: inbox}
	b.left.Store(4)
	b.busy = true // as if a reply of the batch were being published
	for _, id := range []string{"A", "B", "C"} {
		b.terminal(&call{key: callKey{id: id}}, []byte(`{"type":"result","data":"`+id+`"}`))
	}
	b.busy = false
	b.terminal(&call{key: callKey{id: "D"}}, []byte(`{"type":"result","data":"D"}`))
	want := []string{
		"tm2 ev seq=1 len=28 id=D\n" + `{"type":"result","data":"D"}`,
		"tm2 ends ids=A,B,C len=28,28,28\n" + `{"type":"result","data":"A"}{"type":"result","data":"B"}{"type":"result","data":"C"}`,
	}
	for _, w := range want {
		m, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Data) != w {
			t.Fatalf("got %q, want %q", m.Data, w)
		}
	}
	if n := b.left.Load(); n != 0 {
		t.Fatalf("%d calls of the batch still counted", n)
	}
}

// A batch runs on the reader that took it, one call after another; a
// call that blocks holds up the rest only briefly: the calls not yet
// started are handed goroutines of their own, so a fast call behind a
// blocking one is answered while the blocking one still runs.
func TestBatchCallBehindABlockingOneIsNotHeldUp(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	release := make(chan struct{})
	mustRegister(t, w, envelope.ToolSpec{Name: "t"}, HandlerFunc(func(ctx context.Context, req *Request, _ Emitter) (any, error) {
		if string(req.Args) == `{"block":true}` {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return req.Args, nil
	}))
	defer close(release)
	data := batchOf("tm2 id=slow\n"+`{"args":{"block":true}}`, "tm2 id=fast\n"+`{"args":{"block":false}}`)
	got, _ := sendBatch(t, raw, "t", data, 1)
	if ev, ok := got["fast"]; !ok || ev.Type != envelope.EventResult {
		t.Fatalf("replies %v, want the fast call's result while the slow one blocks", got)
	}
	if _, ok := got["slow"]; ok {
		t.Fatal("the blocking call answered before it was released")
	}
}

// A tool's calls count as slow (its batches are handed off whole, not
// run inline one after another) once their moving average is past
// handoffAfter, and as fast again once it falls back below it.
func TestSlowCallsFollowTheToolsRunTimes(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs []time.Duration
		slow bool
	}{
		{"no call yet", nil, false},
		{"fast calls", []time.Duration{20 * time.Microsecond, 30 * time.Microsecond}, false},
		{"a fast handler preempted once", []time.Duration{20 * time.Microsecond, 5 * time.Millisecond, 20 * time.Microsecond}, false},
		{"a few slow calls", slices.Repeat([]time.Duration{5 * time.Millisecond}, 4), false},
		{"slow calls", slices.Repeat([]time.Duration{5 * time.Millisecond}, 12), true},
		{"slow, then many fast", append(slices.Repeat([]time.Duration{5 * time.Millisecond}, 20), slices.Repeat([]time.Duration{10 * time.Microsecond}, 60)...), false},
	} {
		tl := &tool{}
		for _, d := range tc.runs {
			tl.observeRun(d)
		}
		if got := tl.slowCalls(); got != tc.slow {
			t.Errorf("%s: slowCalls = %v, want %v (average %s)", tc.name, got, tc.slow, time.Duration(tl.typical.Load()))
		}
	}
}
