package worker

import (
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

// batch is what the calls of one batch message share (protocol v2, §4.3):
// the reply subject, on which every reply names its call with id=, and
// the count of calls not yet ended, so that a server-made reply mapping
// is released once, after the last of them.
type batch struct {
	left atomic.Int32
}

// onBatch runs every call of a batch message as if it had come alone:
// each is admitted, answered and counted on its own, so one bad call does
// not spoil the others. A batch that cannot be split into calls it could
// name is refused whole with one error event without id=, which the
// caller applies to every call of the batch.
func (w *Worker) onBatch(t *tool, m *nats.Msg, received time.Time) {
	bodies, _, err := mesh.SplitBatch(m.Data)
	if err != nil {
		w.refuseBatch(m.Reply, w.problems.New(envelope.CodeInvalidInput, "malformed batch message: "+err.Error()))
		return
	}
	b := &batch{}
	b.left.Store(int32(len(bodies)))
	for _, body := range bodies {
		c := w.newCall(t, callMsg{reply: m.Reply, data: body, header: m.Header, batch: b}, received)
		if c == nil || !w.admit(c) {
			continue
		}
		w.dispatch(c)
	}
}

// refuseBatch answers a batch refused whole, and releases a server-made
// reply mapping at once: no call of the batch will run.
func (w *Worker) refuseBatch(reply string, p *envelope.Problem) {
	data, _ := envelope.ErrorEvent(p).AppendJSON(nil)
	if err := w.nc.Publish(reply, data); err != nil {
		w.log.Warn("publish batch refusal", "err", err)
	}
	if isServerReply(reply) {
		_ = w.nc.Publish(reply, nil)
	}
}

// frame names the call in a reply body bound for the batch's shared
// subject; see mesh.WithCallID.
func (b *batch) frame(c *call, body []byte) []byte { return mesh.WithCallID(body, c.id) }

// ended counts one call of the batch as over and reports whether it was
// the last: only then may the shared reply mapping be released.
func (b *batch) ended() bool { return b.left.Add(-1) == 0 }
