package tests

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// taskService runs a task service configured by cfg as deploy/secure's
// tasks user, stopped when t ends.
func (m *secureMesh) taskService(t *testing.T, cfg tasks.Config) *tasks.Service {
	t.Helper()
	nc, _ := m.dial(t, "tasks")
	return startService(t, nc, cfg)
}

// Under deploy/secure verbatim: a task belongs to its submitter; bob can
// neither list, get, watch nor cancel alice's task, and neither tenant
// reaches the JetStream API.
func TestSecureTasksBelongToTheirSubmitter(t *testing.T) {
	m := startSecure(t)
	m.taskService(t, tasks.Config{})
	started, ended := make(chan string, 1), make(chan error, 1)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.park"}, parkTool(started, ended))
	aliceNC, aliceErrs := m.dial(t, "alice")
	bobNC, bobErrs := m.dial(t, "bob")
	alice := meshtest.NewCaller(t, aliceNC, caller.Config{})
	bob := meshtest.NewCaller(t, bobNC, caller.Config{})
	ctx := context.Background()
	id := submitTask(ctx, t, alice, "demo.park", map[string]any{})
	<-started
	bobCannotTouch(t, bob, id)
	if list, err := tasks.NewClient(alice).List(ctx, "", 0); err != nil || len(list) != 1 || list[0].TaskID != id {
		t.Fatalf("alice lists %+v, %v; want her one task", list, err)
	}
	rec, err := tasks.NewClient(alice).Cancel(ctx, id)
	if err != nil || rec.State != tasks.Cancelled {
		t.Fatalf("alice's cancel: %+v, %v", rec, err)
	}
	if err := <-ended; err == nil {
		t.Fatal("the handler was not cancelled")
	}
	noJetStream(t, "alice", aliceNC, aliceErrs)
	noJetStream(t, "bob", bobNC, bobErrs)
}

// Under deploy/secure verbatim: the task service calls a task's tool
// itself, so a tenant must not run through it a tool it may not call.
// alice may call demo tools only: her submit of a task of fs.wipe is
// refused by the server (the name that carries the tool is not hers to
// publish), and so is one sent through a demo tool's name that carries
// fs.wipe in its args; neither leaves a task. bob, who may call fs tools,
// submits one that runs: the tool's execution log holds his run alone.
func TestSecureTaskOfAToolTheTenantMayNotCallIsRefused(t *testing.T) {
	m := startSecure(t)
	m.taskService(t, tasks.Config{})
	filesNC, _ := m.dial(t, "files")
	fs := meshtest.NewWorker(t, filesNC, worker.Config{Pool: "fs"})
	ran := make(chan string, 8)
	yes := true
	register(t, fs, envelope.ToolSpec{Name: "fs.wipe", Annotations: &envelope.Annotations{Idempotent: &yes}},
		func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
			ran <- string(req.Args)
			return map[string]bool{"wiped": true}, nil
		})
	alice, bob := m.caller(t, "alice"), m.caller(t, "bob")
	ctx := context.Background()
	_, err := tasks.NewClient(alice).Submit(ctx, "fs.wipe", map[string]any{"who": "alice"})
	wantCode(t, err, envelope.CodeForbidden)
	api, err := alice.Service("tasks")
	if err != nil {
		t.Fatal(err)
	}
	_, err = api.Call(ctx, "submit.demo.park", map[string]any{"tool": "fs.wipe", "args": map[string]any{"who": "alice, forged"}})
	wantCode(t, err, envelope.CodeForbidden)
	if list, err := tasks.NewClient(alice).List(ctx, "", 0); err != nil || len(list) != 0 {
		t.Fatalf("alice's tasks %+v, %v; want none", list, err)
	}
	rec, err := tasks.NewClient(bob).Run(ctx, "fs.wipe", map[string]any{"who": "bob"})
	if err != nil || rec.State != tasks.Succeeded {
		t.Fatalf("bob's task of fs.wipe: %+v, %v; want it to succeed", rec, err)
	}
	if got := <-ran; got != `{"who":"bob"}` || len(ran) != 0 {
		t.Fatalf("fs.wipe ran with %s (and %d more); want bob's run alone", got, len(ran))
	}
}

