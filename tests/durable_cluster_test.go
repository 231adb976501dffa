package tests

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// startCluster starts three embedded JetStream servers in one cluster,
// at once: a clustered JetStream server is ready only with a quorum.
func startCluster(t *testing.T) map[string]*embedded.Server {
	t.Helper()
	var routes []string
	var listens []string
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listens = append(listens, l.Addr().String())
		routes = append(routes, "nats-route://"+l.Addr().String())
		_ = l.Close()
	}
	type started struct {
		name string
		s    *embedded.Server
		err  error
	}
	ch := make(chan started, 3)
	for i := range 3 {
		name := fmt.Sprintf("n%d", i+1)
		go func() {
			s, err := embedded.Start(context.Background(), embedded.Config{Name: name, StoreDir: t.TempDir(),
				ReadyTimeout: time.Minute, Cluster: &embedded.ClusterConfig{Name: "tm", Listen: listens[i], Routes: routes}})
			ch <- started{name, s, err}
		}()
	}
	servers := map[string]*embedded.Server{}
	for range 3 {
		st := <-ch
		if st.err != nil {
			t.Fatal(st.err)
		}
		t.Cleanup(func() { _ = st.s.Shutdown(context.Background()) })
		servers[st.name] = st.s
	}
	return servers
}

// On a 3-node cluster with R3 streams, losing the server that leads the
// task log mid-task loses no task: the running one and one submitted
// while the cluster elects a new leader both complete.
func TestDurableClusterLeaderLossLosesNoTask(t *testing.T) {
	servers := startCluster(t)
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	all := strings.Join(urls, ",")
	dial := func() *nats.Conn {
		nc, err := nats.Connect(all, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	svcNC := dial()
	var svc *tasks.Service
	waitFor(t, "the JetStream cluster to take the R3 streams", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := tasks.New(ctx, svcNC, tasks.Config{Replicas: 3})
		svc = s
		return err == nil
	})
	t.Cleanup(func() { svc.Close(context.Background()) })
	leader := logLeader(t, svcNC)

	release := make(chan struct{})
	w := meshtest.NewWorker(t, dial(), worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "hold", Streaming: true}, func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
		if err := emit.Delta(map[string]string{"phase": "before"}); err != nil {
			return nil, err
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return req.Args, nil
	})
	c := meshtest.NewCaller(t, dial(), caller.Config{})
	ctx := context.Background()
	first, err := tasks.NewClient(c).Submit(ctx, "hold", map[string]int{"task": 1})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first task to run", func() bool {
		rec, err := tasks.NewClient(c).Get(ctx, first, false)
		return err == nil && rec.Events >= 2
	})
	_ = servers[leader].Shutdown(ctx)
	second, err := tasks.NewClient(c).Submit(ctx, "hold", map[string]int{"task": 2})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	for _, id := range []string{first, second} {
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		rec, err := tasks.NewClient(c).Get(wctx, id, true)
		cancel()
		if err != nil || rec.State != tasks.Succeeded {
			t.Fatalf("task %s after losing %s: %+v, %v", id, leader, rec, err)
		}
		evs, _ := attachAll(t, c, id)
		wantNumbered(t, evs)
	}
	if newLeader := logLeader(t, svcNC); newLeader == leader {
		t.Fatalf("the log is still led by the lost server %s", leader)
	}
}

// logLeader names the server that leads the task log.
func logLeader(t *testing.T, nc *nats.Conn) string {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var leader string
	waitFor(t, "the task log to have a leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, taskStream)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
			return false
		}
		leader = info.Cluster.Leader
		return true
	})
	return leader
}
