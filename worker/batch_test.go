package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

// batchOf builds a batch message of whole call bodies.
func batchOf(calls ...string) []byte {
	sizes := make([]int, len(calls))
	var body []byte
	for i, c := range calls {
		sizes[i] = len(c)
		body = append(body, c...)
	}
	return append(mesh.AppendBatchHead(nil, sizes), body...)
}

// replies collects n messages on a fresh inbox after sending data to tool.
func sendBatch(t *testing.T, raw *nats.Conn, tool string, data []byte, n int) []*nats.Msg {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := raw.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := raw.PublishRequest(mesh.Subjects{}.Call(tool), inbox, data); err != nil {
		t.Fatal(err)
	}
	var out []*nats.Msg
	for range n {
		m, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("after %d of %d replies: %v", len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// Every call of a batch is run and answered on its own, its reply naming
// it with id=: a call with bad args or bad metadata gets its own error
// and spoils nothing for the others.
func TestBatchCallsAnsweredEachAlone(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	spec := envelope.ToolSpec{Name: "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}}}`)}
	if err := w.Register(spec, HandlerFunc(func(_ context.Context, req *Request, _ Emitter) (any, error) {
		return req.Args, nil
	})); err != nil {
		t.Fatal(err)
	}
	data := batchOf(
		"tm2 id=A caller=C\n{\"args\":{\"i\":1}}",
		"tm2 id=B caller=C\n{\"args\":{\"i\":\"two\"}}", // fails the schema
		"tm2 id=C caller=C timeout=soon\n{\"args\":{}}", // malformed metadata
		"tm2 id=D\n{\"args\":{\"i\":4}}",
		"tm2 id=E caller=C\nnot json",
	)
	want := map[string]string{"A": `{"i":1}`, "B": "invalid_input", "C": "invalid_input", "D": `{"i":4}`, "E": "invalid_input"}
	for _, m := range sendBatch(t, raw, "echo", data, len(want)) {
		f, err := mesh.ParseFrame(m.Data)
		if err != nil || f.Kind != mesh.FrameEvents || f.ID == "" || f.Seq != 1 {
			t.Fatalf("reply %q: %+v %v", m.Data, f, err)
		}
		evs, err := f.Events()
		if err != nil || len(evs) != 1 {
			t.Fatalf("reply %q: %v", m.Data, err)
		}
		ev, err := envelope.ParseEvent(evs[0])
		if err != nil {
			t.Fatal(err)
		}
		got := string(ev.Data)
		if p := ev.Problem(); p != nil {
			got = string(p.Code)
		}
		if got != want[f.ID] {
			t.Fatalf("call %s: got %s, want %q", f.ID, got, want[f.ID])
		}
		delete(want, f.ID)
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
	if err := w.Register(envelope.ToolSpec{Name: "echo"}, HandlerFunc(func(context.Context, *Request, Emitter) (any, error) {
		ran <- struct{}{}
		return "ok", nil
	})); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{
		"tm2 batch len=5\n{}",                             // lengths lie
		"tm2 batch len=11\n{\"args\":{}}",                 // a call without an id
		"tm2 batch\n",                                     // no len
		string(batchOf("tm2 id=A\n{}", "tm2 id=a.b\n{}")), // an id that is no token
	} {
		m := sendBatch(t, raw, "echo", []byte(data), 1)[0]
		f, err := mesh.ParseFrame(m.Data)
		if err != nil || f.Kind != mesh.FrameBare {
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
