package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/tasks"
)

// bareQueueWhat says what the durable rows' bare queue does.
const bareQueueWhat = "a bare JetStream work queue (publish, pull consumer, ack, the result published back), same echo"

// benchDurable is the durable rows' sides on one JetStream server: a
// task service over the bench's private prefix (the worker's echo runs
// each task), a hand-written work queue with the same guarantees, and a
// bare work queue, doing the same echo.
type benchDurable struct {
	// c submits the tasks: the bench's caller, or the cluster's own.
	c       *caller.Caller
	svc     *tasks.Service
	eq      *equivalentQueue
	js      jetstream.JetStream
	streams []string // made for the row, deleted on close
	wq      jetstream.ConsumeContext
	wqSub   string // the work queue's subject
	pub     *nats.Conn
	inbox   string // results come back on inbox.<n>
	sub     *nats.Subscription
	mu      sync.Mutex
	waiting map[string]chan struct{}
	next    uint64
	// cluster is the R3 row's own servers, worker and caller (nil on the
	// bench's server).
	cluster *durableCluster
}

// startDurable readies the durable row; a server without JetStream skips
// it (nil, with the reason).
func startDurable(ctx context.Context, svcNC, wqNC, pubNC *nats.Conn, prefix string, maxInFlight, replicas int, env *Env) (*benchDurable, error) {
	js, err := jetstream.New(svcNC)
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(actx); err != nil {
		return nil, fmt.Errorf("the server has no JetStream for this account: %w", err)
	}
	d := &benchDurable{js: js, pub: pubNC, waiting: map[string]chan struct{}{}}
	flat := strings.NewReplacer(".", "_", "*", "_", ">", "_").Replace(prefix) // as tasks names its streams
	d.streams = []string{"TOOLMESH_TASKS_" + flat, "OBJ_TOOLMESH_TASKOBJ_" + flat, "BENCH_WQ_" + flat}
	// One identity submits every task: its running bounds are the row's
	// calls in flight, as the bench's worker's per-identity share is, so
	// that the row measures the durable calls, not the operator's bounds.
	if d.svc, err = tasks.New(ctx, svcNC, tasks.Config{Prefix: prefix, Retention: 10 * time.Minute, Logger: env.Log,
		MaxRunningPerOwner: maxInFlight, MaxRunningPerOwnerTool: maxInFlight, Replicas: replicas}); err != nil {
		return nil, err
	}
	if err := d.serveQueue(ctx, wqNC, prefix, d.streams[2], replicas); err != nil {
		d.close()
		return nil, err
	}
	if d.eq, err = serveEquivalentQueue(ctx, wqNC, prefix, flat, replicas); err != nil {
		d.close()
		return nil, err
	}
	d.inbox = nats.NewInbox()
	if d.sub, err = pubNC.Subscribe(d.inbox+".*", d.onResult); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// serveQueue makes the hand-written work queue: a work-queue stream, a
// pull consumer that acks each message and publishes its data to the
// Reply-To header's subject.
func (d *benchDurable) serveQueue(ctx context.Context, nc *nats.Conn, prefix, name string, replicas int) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	d.wqSub = prefix + ".wq.echo"
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{prefix + ".wq.>"},
		Retention: jetstream.WorkQueuePolicy, Replicas: replicas})
	if err != nil {
		return err
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "w",
		AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100000, Replicas: replicas})
	if err != nil {
		return err
	}
	d.wq, err = cons.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		_ = nc.Publish(m.Headers().Get("Reply-To"), m.Data())
	})
	return err
}

// onResult wakes the raw call a result belongs to.
func (d *benchDurable) onResult(m *nats.Msg) {
	d.mu.Lock()
	ch := d.waiting[m.Subject]
	delete(d.waiting, m.Subject)
	d.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// await makes a reply subject for one call and the channel its result
// closes.
func (d *benchDurable) await() (string, chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	reply := fmt.Sprintf("%s.%d", d.inbox, d.next)
	ch := make(chan struct{})
	d.waiting[reply] = ch
	return reply, ch
}

// seqOf is the call number a reply subject ends with.
func (d *benchDurable) seqOf(reply string) string { return reply[strings.LastIndexByte(reply, '.')+1:] }

// forget drops the wait of a call that failed.
func (d *benchDurable) forget(reply string) {
	d.mu.Lock()
	delete(d.waiting, reply)
	d.mu.Unlock()
}

// rawWorkQueue is one echo through the bare work queue.
func (b *bencher) rawWorkQueue(ctx context.Context) error { return b.durable.bare(ctx, b.args) }

// bare is one echo of args through the bare work queue.
func (d *benchDurable) bare(ctx context.Context, args []byte) error {
	return d.roundTrip(ctx, func(reply string) *nats.Msg {
		return &nats.Msg{Subject: d.wqSub, Data: args, Header: nats.Header{"Reply-To": []string{reply}}}
	})
}

// roundTrip publishes the message msg makes for a reply subject to the
// work queue and waits for its one reply (or ctx's end).
func (d *benchDurable) roundTrip(ctx context.Context, msg func(reply string) *nats.Msg) error {
	reply, ch := d.await()
	if _, err := d.js.PublishMsg(ctx, msg(reply)); err != nil {
		d.forget(reply)
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		d.forget(reply)
		return ctx.Err()
	}
}

// durableUnary is one echo as a durable unary task, submitted and waited
// for in one round trip.
func (b *bencher) durableUnary(ctx context.Context) error { return b.durable.unary(ctx, b.args) }

// unary is one echo of args as a durable unary task.
func (d *benchDurable) unary(ctx context.Context, args []byte) error {
	rec, err := tasks.NewClient(d.c).Run(ctx, "echo", json.RawMessage(args), tasks.Unary())
	if err != nil {
		return err
	}
	if rec.State != tasks.Succeeded {
		return envelope.Problemf(envelope.CodeInternal, "task %s ended %s (%s)", rec.TaskID, rec.State, rec.Code)
	}
	return nil
}

// close stops both sides and deletes the row's streams.
func (d *benchDurable) close() {
	if d.sub != nil {
		_ = d.sub.Unsubscribe()
	}
	if d.wq != nil {
		d.wq.Stop()
	}
	if d.eq != nil {
		ectx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d.eq.close(ectx)
		cancel()
	}
	if d.svc != nil {
		d.svc.Close(context.Background())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range d.streams {
		if err := d.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			break
		}
	}
	if d.cluster != nil {
		d.cluster.close()
	}
}

// startDurableRow readies the durable row on connections of its own, or
// says on stderr why the row is skipped.
func (b *bencher) startDurableRow(ctx context.Context, dial func(string) (*nats.Conn, error), prefix string, maxInFlight int, env *Env) {
	var ncs []*nats.Conn
	for _, name := range []string{"bench tasks", "bench work queue", "bench work queue caller"} {
		nc, err := dial(name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "the durable row is skipped: %v\n", err)
			return
		}
		b.conns = append(b.conns, nc)
		ncs = append(ncs, nc)
	}
	d, err := startDurable(ctx, ncs[0], ncs[1], ncs[2], prefix, maxInFlight, 1, env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "the durable row is skipped: %v\n", err)
		return
	}
	d.c = b.c
	b.durable = d
}
