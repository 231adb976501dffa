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

// FuzzCallMessage sends a worker call messages with arbitrary metadata and
// bodies: whatever arrives, the worker answers with a well-formed event
// (a result or a Problem) and never panics or stays silent.
func FuzzCallMessage(f *testing.F) {
	w, raw := newTestWorker(f, Config{MaxArgsBytes: 4096})
	spec := envelope.ToolSpec{Name: "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)}
	if err := w.Register(spec, HandlerFunc(func(_ context.Context, req *Request, _ Emitter) (any, error) {
		return req.Args, nil
	})); err != nil {
		f.Fatal(err)
	}

	f.Add("unary", "", "", "", []byte(`{"args":{"message":"hi"}}`))
	f.Add("stream", "4", "1000", "1000", []byte(`{"args":{},"dry_run":true,"page":{"all":true}}`))
	f.Add("", "", "0", "", []byte(`{"args":{}}`))
	f.Add("unary", "-1", "-1", "-1", []byte(`{"args":[]}`))
	f.Add("stream", "99999999999999999999", "9999999999999", "x", []byte(`{"args":{"message":5}}`))
	f.Add("UNARY", "2", "", "0", []byte(`{"args":{},"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string"}}}}`))
	f.Add("unary", "", "", "", []byte(`not json`))
	f.Add("unary", "", "", "", []byte{})
	f.Fuzz(func(t *testing.T, mode, window, timeout, interval string, body []byte) {
		m := nats.NewMsg(mesh.Subjects{}.Call("echo"))
		line := "tm2"
		for _, kv := range [][2]string{{mesh.MetaMode, mode}, {mesh.MetaWindow, window},
			{mesh.MetaTimeout, timeout}, {mesh.MetaInterval, interval}} {
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
		f, err := mesh.ParseFrame(reply.Data)
		if err != nil {
			t.Fatalf("malformed answer %q: %v", reply.Data, err)
		}
		first := f.Payload
		if f.Kind == mesh.FrameEvents {
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