// noJetStream checks that a tenant's request to the JetStream API is
// refused by the server (the permissions violation it reports) and gets
// no answer. The request is abandoned once the refusal is in, rather
// than waited out to a timeout.
func noJetStream(t *testing.T, name string, nc *nats.Conn, tenant *asyncErrs) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	jctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answered := make(chan error, 1)
	go func() {
		_, err := js.AccountInfo(jctx)
		answered <- err
	}()
	waitFor(t, name+"'s $JS.API publish to be refused", func() bool {
		for _, e := range tenant.all() {
			if strings.Contains(e.Error(), `Permissions Violation for Publish to "$JS.API.INFO"`) {
				return true
			}
		}
		return false
	})
	cancel()
	if err := <-answered; err == nil {
		t.Fatalf("%s reached the JetStream API", name)
	}
}

// bobCannotTouch checks that alice's task is invisible to bob: he can
// neither read, cancel, answer, watch nor list it.
func bobCannotTouch(t *testing.T, bob *caller.Caller, id string) {
	t.Helper()
	ctx := context.Background()
	_, err := tasks.NewClient(bob).Get(ctx, id, false)
	wantCode(t, err, envelope.CodeTaskNotFound)
	_, err = tasks.NewClient(bob).Cancel(ctx, id)
	wantCode(t, err, envelope.CodeTaskNotFound)
	_, err = tasks.NewClient(bob).Answer(ctx, id, "", caller.Decline())
	wantCode(t, err, envelope.CodeTaskNotFound)
	ts, err := tasks.NewClient(bob).Attach(ctx, id, 1)
	if err == nil {
		_, err = ts.Next()
		ts.Close()
	}
	if errors.Is(err, io.EOF) {
		t.Fatal("bob attached to alice's task")
	}
	wantCode(t, err, envelope.CodeTaskNotFound)
	if list, err := tasks.NewClient(bob).List(ctx, "", 0); err != nil || len(list) != 0 {
		t.Fatalf("bob lists %+v, %v; want none", list, err)
	}
}

