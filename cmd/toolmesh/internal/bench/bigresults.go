package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// The large-result rows: a tool returning a result of n MiB beside raw
// NATS sending the same bytes in max_payload chunks (1 MiB on a stock
// server) to an inbox whose requester reassembles them: what the mesh
// costs above the wire for the file contents, images and query results
// agents pass around.
const peersBigResult = "raw: the same bytes in max_payload chunks to an inbox, reassembled"

// bigBlob is a JSON object of about mib MiB: one string member of
// numbers and spaces, like a file's contents.
func bigBlob(mib int) json.RawMessage {
	var b strings.Builder
	b.Grow(mib<<20 + 32)
	b.WriteString(`{"blob":"`)
	for i := 0; b.Len() < mib<<20; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(' ')
	}
	b.WriteString(`"}`)
	return json.RawMessage(b.String())
}

// bigTool names the tool and raw subject of the mib MiB result.
func bigTool(mib int) string { return "big" + strconv.Itoa(mib) }

// serveBig hosts every size of --big-results on both sides.
func (b *bencher) serveBig(serve *nats.Conn, w *worker.Worker, sizes []int) error {
	b.blobs = map[int]json.RawMessage{}
	for _, mib := range sizes {
		blob := bigBlob(mib)
		b.blobs[mib] = blob
		piece := int(serve.MaxPayload())
		if _, err := serve.Subscribe(b.rawSubject+"."+bigTool(mib), func(m *nats.Msg) {
			for off := 0; off < len(blob); off += piece {
				_ = serve.Publish(m.Reply, blob[off:min(off+piece, len(blob))])
			}
		}); err != nil {
			return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
		}
		if err := w.Register(envelope.ToolSpec{Name: bigTool(mib)}, worker.HandlerFunc(
			func(context.Context, *worker.Request, worker.Emitter) (any, error) { return blob, nil })); err != nil {
			return envelope.AsProblem(err, envelope.CodeInternal)
		}
	}
	return nil
}

// bigScenario is the row of one size.
func bigScenario(mib int) benchScenario {
	return benchScenario{name: fmt.Sprintf("result of %d MiB", mib), inFlight: 1, peers: peersBigResult,
		raw:      func(b *bencher, ctx context.Context) error { return b.rawBig(ctx, mib) },
		toolmesh: func(b *bencher, ctx context.Context) error { return b.meshBig(ctx, mib) },
		goals:    []benchGoal{{metric: metricThroughput, bound: 0.5}}, minCalls: 3}
}

// rawBig requests the raw side's blob and reassembles it into a buffer
// of its size.
func (b *bencher) rawBig(ctx context.Context, mib int) error {
	n := len(b.blobs[mib])
	inbox := b.raw.NewInbox()
	sub, err := b.raw.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return err
	}
	if err := b.raw.PublishRequest(b.rawSubject+"."+bigTool(mib), inbox, nil); err != nil {
		return err
	}
	buf := make([]byte, 0, n)
	for len(buf) < n {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return err
		}
		buf = append(buf, m.Data...)
	}
	return nil
}

// meshBig calls the tool and checks the result arrived whole.
func (b *bencher) meshBig(ctx context.Context, mib int) error {
	resp, err := b.c.Call(ctx, bigTool(mib), json.RawMessage(`{}`))
	if err != nil {
		return err
	}
	if want := len(b.blobs[mib]); len(resp.Data) != want {
		return fmt.Errorf("a %d MiB result arrived as %d bytes of %d", mib, len(resp.Data), want)
	}
	return nil
}
