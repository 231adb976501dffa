package tests

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// The least-privilege users of deploy/permissions.conf can run the whole
// protocol: unary and streamed calls with credit grants, cancel, the
// catalogue and describe, and discovery. A missing permission would show as
// a permissions violation on either connection.
func TestDeployPermissionsCoverTheProtocol(t *testing.T) {
	t.Setenv("TOOLMESH_WORKER_PASSWORD", "w-secret")
	t.Setenv("TOOLMESH_CALLER_PASSWORD", "c-secret")
	srv := testutil.StartServerFromConfig(t, "../deploy/permissions.conf")

	var mu sync.Mutex
	var violations []error
	dial := func(user, password string) *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(user, password),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				mu.Lock()
				violations = append(violations, err)
				mu.Unlock()
			}))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	wnc := dial("worker", "w-secret")
	w := meshtest.NewWorker(t, wnc, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "echo"}, echo)
	register(t, w, countSpec, count)
	started := make(chan struct{}, 1)
	register(t, w, envelope.ToolSpec{Name: "wait"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	cnc := dial("caller", "c-secret")
	c := meshtest.NewCaller(t, cnc, caller.Config{Options: []caller.Option{caller.WithWindow(4)}})
	ctx := context.Background()

	if resp, err := c.Call(ctx, "echo", map[string]string{"message": "hi"}); err != nil || !resp.Success {
		t.Fatalf("unary call: %v", err)
	}
	s, err := c.Stream(ctx, "count", map[string]int{"n": 50}) // 50 events through a window of 4: credits must flow
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := s.Response(); err != nil || string(resp.Data) != `{"count":50}` {
		t.Fatalf("stream: %v %s", err, resp.Data)
	}
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := c.Call(cctx, "wait", map[string]any{}); errc <- err }()
	<-started
	cancel()
	wantCode(t, <-errc, envelope.CodeCancelled)
	cat, err := c.Catalog().List(ctx, 5*time.Second)
	// These deploy files run no JetStream, so there is no worker registry
	// and the catalogue honestly cannot claim to be complete.
	if err != nil || len(cat.Tools) != 3 || cat.Complete || len(cat.ScopeWarnings) != 1 || !strings.Contains(cat.ScopeWarnings[0], "no worker registry") {
		t.Fatalf("catalogue: %v %+v", err, cat)
	}
	if _, err := c.Catalog().Describe(ctx, "count"); err != nil {
		t.Fatalf("describe: %v", err)
	}
	// Stock tooling as the caller user: a bare discovery ping.
	if _, err := cnc.Request("$SRV.PING", nil, 5*time.Second); err != nil {
		t.Fatalf("$SRV.PING as the caller: %v", err)
	}
	// Both connections round-trip once more, so any violation has arrived.
	for _, nc := range []*nats.Conn{cnc, wnc} {
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range violations {
		t.Errorf("asynchronous error (a permissions violation?): %v", v)
	}
}

// The cluster node configuration parses as nats-server reads it.
func TestDeployClusterConfigParses(t *testing.T) {
	t.Setenv("NODE_NAME", "nats-1")
	opts, err := server.ProcessConfigFile("../deploy/nats-cluster.conf")
	if err != nil {
		t.Fatal(err)
	}
	if opts.ServerName != "nats-1" || opts.Cluster.Name != "toolmesh" || len(opts.Routes) != 3 || opts.MaxPayload != 1<<20 {
		t.Errorf("parsed as name %q cluster %q, %d routes, max_payload %d", opts.ServerName, opts.Cluster.Name, len(opts.Routes), opts.MaxPayload)
	}
}

// The systemd unit's command line is one the binary accepts: with the
// tools file missing it must fail on the config, not on a flag.
func TestDeploySystemdCommandLine(t *testing.T) {
	unit, err := os.ReadFile("../deploy/systemd/toolmesh-worker.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ExecStart=\S+ (.*)$`).FindSubmatch(unit)
	if m == nil {
		t.Fatal("no ExecStart line")
	}
	missing := filepath.Join(t.TempDir(), "tools.yaml")
	args := strings.Fields(strings.ReplaceAll(string(m[1]), "/etc/toolmesh/tools.yaml", missing))
	r := runCmd(t, "", args...)
	if info, _ := codes.Lookup(envelope.CodeInvalidConfig); r.code != info.ExitCode || !strings.Contains(r.stderr, missing) {
		t.Errorf("%v: exit %d, want invalid_config (%d) naming the file; stderr %s", args, r.code, info.ExitCode, r.stderr)
	}
}
