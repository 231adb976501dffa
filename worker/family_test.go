package worker

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/internal/workercall"
)

// familyHandler serves every name under the one it is registered as,
// answering the name its caller called.
type familyHandler struct{}

func (familyHandler) Handle(_ context.Context, req *Request, _ Emitter) (any, error) {
	return map[string]string{"called": req.Tool}, nil
}

func (familyHandler) ServesFamily(workercall.Key) {}

// A handler serving a family of names takes the calls of every name
// under its own (alone and in a batch) and sees the name each called; the
// bare name is not served, and a refused call tells OnRefused the name
// it called too.
func TestFamilyHandlerServesTheNamesUnderItsOwn(t *testing.T) {
	refused := make(chan string, 1)
	w, raw := newTestWorker(t, Config{OnRefused: func(_ context.Context, req *Request, _ *envelope.Problem) { refused <- req.Tool }})
	mustRegister(t, w, envelope.ToolSpec{Name: "fam", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)}, familyHandler{})
	for _, name := range []string{"fam.demo.park", "fam.x"} {
		ev := rawCall(t, raw, name, []byte(`{"args":{}}`))
		if ev.Type != envelope.EventResult || string(ev.Data) != `{"called":"`+name+`"}` {
			t.Fatalf("call of %s: %+v, want a result naming %s", name, ev, name)
		}
	}
	got, _ := sendBatch(t, raw, "fam.batched", batchOf("tm2 id=B1\n{\"args\":{}}"), 1)
	if ev := got["B1"]; ev.Type != envelope.EventResult || string(ev.Data) != `{"called":"fam.batched"}` {
		t.Fatalf("batched call: %+v, want a result naming fam.batched", ev)
	}
	m := nats.NewMsg(wire.Subjects{}.Call("fam"))
	m.Data = []byte("tm2 mode=unary\n{\"args\":{}}")
	if _, err := raw.RequestMsg(m, time.Minute); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("a call of the bare name: %v, want no responders (a family serves only the names under it)", err)
	}
	if ev := rawCall(t, raw, "fam.bad", []byte(`{"args":{"extra":1}}`)); ev.Type != envelope.EventError {
		t.Fatalf("a call against the schema: %+v, want an error", ev)
	}
	if got := <-refused; got != "fam.bad" {
		t.Fatalf("OnRefused heard of %q, want the name called, fam.bad", got)
	}
}
