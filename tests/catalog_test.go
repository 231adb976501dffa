package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// 20 workers started together: every catalogue lists all 20, or says
// complete:false with a reason — 50 times in a row.
func TestCatalogIsHonestAbout20Workers(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
			if err := w.Register(envelope.ToolSpec{Name: fmt.Sprintf("fleet.t%02d", i)}, worker.HandlerFunc(echo)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	complete := 0
	for run := range 50 {
		cat, err := c.Catalog().List(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case cat.Complete && (len(cat.Tools) != 20 || cat.Workers != 20):
			t.Fatalf("run %d: complete:true with %d tools from %d workers", run, len(cat.Tools), cat.Workers)
		case !cat.Complete && len(cat.ScopeWarnings) == 0:
			t.Fatalf("run %d: complete:false without a reason", run)
		case cat.Complete:
			complete++
		}
	}
	t.Logf("%d of 50 catalogues complete", complete)
}

// Without JetStream there is no registry: the catalogue cannot know the
// fleet's size and says so.
func TestCatalogWithoutRegistryIsIncomplete(t *testing.T) {
	f := newMeshOn(t, embedded.Config{NoJetStream: true}, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "echo"}, echo)
	cat, err := f.c.Catalog().List(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if cat.Complete || len(cat.Tools) != 1 || len(cat.ScopeWarnings) != 1 || !strings.Contains(cat.ScopeWarnings[0], "no worker registry") {
		t.Fatalf("catalogue without a registry: %+v", cat)
	}
}

// Stock ADR-32 tooling sees every tool, dotted names included: endpoint
// names are valid, the real name and subject are kept.
func TestEndpointNamesAreValidADR32(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "files.search"}, echo)
	register(t, f.w, envelope.ToolSpec{Name: "gmail.users.messages.list"}, echo)
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	subj, err := micro.ControlSubject(micro.InfoVerb, wire.ServiceName, f.w.ID())
	if err != nil {
		t.Fatal(err)
	}
	info, raw := requestJSON[micro.Info](t, f.cnc, subj)
	if len(info.Endpoints) != 2 {
		t.Fatalf("info %s", raw)
	}
	for _, ep := range info.Endpoints {
		tool := ep.Metadata["toolmesh.tool"]
		if !valid.MatchString(ep.Name) || ep.Subject != "toolmesh.call."+tool || strings.ReplaceAll(tool, ".", "_") != ep.Name {
			t.Errorf("endpoint %+v", ep)
		}
	}
	subj, _ = micro.ControlSubject(micro.StatsVerb, wire.ServiceName, "")
	stats, raw := requestJSON[micro.Stats](t, f.cnc, subj)
	if len(stats.Endpoints) != 2 {
		t.Fatalf("stats %s", raw)
	}
	for _, ep := range stats.Endpoints {
		if !valid.MatchString(ep.Name) {
			t.Errorf("stats endpoint name %q is not valid ADR-32", ep.Name)
		}
	}
}

// next reads Watch's next change, failing the test on an error.
func next(t *testing.T, changes func() (catalog.Change, error, bool)) catalog.Change {
	t.Helper()
	ch, err, ok := changes()
	if !ok || err != nil {
		t.Fatalf("watch ended: %v", err)
	}
	return ch
}

// nextOf reads Watch's next change of tool, skipping the others (on a
// loaded machine a late beacon can make another worker blink).
func nextOf(t *testing.T, changes func() (catalog.Change, error, bool), tool string) catalog.Change {
	t.Helper()
	for {
		if ch := next(t, changes); ch.Tool.Spec.Name == tool {
			return ch
		}
	}
}

// watchFromAdded starts c's catalogue Watch, ended when t ends, checks
// that its first change adds tool and returns its next-change function.
func watchFromAdded(t *testing.T, c *caller.Caller, tool string) func() (catalog.Change, error, bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changes, stop := iterPull(c.Catalog().Watch(ctx))
	t.Cleanup(func() { stop(); cancel() })
	if ch := next(t, changes); ch.Kind != catalog.ToolAdded || ch.Tool.Spec.Name != tool {
		t.Fatalf("first change %+v", ch)
	}
	return changes
}

