package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// newEchoFuzzWorker starts a worker with small argument limits hosting
// tool "echo", which answers with its arguments, and returns the raw
// connection the fuzz targets send their messages on.
func newEchoFuzzWorker(f *testing.F) *nats.Conn {
	f.Helper()
	w, raw := newTestWorker(f, Config{Limits: Limits{MaxArgsBytes: 4096}})
	spec := envelope.ToolSpec{Name: "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)}
	mustRegister(f, w, spec, HandlerFunc(func(_ context.Context, req *Request, _ Emitter) (any, error) {
		return req.Args, nil
	}))
	return raw
}

// FuzzCallMessage sends a worker call messages with arbitrary metadata and
// bodies: whatever arrives, the worker answers with a well-formed event
// (a result or a Problem) and never panics or stays silent.
func FuzzCallMessage(f *testing.F) {
	raw := newEchoFuzzWorker(f)

	f.Add("unary", "", "", "", []byte(`{"args":{"message":"hi"}}`))
	f.Add("stream", "4", "1000", "1000", []byte(`{"args":{},"dry_run":true,"page":{"all":true}}`))
	f.Add("", "", "0", "", []byte(`{"args":{}}`))
	f.Add("unary", "-1", "-1", "-1", []byte(`{"args":[]}`))
	f.Add("stream", "99999999999999999999", "9999999999999", "x", []byte(`{"args":{"message":5}}`))
	f.Add("UNARY", "2", "", "0", []byte(`{"args":{},"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string"}}}}`))
	f.Add("unary", "", "", "", []byte(`not json`))
	f.Add("unary", "", "", "", []byte{})
	f.Fuzz(func(t *testing.T, mode, window, timeout, interval string, body []byte) {
		m := nats.NewMsg(wire.Subjects{}.Call("echo"))
		line := "tm2"
		for _, kv := range [][2]string{{wire.MetaMode, mode}, {wire.MetaWindow, window},
			{wire.MetaTimeout, timeout}, {wire.MetaInterval, interval}} {
			if kv[1] != "" {
				line += " " + kv[0] + "=" + kv[1] // raw: spaces and newlines in v break the line on purpose
			}
		}
		if line != "tm2" {
			body = append([]byte(line+"\n"), body...)
		}
		m.Data = body
		reply, err := raw.RequestMsg(m, 20*time.Second)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		f, err := wire.ParseFrame(reply.Data)
		if err != nil {
			t.Fatalf("malformed answer %q: %v", reply.Data, err)
		}
		first := f.Payload
		if f.Kind == wire.FrameEvents {
			events, err := f.Events()
			if err != nil {
				t.Fatalf("malformed answer %q: %v", reply.Data, err)
			}
			first = events[0]
		}
		ev, err := envelope.ParseEvent(first)
		if err != nil {
			t.Fatalf("malformed answer %q: %v", reply.Data, err)
		}
		switch ev.Type {
		case envelope.EventStart, envelope.EventResult:
		case envelope.EventError:
			if p := ev.Problem(); p == nil || p.Code == "" || p.Code == envelope.CodeInternal {
				t.Fatalf("unexplained error %+v", ev)
			}
		default:
			t.Fatalf("first answer is %s", ev.Type)
		}
	})
}

// FuzzBatchMessage sends a worker arbitrary batch messages: a batch it
// cannot split is refused whole with one error event, and every call of
// one it can split ends with exactly one terminal naming the call — a
// result or a Problem, never internal_error, never silence.
func FuzzBatchMessage(f *testing.F) {
	raw := newEchoFuzzWorker(f)
	a, b := "tm2 id=A caller=C\n{\"args\":{\"message\":\"hi\"}}", "tm2 id=B mode=stream window=4\n{\"args\":{}}"
	f.Add(string(batchOf(a, b)))
	f.Add(string(batchOf(a, a)))
	f.Add(string(batchOf("tm2 id=C timeout=0\n{\"args\":{}}", "tm2 id=D\nnot json", "tm2 id=E mode=x\n{}")))
	f.Add("tm2 batch len=3,3\ntm2tm2")
	f.Add("tm2 batch len=12\ntm2 id=A\n{}}")
	f.Fuzz(func(t *testing.T, data string) {
		if !wire.IsBatch([]byte(data)) {
			data = "tm2 batch " + data
		}
		calls, _, splitErr := wire.SplitBatch([]byte(data))
		inbox := nats.NewInbox()
		sub, err := raw.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := raw.PublishRequest(wire.Subjects{}.Call("echo"), inbox, []byte(data)); err != nil {
			t.Skip(err) // larger than the server takes
		}
		for ended := 0; ended < max(len(calls), 1); {
			m, err := sub.NextMsg(20 * time.Second)
			if err != nil {
				t.Fatalf("%d of %d calls ended, then: %v", ended, len(calls), err)
			}
			for _, ev := range fuzzReplyEvents(t, m.Data, splitErr != nil) {
				if !ev.IsTerminal() {
					continue
				}
				if p := ev.Problem(); p != nil && (p.Code == "" || p.Code == envelope.CodeInternal) {
					t.Fatalf("unexplained error %+v", ev)
				}
				ended++
			}
		}
	})
}

// fuzzReplyEvents decodes one reply to a batch: a bare event only when
// the batch was refused whole, otherwise frames naming their calls.
func fuzzReplyEvents(t *testing.T, data []byte, refused bool) []envelope.ToolEvent {
	f, err := wire.ParseFrame(data)
	if err != nil {
		t.Fatalf("malformed reply %q: %v", data, err)
	}
	var raws [][]byte
	switch {
	case f.Kind == wire.FrameBare && refused:
		raws = [][]byte{f.Payload}
	case f.Kind == wire.FrameEvents && f.ID != "" && !refused:
		raws, err = f.Events()
	case f.Kind == wire.FrameEnds && !refused:
		_, raws, err = f.Ends()
	case f.Kind == wire.FrameBeat:
	default:
		t.Fatalf("reply %q to a batch (refused: %v)", data, refused)
	}
	if err != nil {
		t.Fatalf("malformed reply %q: %v", data, err)
	}
	out := make([]envelope.ToolEvent, 0, len(raws))
	for _, r := range raws {
		ev, err := envelope.ParseEvent(r)
		if err != nil {
			t.Fatalf("malformed event %q: %v", r, err)
		}
		out = append(out, ev)
	}
	return out
}
