package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/embedcluster"
	"github.com/toolmesh/toolmesh/internal/embedserver"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/worker"
)

// durableRowName names the durable rows; durableR3Suffix follows it in
// the names of those run on the 3-node cluster.
const (
	durableRowName  = "durable unary (task)"
	durableR3Suffix = ", 3-node R3"
)

// durableCluster is what the R3 durable rows run on besides their sides:
// three embedded JetStream servers in one cluster, each with a store of
// its own, and a worker and a caller connected to the cluster.
type durableCluster struct {
	servers []*embedded.Server
	dirs    []string
	conns   []*nats.Conn
	w       *worker.Worker
	c       *caller.Caller
}

// startDurableR3 readies the R3 durable rows: the same three sides as the
// durable rows, every stream and consumer replicated on three servers.
// Only with the embedded server (the bench cannot make a cluster of the
// server it was given), or it says on stderr why the rows are skipped.
func (b *bencher) startDurableR3(ctx context.Context, prefix string, maxInFlight int, env *Env) {
	cl, err := startDurableCluster(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "the R3 durable rows are skipped: %v\n", err)
		return
	}
	d, err := cl.sides(ctx, prefix, maxInFlight, env)
	if err != nil {
		if d != nil {
			d.close() // and the cluster with it
		} else {
			cl.close()
		}
		fmt.Fprintf(env.Stderr, "the R3 durable rows are skipped: %v\n", err)
		return
	}
	b.durableR3 = d
}

// startDurableCluster starts three clustered embedded servers at once: a
// clustered JetStream server is ready only once a quorum is.
func startDurableCluster(ctx context.Context) (*durableCluster, error) {
	cl := &durableCluster{}
	var listens, routes []string
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listens = append(listens, l.Addr().String())
		routes = append(routes, "nats-route://"+l.Addr().String())
		_ = l.Close()
	}
	type started struct {
		s   *embedded.Server
		err error
	}
	ch := make(chan started, 3)
	for i := range 3 {
		dir, err := os.MkdirTemp("", "toolmesh-bench-r3-")
		if err != nil {
			cl.close()
			return nil, err
		}
		cl.dirs = append(cl.dirs, dir)
		go func() {
			s, err := embedcluster.Start(ctx, embedserver.Config{Name: fmt.Sprintf("bench-r3-%d", i+1), StoreDir: dir,
				ReadyTimeout: time.Minute, Cluster: &embedserver.Cluster{Name: "bench-r3", Listen: listens[i], Routes: routes}})
			ch <- started{s, err}
		}()
	}
	var firstErr error
	for range 3 {
		st := <-ch
		if st.err != nil && firstErr == nil {
			firstErr = st.err
		}
		if st.s != nil {
			cl.servers = append(cl.servers, st.s)
		}
	}
	if firstErr != nil {
		cl.close()
		return nil, firstErr
	}
	return cl, nil
}

// sides connects to the cluster (each connection to any of its servers),
// starts the durable sides with every stream on three replicas, then a
// worker hosting the echo and a caller. Failing once the sides exist, it
// returns them too: closing them closes the cluster.
func (cl *durableCluster) sides(ctx context.Context, prefix string, maxInFlight int, env *Env) (*benchDurable, error) {
	var urls []string
	for _, s := range cl.servers {
		urls = append(urls, s.ClientURL())
	}
	for _, name := range []string{"bench r3 tasks", "bench r3 work queue", "bench r3 work queue caller", "bench r3 worker", "bench r3 caller"} {
		nc, err := nats.Connect(strings.Join(urls, ","), nats.Name(name))
		if err != nil {
			return nil, err
		}
		cl.conns = append(cl.conns, nc)
	}
	// The streams first, once the cluster's JetStream has a leader: the
	// worker's registry needs it too.
	if err := awaitJetStream(ctx, cl.conns[0]); err != nil {
		return nil, err
	}
	d, err := startDurable(ctx, cl.conns[0], cl.conns[1], cl.conns[2], prefix, maxInFlight, 3, env)
	if err != nil {
		return nil, err
	}
	d.cluster = cl // closed with d from here on
	if cl.w, err = worker.New(cl.conns[3], worker.Config{Prefix: prefix, Logger: env.Log, Description: "toolmesh bench (R3)",
		Limits: worker.Limits{MaxConcurrent: maxInFlight, MaxPerIdentity: maxInFlight}}); err != nil {
		return d, err
	}
	if err := cl.w.Register(envelope.ToolSpec{Name: "echo", InputSchema: json.RawMessage(echoSchema)}, worker.HandlerFunc(
		func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) { return req.Args, nil })); err != nil {
		return d, err
	}
	if cl.c, err = caller.New(cl.conns[4], caller.Config{Prefix: prefix, Logger: env.Log}); err != nil {
		return d, err
	}
	d.c = cl.c
	return d, nil
}

// awaitJetStream waits (a minute at most) until the cluster's JetStream
// answers: a cluster's servers accept connections before they have
// elected the leader that answers JetStream's API.
func awaitJetStream(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(wctx, 2*time.Second)
		_, err := js.AccountInfo(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("the cluster's JetStream did not answer: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// close stops the cluster's worker, caller and servers and removes their
// stores.
func (cl *durableCluster) close() {
	if cl.c != nil {
		_ = cl.c.Close()
	}
	if cl.w != nil {
		cl.w.Stop()
	}
	for _, nc := range cl.conns {
		nc.Close()
	}
	for _, s := range cl.servers {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = s.Shutdown(ctx)
		cancel()
	}
	for _, dir := range cl.dirs {
		_ = os.RemoveAll(dir)
	}
}

// durableUnaryR3 is durableUnary on the cluster.
func (b *bencher) durableUnaryR3(ctx context.Context) error { return b.durableR3.unary(ctx, b.args) }

// equivalentQueueCallR3 is equivalentQueueCall on the cluster.
func (b *bencher) equivalentQueueCallR3(ctx context.Context) error {
	return b.durableR3.equivalent(ctx, b.args)
}

// rawWorkQueueR3 is rawWorkQueue on the cluster.
func (b *bencher) rawWorkQueueR3(ctx context.Context) error { return b.durableR3.bare(ctx, b.args) }
