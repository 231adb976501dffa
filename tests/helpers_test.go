package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"testing"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/worker"
)

func register(t testing.TB, w *worker.Worker, spec envelope.ToolSpec, h worker.HandlerFunc) {
	t.Helper()
	if err := w.Register(spec, h); err != nil {
		t.Fatal(err)
	}
}

// echo returns its args.
func echo(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	return req.Args, nil
}

// count streams n deltas {"i":k} with progress, then returns {"count":n}.
func count(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
	var a struct {
		N int `json:"n"`
	}
	if err := req.Bind(&a); err != nil {
		return nil, envelope.NewProblem(envelope.CodeInvalidInput, err.Error())
	}
	for i := 1; i <= a.N; i++ {
		if err := emit.Delta(map[string]int{"i": i}); err != nil {
			return nil, err
		}
		if i%100 == 0 {
			if err := emit.Progress(float64(i)*100/float64(a.N), "counting"); err != nil {
				return nil, err
			}
		}
	}
	return map[string]int{"count": a.N}, nil
}

var countSpec = envelope.ToolSpec{Name: "count", Streaming: true,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}`)}

// problemOf extracts the Problem from a call error, failing the test if there is none.
func problemOf(t testing.TB, err error) *envelope.Problem {
	t.Helper()
	var p *envelope.Problem
	if !errors.As(err, &p) {
		t.Fatalf("want a *envelope.Problem, got %T %v", err, err)
	}
	return p
}

// wantCode asserts that err is a Problem with code.
func wantCode(t testing.TB, err error, code envelope.Code) *envelope.Problem {
	t.Helper()
	if err == nil {
		t.Fatalf("want %s, got success", code)
	}
	p := problemOf(t, err)
	if p.Code != code {
		t.Fatalf("want %s, got %s: %s", code, p.Code, p.Detail)
	}
	return p
}

// waitFor waits for observable state (see testutil.WaitFor).
func waitFor(t testing.TB, what string, cond func() bool) { testutil.WaitFor(t, what, cond) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return b
}

// iterPull is iter.Pull2 with the three results in one call.
func iterPull[K, V any](seq iter.Seq2[K, V]) (func() (K, V, bool), func()) {
	return iter.Pull2(seq)
}

// replyEvents decodes the events of one reply message, as a client
// written from docs/protocol.md would: a bare event, or an events frame;
// heartbeats (and the empty release message) hold none.
func replyEvents(t *testing.T, m *nats.Msg) []envelope.ToolEvent {
	t.Helper()
	if len(m.Data) == 0 {
		return nil
	}
	f, err := wire.ParseFrame(m.Data)
	if err != nil {
		t.Fatalf("reply %q: %v", m.Data, err)
	}
	var raw [][]byte
	switch f.Kind {
	case wire.FrameBare:
		raw = [][]byte{f.Payload}
	case wire.FrameEvents:
		if raw, err = f.Events(); err != nil {
			t.Fatalf("reply %q: %v", m.Data, err)
		}
	}
	out := make([]envelope.ToolEvent, 0, len(raw))
	for _, r := range raw {
		ev, err := envelope.ParseEvent(r)
		if err != nil {
			t.Fatalf("event %q: %v", r, err)
		}
		out = append(out, ev)
	}
	return out
}