// Under deploy/secure: bob floods one tool with long tasks until his own
// queue of it is full. alice's task on another tool still runs to its end
// while every one of bob's is queued or running (none can end: they park
// until the test ends), and her submit to the flooded tool is accepted.
// bob's tasks that read running are exactly those whose handler started.
func TestSecureTenantFloodDelaysOnlyItself(t *testing.T) {
	const flood, perOwner = 300, 4
	m := startSecure(t)
	m.taskService(t, tasks.Config{MaxQueuedPerTool: flood,
		MaxRunningPerOwner: perOwner, MaxRunningPerOwnerTool: perOwner})
	// A worker whose per-sender share (half its 16 slots) the old
	// dispatch let one owner's flood fill for every owner.
	w := m.demoWorker(t, worker.Config{Limits: worker.Limits{MaxConcurrent: 16}})
	started, ended := registerPark(t, w)
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	alice := m.caller(t, "alice")
	bob := m.caller(t, "bob")
	ctx := context.Background()
	submitParked(ctx, t, bob, flood)
	_, err := tasks.NewClient(bob).Submit(ctx, "demo.park", map[string]int{"i": flood})
	wantCode(t, err, envelope.CodeOverloaded)
	waitFor(t, "bob's first tasks to start", func() bool { return started.Load() == perOwner })

	runBesideFlood(ctx, t, alice, ended, "beside bob's flood")
	running, err := tasks.NewClient(bob).List(ctx, tasks.Running, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(len(running)); got != started.Load() || got > perOwner {
		t.Errorf("%d of bob's tasks read running, %d handlers started (his bound %d)", got, started.Load(), perOwner)
	}
	if _, err := tasks.NewClient(alice).Submit(ctx, "demo.park", map[string]int{"i": 0}); err != nil {
		t.Fatalf("alice's submit to the tool bob flooded: %v", err)
	}
}

// Under deploy/secure: the task service runs each owner's attempts as a
// sender of its own at the worker, so bob's flood, allowed more running
// tasks by the service than the worker's per-sender share, fills only
// his share of the worker: alice's task on the same worker still runs
// while every one of his waits, and bob has exactly his share started.
func TestSecureTenantFloodTakesOnlyItsShareOfTheWorker(t *testing.T) {
	const flood, share = 24, 4
	m := startSecure(t)
	m.taskService(t, tasks.Config{MaxRunningPerOwner: flood, MaxRunningPerOwnerTool: flood})
	w := m.demoWorker(t, worker.Config{Limits: worker.Limits{MaxConcurrent: 2 * share, MaxPerIdentity: share}})
	started, ended := registerPark(t, w)
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	alice, bob := m.caller(t, "alice"), m.caller(t, "bob")
	ctx := context.Background()
	submitParked(ctx, t, bob, flood)
	waitFor(t, "bob's share of the worker to start", func() bool { return started.Load() == share })

	runBesideFlood(ctx, t, alice, ended, "beside bob's flood on the same worker")
	if n := started.Load(); n != share {
		t.Fatalf("%d of bob's tasks started on the worker, want his share of %d", n, share)
	}
}

// Under deploy/secure: a tenant who makes up caller ids is still one
// sender to a worker (its server-stamped identity), so its calls take
// one share of the worker however many callers it spreads them over;
// the rest are refused overloaded, unrun. Only the worker's own account
// (the task service) is counted per caller id.
func TestSecureTenantCallerIDsAreOneSender(t *testing.T) {
	const callers, each, share = 3, 4, 4
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{Limits: worker.Limits{MaxConcurrent: 4 * share, MaxPerIdentity: share}})
	started, _ := registerPark(t, w)
	bobNC, _ := m.dial(t, "bob")
	refused := make(chan *envelope.Problem, callers*each)
	for range callers {
		c := meshtest.NewCaller(t, bobNC, caller.Config{})
		for range each {
			go func() {
				_, err := c.Call(context.Background(), "demo.park", map[string]int{}, caller.WithRetries(caller.NoRetries))
				var p *envelope.Problem
				if errors.As(err, &p) {
					refused <- p
				}
			}()
		}
	}
	for i := range callers*each - share {
		var p *envelope.Problem
		select {
		case p = <-refused:
		case <-time.After(time.Minute):
			t.Fatalf("%d of bob's calls were refused, want %d; %d started", i, callers*each-share, started.Load())
		}
		if p.Code != envelope.CodeOverloaded || p.Ran() != envelope.RanNo {
			t.Fatalf("bob's call past his share ended %s (ran %s): %s; want overloaded, unrun", p.Code, p.Ran(), p.Detail)
		}
	}
	waitFor(t, "bob's one share of calls to start", func() bool { return started.Load() == share })
}

// registerPark registers demo.park on w: a tool whose calls park until
// the test ends (or their call is cancelled), counting the handlers that
// started and ended.
func registerPark(t *testing.T, w *worker.Worker) (started, ended *atomic.Int64) {
	t.Helper()
	started, ended = new(atomic.Int64), new(atomic.Int64)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	register(t, w, envelope.ToolSpec{Name: "demo.park"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		started.Add(1)
		defer ended.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return map[string]bool{"parked": true}, nil
	})
	return started, ended
}

// submitParked submits n demo.park tasks as c, numbered from 0, failing t
// at the first one refused.
func submitParked(ctx context.Context, t *testing.T, c *caller.Caller, n int) {
	t.Helper()
	for i := range n {
		if _, err := tasks.NewClient(c).Submit(ctx, "demo.park", map[string]int{"i": i}); err != nil {
			t.Fatalf("submit %d of the flood: %v", i+1, err)
		}
	}
}

// runBesideFlood runs alice's demo.echo task to success (where says beside
// what, for a failure's message) and checks that none of the parked
// tasks, counted by ended, ended meanwhile.
func runBesideFlood(ctx context.Context, t *testing.T, alice *caller.Caller, ended *atomic.Int64, where string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rec, err := tasks.NewClient(alice).Run(wctx, "demo.echo", map[string]string{"message": "hi"})
	if err != nil || rec.State != tasks.Succeeded {
		t.Fatalf("alice's task %s: %+v, %v", where, rec, err)
	}
	if n := ended.Load(); n != 0 {
		t.Fatalf("%d of bob's tasks ended; alice's was to run while all of his wait", n)
	}
}
