package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/embedcluster"
	"github.com/toolmesh/toolmesh/internal/embedserver"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// work simulates a handler that takes a little while, honouring cancel.
func work(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	select {
	case <-time.After(2 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return req.Args, nil
}

// callMany runs n calls with at most par in flight and returns every failure.
func callMany(c *caller.Caller, n, par int, opts ...caller.Option) []error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, par)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resp, err := c.Call(context.Background(), "work", map[string]int{"i": i}, opts...)
			if err == nil {
				if v, _ := resp.Get("i"); string(v) != fmt.Sprint(i) {
					err = fmt.Errorf("call %d got %s", i, v)
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// Three workers in one queue group share the calls; draining one under
// load loses no call.
func TestFleetSharesAndDrainLosesNothing(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	var workers []*worker.Worker
	for range 3 {
		w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
		register(t, w, envelope.ToolSpec{Name: "work"}, work)
		workers = append(workers, w)
	}
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})

	done := make(chan []error, 1)
	go func() { done <- callMany(c, 3000, 64) }()
	waitToolStats(t, workers[0], "work", "worker 0 to serve some calls", func(st fleet.Counters) bool {
		return st.Requests >= 50
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := workers[0].Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	drained, _ := workers[0].ToolStats("work")
	errs := <-done
	for _, err := range errs {
		t.Error(err)
	}
	total := 0
	for i, w := range workers {
		st, _ := w.ToolStats("work")
		if st.Requests == 0 {
			t.Errorf("worker %d served no call", i)
		}
		total += st.Requests
	}
	if total != 3000 {
		t.Errorf("workers served %d calls, want 3000", total)
	}
	if after, _ := workers[0].ToolStats("work"); after.Requests != drained.Requests {
		t.Errorf("drained worker took %d calls after Drain returned", after.Requests-drained.Requests)
	}
}

// startClustered starts a cluster member without JetStream, shut down
// when t ends.
func startClustered(t *testing.T, name string, c *embedserver.Cluster) *embedded.Server {
	t.Helper()
	s, err := embedcluster.Start(context.Background(), embedserver.Config{Name: name, NoJetStream: true, Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

// A 3-node cluster on loopback: the caller on one node, workers on the
// others; calls succeed, and keep succeeding when a node shuts down.
func TestClusterSurvivesNodeLoss(t *testing.T) {
	a := startClustered(t, "a", &embedserver.Cluster{Name: "tm"})
	b := startClustered(t, "b", &embedserver.Cluster{Name: "tm", Routes: []string{embedcluster.RouteURL(a)}})
	cn := startClustered(t, "c", &embedserver.Cluster{Name: "tm", Routes: []string{embedcluster.RouteURL(a)}})
	nodes := []*embedded.Server{a, b, cn}
	waitFor(t, "a full mesh of routes", func() bool {
		for _, n := range nodes {
			if n.Server.NumRemotes() < 2 {
				return false
			}
		}
		return true
	})
	all := strings.Join([]string{a.ClientURL(), b.ClientURL(), cn.ClientURL()}, ",")
	dial := func(first *embedded.Server) *nats.Conn {
		nc, err := nats.Connect(first.ClientURL()+","+all, nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	wb := meshtest.NewWorker(t, dial(b), worker.Config{})
	wc := meshtest.NewWorker(t, dial(cn), worker.Config{})
	register(t, wb, envelope.ToolSpec{Name: "work"}, work)
	register(t, wc, envelope.ToolSpec{Name: "work"}, work)
	c := meshtest.NewCaller(t, dial(a), caller.Config{})
	subject := wire.Subjects{}.Call("work")
	waitFor(t, "node a to see both workers' interest", func() bool { return a.Server.GlobalAccount().Interest(subject) >= 2 })

	for _, err := range callMany(c, 200, 16) {
		t.Fatal(err)
	}
	sb, _ := wb.ToolStats("work")
	sc, _ := wc.ToolStats("work")
	if sb.Requests == 0 || sc.Requests == 0 {
		t.Fatalf("calls did not reach both remote workers: b=%d c=%d", sb.Requests, sc.Requests)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cn.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node a to drop the route to c", func() bool { return a.Server.NumRemotes() == 1 })
	for _, err := range callMany(c, 200, 16) {
		t.Fatal(err)
	}
}

// The worker's server span is the child of the caller's client span.
func TestTracePropagation(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	f := newMesh(t, worker.Config{Tracing: worker.Tracing{TracerProvider: tp}}, caller.Config{TracerProvider: tp})
	register(t, f.w, envelope.ToolSpec{Name: "echo"}, echo)
	resp, err := f.c.Call(context.Background(), "echo", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both spans to end", func() bool { return len(rec.Ended()) == 2 })
	var client, server sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindClient:
			client = s
		case trace.SpanKindServer:
			server = s
		}
	}
	if client == nil || server == nil {
		t.Fatalf("spans: %v", rec.Ended())
	}
	if server.Parent().SpanID() != client.SpanContext().SpanID() || server.SpanContext().TraceID() != client.SpanContext().TraceID() {
		t.Fatalf("server span parent %s, client span %s", server.Parent().SpanID(), client.SpanContext().SpanID())
	}
	attrs := map[string]string{}
	for _, kv := range server.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["toolmesh.tool"] != "echo" || attrs["toolmesh.call_id"] != resp.ID || attrs["toolmesh.outcome"] != "result" {
		t.Fatalf("server attributes %v", attrs)
	}
}
