package worker

import (
	"context"
	"fmt"
	"time"

	"encoding/json"
	"errors"
	"github.com/nats-io/nats.go"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

func newTestWorker(t *testing.T) *Worker {
	t.Helper()
	e, err := mesh.StartEmbedded(context.Background(), mesh.EmbeddedConfig{InProcessOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w, err := New(nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var noop = HandlerFunc(func(context.Context, *Request, Emitter) (any, error) { return "ok", nil })

func TestRegisterValidates(t *testing.T) {
	w := newTestWorker(t)
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
	if err := w.Register(envelope.ToolSpec{Name: "a"}, noop); err != nil {
		t.Fatal(err)
	}
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
	w := newTestWorker(t)
	if err := w.Register(envelope.ToolSpec{Name: "a"}, noop); err != nil {
		t.Fatal(err)
	}
	if err := w.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Drain(context.Background()); err != nil {
		t.Errorf("second drain: %v", err)
	}
	if err := w.Register(envelope.ToolSpec{Name: "b"}, noop); !errors.Is(err, ErrDraining) {
		t.Errorf("register after drain: %v", err)
	}
}

// The caller-liveness map forgets callers long gone.
func TestCallersArePruned(t *testing.T) {
	w := newTestWorker(t)
	old := time.Now().Add(-2 * time.Minute)
	w.callsMu.Lock()
	for i := range 1000 {
		w.callers[fmt.Sprint("gone-", i)] = old
	}
	w.callsMu.Unlock()
	w.onControl(&nats.Msg{Data: mesh.Control{Op: mesh.OpAlive, CallerID: "fresh"}.Encode()})
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	if len(w.callers) != 1 {
		t.Fatalf("%d callers remembered, want only the fresh one", len(w.callers))
	}
}