// Watch yields the tools present, then a worker's join and its drain.
func TestWatchSeesJoinAndDrain(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	first := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{Liveness: worker.Liveness{Heartbeat: 200 * time.Millisecond}})
	register(t, first, envelope.ToolSpec{Name: "fs.read"}, echo)
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{Heartbeat: 200 * time.Millisecond})
	changes := watchFromAdded(t, c, "fs.read")
	second := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{Liveness: worker.Liveness{Heartbeat: 200 * time.Millisecond}})
	register(t, second, envelope.ToolSpec{Name: "fs.write"}, echo)
	if ch := nextOf(t, changes, "fs.write"); ch.Kind != catalog.ToolAdded || ch.Tool.Workers[0] != second.ID() {
		t.Fatalf("join %+v", ch)
	}
	third := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{Liveness: worker.Liveness{Heartbeat: 200 * time.Millisecond}})
	register(t, third, envelope.ToolSpec{Name: "fs.read"}, echo)
	if ch := nextOf(t, changes, "fs.read"); ch.Kind != catalog.ToolChanged || ch.Tool.Instances != 2 {
		t.Fatalf("second instance %+v", ch)
	}
	if err := second.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ch := nextOf(t, changes, "fs.write"); ch.Kind != catalog.ToolRemoved {
		t.Fatalf("drain %+v", ch)
	}
}

// Watch sees a worker killed with -9 (a separate process, no goodbye) go.
func TestWatchSeesKilledWorkerGo(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	cfg := writeTools(t, "tools:\n  - name: files.search\n    binding: {cli: {cmd: \"true\"}}\n")
	p, _ := startCLIWorker(t, srv.ClientURL(), cfg)
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	changes := watchFromAdded(t, c, "files.search")
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if ch := next(t, changes); ch.Kind != catalog.ToolRemoved || ch.Tool.Spec.Name != "files.search" {
		t.Fatalf("after kill -9: %+v", ch)
	}
}

// watchChanges follows c's catalogue Watch until ctx ends or the watch
// fails, handing each change to the returned channel, closed then.
func watchChanges(ctx context.Context, c *caller.Caller) <-chan catalog.Change {
	changes := make(chan catalog.Change, 16)
	go func() {
		defer close(changes)
		for ch, err := range c.Catalog().Watch(ctx) {
			if err != nil {
				return
			}
			select {
			case changes <- ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return changes
}

// Beacons naming workers that never answer (a hostile publisher) neither
// stall Watch nor enter the view: a real worker joining after a flood of
// them is still reported.
func TestWatchSurvivesFakeBeacons(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{Heartbeat: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes, stop := iterPull(c.Catalog().Watch(ctx))
	defer stop()
	first := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{Liveness: worker.Liveness{Heartbeat: 200 * time.Millisecond}})
	register(t, first, envelope.ToolSpec{Name: "first"}, echo)
	if ch := next(t, changes); ch.Tool.Spec.Name != "first" { // the watch is following now
		t.Fatalf("first change %+v", ch)
	}
	hostile := meshtest.Connect(t, srv)
	// It even listens on the fake workers' catalogue subjects, so the
	// watcher's fetches get no quick "no responders", just silence.
	if _, err := hostile.Subscribe(wire.Subjects{}.WorkerCatalog("*"), func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		b, _ := json.Marshal(wire.Beacon{WorkerID: fmt.Sprintf("FAKE%04d", i), State: wire.BeaconUp, Revision: 1, IntervalMS: 1 << 40})
		if err := hostile.Publish(wire.Subjects{}.Presence(fmt.Sprintf("FAKE%04d", i)), b); err != nil {
			t.Fatal(err)
		}
	}
	_ = hostile.Flush()
	w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{Liveness: worker.Liveness{Heartbeat: 200 * time.Millisecond}})
	register(t, w, envelope.ToolSpec{Name: "real"}, echo)
	if ch := nextOf(t, changes, "real"); ch.Kind != catalog.ToolAdded {
		t.Fatalf("after fake beacons: %+v", ch)
	}
}

// A worker that beacons more slowly than the watcher's own heartbeat is
// judged by its own interval from the start: Watch meets it in the first
// catalogue answer, before any beacon, and must not drop it in between.
func TestWatchJudgesAWorkerByItsOwnInterval(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	slow := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{Liveness: worker.Liveness{Heartbeat: 2 * time.Second}})
	register(t, slow, envelope.ToolSpec{Name: "slow.tool"}, echo)
	beacons := make(chan struct{}, 16)
	if _, err := meshtest.Connect(t, srv).Subscribe(wire.Subjects{}.Presence(slow.ID()), func(*nats.Msg) { beacons <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{Heartbeat: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := watchChanges(ctx, c)
	if ch := <-changes; ch.Kind != catalog.ToolAdded || ch.Tool.Spec.Name != "slow.tool" {
		t.Fatalf("first change %+v", ch)
	}
	// Two beacons after the seed span a whole 2 s interval, far longer
	// than 3 of the watcher's 100 ms: a worker judged by the watcher's
	// interval would have been dropped (and re-added) in between.
	for range 2 {
		<-beacons
	}
	select {
	case ch := <-changes:
		t.Fatalf("a live worker's tool changed: %+v", ch)
	default:
	}
}
