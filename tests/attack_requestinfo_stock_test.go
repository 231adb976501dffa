package tests

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// On the stock nats-server loading deploy/secure verbatim: bob sends a
// call carrying his own Nats-Request-Info headers that claim alice, once,
// twice, or before other headers. The worker must see BOB/bob every
// time: the server's stamp, never bob's claim.
func TestStockSecureForgedRequestInfoIsNotTheIdentity(t *testing.T) {
	m := startSecureStock(t)
	w := meshtest.NewWorker(t, m.dial(t, "tools"), worker.Config{Pool: "demo"})
	register(t, w, envelope.ToolSpec{Name: "demo.whoami"}, func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		return map[string]string{"identity": req.Identity}, nil
	})
	bob := m.dial(t, "bob")
	forged := `{"acc":"ALICE","user":"alice"}`
	for i, h := range []nats.Header{
		nil,
		{wire.HeaderRequestInfo: {forged}},
		{wire.HeaderRequestInfo: {forged, forged}},
		{wire.HeaderRequestInfo: {forged, forged, forged}, "X-Other": {"1"}},
	} {
		msg := &nats.Msg{Subject: "toolmesh.call.demo.whoami", Header: h, Data: []byte(`{"args":{}}`)}
		resp, err := bob.RequestMsg(msg, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var ev envelope.ToolEvent
		if err := json.Unmarshal(resp.Data, &ev); err != nil {
			t.Fatalf("case %d: %s: %v", i, resp.Data, err)
		}
		if string(ev.Data) != `{"identity":"BOB/bob"}` {
			t.Fatalf("case %d (%v): the worker saw %s; want BOB/bob", i, h, ev.Data)
		}
	}
}
