package bench

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// peersEquivalentQueue is the durable rows' raw side: the guarantees
	// of a durable unary call, written by hand.
	peersEquivalentQueue = "raw: a hand-written JetStream work queue with the same guarantees (queue, KV state, compare-and-set dispatch mark, compare-and-set terminal), same echo"
	// peerBareQueue is the durable rows' other peer: a queue with none of
	// them beyond the queue's own.
	peerBareQueue = "bare-queue"
)

// equivalentQueue is a work queue that keeps what a durable unary call
// keeps: the call queued in a work-queue stream, its state in a KV
// bucket, a dispatch mark created only if the task has no state yet (so
// that a run and a cancel cannot both win, and a redelivered call is
// never run twice), and a terminal written only over that mark (exactly
// one terminal); the result goes back to the submitter.
type equivalentQueue struct {
	js      jetstream.JetStream
	nc      *nats.Conn
	kv      jetstream.KeyValue
	cc      jetstream.ConsumeContext
	subject string
	stream  string
}

// serveEquivalentQueue makes the equivalent-guarantee queue's stream,
// bucket and runners on nc.
func serveEquivalentQueue(ctx context.Context, nc *nats.Conn, prefix, flat string, replicas int) (*equivalentQueue, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	q := &equivalentQueue{js: js, nc: nc, subject: prefix + ".eq.echo", stream: "BENCH_EQ_" + flat}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: q.stream, Subjects: []string{prefix + ".eq.>"},
		Retention: jetstream.WorkQueuePolicy, Replicas: replicas})
	if err != nil {
		return nil, err
	}
	if q.kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "BENCH_EQS_" + flat, TTL: 10 * time.Minute, Replicas: replicas}); err != nil {
		return nil, err
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "w",
		AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100000, Replicas: replicas})
	if err != nil {
		return nil, err
	}
	// Each call runs on its own goroutine, as the task service's do: the
	// two writes of one need not wait for another's.
	q.cc, err = cons.Consume(func(m jetstream.Msg) { go q.run(ctx, m) }, jetstream.PullMaxMessages(256))
	return q, err
}

// run takes one queued call: the dispatch mark, the echo, the terminal,
// the ack and the result.
func (q *equivalentQueue) run(ctx context.Context, m jetstream.Msg) {
	id := m.Headers().Get("Task-Id")
	rev, err := q.kv.Create(ctx, id, []byte(`{"state":"running"}`))
	if err != nil {
		// Marked before: another runner took it, or it was cancelled.
		_ = m.Term()
		return
	}
	result := append(append([]byte(`{"state":"succeeded","result":`), m.Data()...), '}')
	if _, err := q.kv.Update(ctx, id, result, rev); err != nil {
		_ = m.Term()
		return
	}
	_ = m.Ack()
	_ = q.nc.Publish(m.Headers().Get("Reply-To"), result)
}

// close stops the runners and deletes the stream and the bucket.
func (q *equivalentQueue) close(ctx context.Context) {
	if q.cc != nil {
		q.cc.Stop()
	}
	if q.kv != nil {
		_ = q.js.DeleteKeyValue(ctx, q.kv.Bucket())
	}
	if err := q.js.DeleteStream(ctx, q.stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return
	}
}

// equivalentQueueCall is one echo through the equivalent-guarantee queue.
func (b *bencher) equivalentQueueCall(ctx context.Context) error {
	return b.durable.equivalent(ctx, b.args)
}

// equivalent is one echo of args through the equivalent-guarantee queue.
func (d *benchDurable) equivalent(ctx context.Context, args []byte) error {
	return d.roundTrip(ctx, func(reply string) *nats.Msg {
		return &nats.Msg{Subject: d.eq.subject, Data: args,
			Header: nats.Header{"Reply-To": []string{reply}, "Task-Id": []string{"t" + d.seqOf(reply)}}}
	})
}
