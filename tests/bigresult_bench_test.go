package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// BenchmarkBigResult is a 10 and a 50 MiB result through the mesh beside
// raw NATS sending the same bytes in max_payload chunks to an inbox,
// which the requester reassembles: what a large result costs above the
// wire.
func BenchmarkBigResult(b *testing.B) {
	for _, mib := range []int{10, 50} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) { benchBig(b, mib) })
	}
}

func benchBig(b *testing.B, mib int) {
	blob, _ := json.Marshal(tenMiB())
	if mib > 10 {
		blob, _ = json.Marshal(map[string]string{"blob": strings.Repeat("0123456789 ", mib<<20/11)})
	}
	srv := meshtest.StartServer(b, embedded.Config{})
	serve := meshtest.Connect(b, srv)
	piece := int(serve.MaxPayload())
	if _, err := serve.Subscribe("raw.big", func(m *nats.Msg) {
		for off := 0; off < len(blob); off += piece {
			_ = serve.Publish(m.Reply, blob[off:min(off+piece, len(blob))])
		}
	}); err != nil {
		b.Fatal(err)
	}
	_ = serve.Flush()
	w := meshtest.NewWorker(b, meshtest.Connect(b, srv), worker.Config{})
	register(b, w, envelope.ToolSpec{Name: "big"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return json.RawMessage(blob), nil
	})
	c := meshtest.NewCaller(b, meshtest.Connect(b, srv), caller.Config{})
	raw := meshtest.Connect(b, srv)
	r := newResults()
	one(b, r, "raw", func() error { return rawBig(raw, len(blob)) })
	one(b, r, "toolmesh", func() error {
		resp, err := c.Call(context.Background(), "big", nil)
		if err == nil && len(resp.Data) != len(blob) {
			err = fmt.Errorf("%d bytes, want %d", len(resp.Data), len(blob))
		}
		return err
	})
	r.ratio(b, fmt.Sprintf("%d MiB result", mib))
}

// rawBig requests raw.big and reassembles its n bytes.
func rawBig(nc *nats.Conn, n int) error {
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1)
	if err := nc.PublishRequest("raw.big", inbox, nil); err != nil {
		return err
	}
	buf := make([]byte, 0, n)
	for len(buf) < n {
		m, err := sub.NextMsgWithContext(context.Background())
		if err != nil {
			return err
		}
		buf = append(buf, m.Data...)
	}
	return nil
}
