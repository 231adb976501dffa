package tests

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// BenchmarkDurableUnary measures durable unary calls (submit and wait in
// one round trip, the echo run by a worker) per second; compare with
// BenchmarkHandWrittenWorkQueue in the same run.
func BenchmarkDurableUnary(b *testing.B) {
	m := startDurableB(b)
	ctx := context.Background()
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec, err := tasks.NewClient(m.c).Run(ctx, "echo", map[string]string{"message": "hi"}, tasks.Unary())
			if err != nil || rec.State != tasks.Succeeded {
				b.Errorf("%+v %v", rec, err)
				return
			}
		}
	})
	b.StopTimer()
	// What each task cost the store: its writes (entries) per task.
	_, st := taskLog(ctx, b, meshtest.Connect(b, m.srv))
	info, err := st.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(info.State.Msgs)/float64(b.N), "writes/task")
}

// startDurableB is startDurable for a benchmark.
func startDurableB(b *testing.B) *durableMesh {
	b.Helper()
	// One identity submits every task: its running bounds are the calls
	// in flight, so that the benchmark measures durable calls, not the
	// operator's per-owner bounds.
	m := startDurable(b, tasks.Config{MaxRunningPerOwner: 256, MaxRunningPerOwnerTool: 256})
	w := meshtest.NewWorker(b, meshtest.Connect(b, m.srv), worker.Config{Limits: worker.Limits{MaxConcurrent: 256, MaxPerIdentity: 256}})
	register(b, w, envelope.ToolSpec{Name: "echo"}, echo)
	return m
}

// BenchmarkHandWrittenWorkQueue is the same echo through a hand-written
// JetStream work queue: publish, a pull consumer that acks and publishes
// the result back on the caller's inbox.
func BenchmarkHandWrittenWorkQueue(b *testing.B) {
	srv, wnc, _, cons := benchWorkQueue(b, "WQ", "wq.>")
	cc, err := cons.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		_ = wnc.Publish(m.Headers().Get("Reply-To"), m.Data())
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	benchQueueRoundTrips(b, meshtest.Connect(b, srv), func(inbox string) *nats.Msg {
		return &nats.Msg{Subject: "wq.echo", Data: []byte(`{"message":"hi"}`), Header: nats.Header{"Reply-To": []string{inbox}}}
	})
}

// BenchmarkEquivalentQueue is the same echo through a hand-written work
// queue with a durable unary call's guarantees: the call queued, its
// state in a KV bucket, a dispatch mark created only where no state is
// (compare-and-set), a terminal written only over the mark
// (compare-and-set), then the ack and the result published back.
func BenchmarkEquivalentQueue(b *testing.B) {
	srv, wnc, wjs, cons := benchWorkQueue(b, "EQ", "eq.>")
	ctx := context.Background()
	kv, err := wjs.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "EQS"})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		go func() {
			id := m.Headers().Get("Task-Id")
			rev, err := kv.Create(ctx, id, []byte(`{"state":"running"}`))
			if err != nil {
				_ = m.Term()
				return
			}
			if _, err := kv.Update(ctx, id, m.Data(), rev); err != nil {
				_ = m.Term()
				return
			}
			_ = m.Ack()
			_ = wnc.Publish(m.Headers().Get("Reply-To"), m.Data())
		}()
	}, jetstream.PullMaxMessages(256))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	var next atomic.Int64
	benchQueueRoundTrips(b, meshtest.Connect(b, srv), func(inbox string) *nats.Msg {
		id := strconv.FormatInt(next.Add(1), 10)
		return &nats.Msg{Subject: "eq.echo", Data: []byte(`{"message":"hi"}`),
			Header: nats.Header{"Reply-To": []string{inbox}, "Task-Id": []string{"t" + id}}}
	})
}

// benchQueueRoundTrips measures round trips through a hand-written queue
// from 64 goroutines per core: each publishes the message msg makes for
// its own inbox to JetStream on nc and waits for the one reply.
func benchQueueRoundTrips(b *testing.B, nc *nats.Conn, msg func(inbox string) *nats.Msg) {
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		inbox := nats.NewInbox()
		sub, _ := nc.SubscribeSync(inbox)
		defer func() { _ = sub.Unsubscribe() }()
		for pb.Next() {
			if _, err := js.PublishMsg(ctx, msg(inbox)); err != nil {
				b.Error(err)
				return
			}
			if _, err := sub.NextMsgWithContext(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchWorkQueue starts a server with a JetStream work-queue stream name
// on subject and its one pull consumer, the start of both hand-written
// queues; it returns the server, the queue side's connection and its
// JetStream context, and the consumer.
func benchWorkQueue(b *testing.B, name, subject string) (*embedded.Server, *nats.Conn, jetstream.JetStream, jetstream.Consumer) {
	b.Helper()
	srv := meshtest.StartServer(b, embedded.Config{StoreDir: b.TempDir()})
	ctx := context.Background()
	wnc := meshtest.Connect(b, srv)
	wjs, _ := jetstream.New(wnc)
	st, err := wjs.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		b.Fatal(err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100000})
	if err != nil {
		b.Fatal(err)
	}
	return srv, wnc, wjs, cons
}
