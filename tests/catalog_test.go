package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
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

// rssBytes reads a process's resident set size from /proc (Linux).
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc to read RSS from: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", sc.Text(), err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// An idle worker process hosting 1,000 tools stays under 64 MiB resident:
// a tool costs its subscription, not a 65,536-slot channel (512 KiB the
// GC scans) as nats.go's synchronous subscriptions allocate.
func TestIdleWorkerWith1000ToolsIsSmall(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	var b strings.Builder
	b.WriteString("tools:\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  - name: many.t%04d\n    binding: {cli: {cmd: \"true\"}}\n", i)
	}
	cfg := writeTools(t, b.String())
	p, _ := startCLIWorker(t, srv.ClientURL(), cfg, "--log-level", "info")
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	// Ready means listed: one catalogue right after "worker ready" holds
	// all 1,000 tools (the worker writes its registry entry first).
	cat, err := c.Catalog().List(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Tools) != 1000 || !cat.Complete {
		t.Fatalf("right after 'worker ready' the catalogue lists %d tools (complete %v), want 1000", len(cat.Tools), cat.Complete)
	}
	const limit = 64 << 20
	if rss := rssBytes(t, p.cmd.Process.Pid); rss >= limit {
		t.Fatalf("idle worker with 1,000 tools: RSS %d MiB, want under %d MiB", rss>>20, limit>>20)
	} else {
		t.Logf("idle worker with 1,000 tools: RSS %.1f MiB", float64(rss)/(1<<20))
	}
}

// While 200 workers rewrite their registry keys as fast as the server
// takes them (refresh churn), every catalogue lists all 200 and says
// complete: reading the registry never drops a live worker's key, and a
// catalogue is never complete without one.
func TestCatalogUnderRegistryChurnMissesNoWorker(t *testing.T) {
	const workers = 200
	srv := meshtest.StartServer(t, embedded.Config{})
	f := newSimFleet(t, srv, "C", workers, 5, 20)
	f.register(t)
	ctx, cancel := context.WithCancel(context.Background())
	churned := make(chan int)
	go func() {
		n := 0
		defer func() { churned <- n }()
		for ctx.Err() == nil {
			for _, id := range f.order {
				if _, err := f.kv.Put(ctx, id, f.beacons[id]); err == nil {
					n++
				}
			}
		}
	}()
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	for run := range 100 {
		cat, err := c.Catalog().List(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if cat.Workers != workers || !cat.Complete {
			t.Fatalf("run %d under churn: %d of %d workers, complete=%v, %v", run, cat.Workers, workers, cat.Complete, cat.ScopeWarnings)
		}
	}
	cancel()
	t.Logf("registry keys rewritten during 100 catalogues: %d", <-churned)
}

// A catalogue gather (no registry) after the connection has made requests (so nats.go's
// response wildcard exists) receives each worker's answer once.
func TestCatalogAnswersArriveOnce(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{NoJetStream: true}) // the broadcast gather
	for i := range 5 {
		w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
		register(t, w, envelope.ToolSpec{Name: fmt.Sprintf("once.t%d", i)}, echo)
	}
	nc := meshtest.Connect(t, srv)
	c := meshtest.NewCaller(t, nc, caller.Config{})
	if _, err := nc.Request("toolmesh.describe.once.t0", nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// A caller's first catalogue also asks the server, once per
	// connection, which tools this identity may call: one more message.
	// The gather is short, so no worker's presence beacon lands in it.
	const gather = 300 * time.Millisecond
	if _, err := c.Catalog().List(context.Background(), gather); err != nil {
		t.Fatal(err)
	}
	before := nc.Stats().InMsgs
	cat, err := c.Catalog().List(context.Background(), gather)
	if err != nil || cat.Workers != 5 {
		t.Fatalf("catalogue of 5 workers: %v %+v", err, cat)
	}
	if got := nc.Stats().InMsgs - before; got != 5 {
		t.Fatalf("5 workers answered; the caller's connection received %d messages", got)
	}
}

// `toolmesh tools list` with its default options lists every one of
// 1,000 registered workers and says the catalogue is complete.
func TestToolsListShows1000Workers(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	f := newSimFleet(t, srv, "L", 1_000, 5, 50)
	f.register(t)
	r := runCmd(t, "", "tools", "list", "--json", "--server", srv.ClientURL())
	var cat catalog.Listing
	if err := json.Unmarshal([]byte(r.stdout), &cat); err != nil || r.code != 0 {
		t.Fatalf("tools list: exit %d, %v\n%s", r.code, err, r.stderr)
	}
	if cat.Workers != 1_000 || !cat.Complete || len(cat.Tools) != 50*5 {
		t.Fatalf("tools list of 1,000 workers: %d workers, %d tools, complete=%v %v", cat.Workers, len(cat.Tools), cat.Complete, cat.ScopeWarnings)
	}
	for _, tool := range cat.Tools {
		if tool.Instances != 20 {
			t.Fatalf("%s: %d instances, want 20 (one entry per tool, its hosts counted)", tool.Spec.Name, tool.Instances)
		}
	}
}

// `toolmesh tools search` ranks the live catalogue: the demo's echo first
// for "echo my arguments back".
func TestToolsSearchCommand(t *testing.T) {
	_, url := startDev(t)
	r := runCmd(t, "", "tools", "search", "echo", "my", "arguments", "back", "--json", "--server", url)
	var hits []catalog.SearchHit
	if err := json.Unmarshal([]byte(r.stdout), &hits); err != nil || r.code != 0 {
		t.Fatalf("tools search: exit %d, %v\n%s", r.code, err, r.stderr)
	}
	if len(hits) == 0 || hits[0].Tool.Spec.Name != "echo" {
		t.Fatalf("hits %+v, want echo first", hits)
	}
	if r := runCmd(t, "", "tools", "search", "--server", url); r.code != 2 {
		t.Fatalf("search without a query: exit %d, want 2 (invalid_input)", r.code)
	}
}

// Announce makes ready mean listed: once it returns, one catalogue lists
// every tool registered before it, complete, without waiting for the
// registrations' own background announcements.
func TestAnnounceMeansListed(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	for round := range 5 {
		w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
		for i := range 50 {
			register(t, w, envelope.ToolSpec{Name: fmt.Sprintf("ann%d.t%d", round, i)}, echo)
		}
		if err := w.Announce(context.Background()); err != nil {
			t.Fatal(err)
		}
		cat, err := c.Catalog().List(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tl := range cat.Tools {
			if strings.HasPrefix(tl.Spec.Name, fmt.Sprintf("ann%d.", round)) {
				n++
			}
		}
		if n != 50 || !cat.Complete {
			t.Fatalf("round %d: right after Announce the catalogue lists %d of the worker's 50 tools (complete %v, %v)", round, n, cat.Complete, cat.ScopeWarnings)
		}
	}
}

// spyCatalogRequests counts the catalogue requests the server routes: the
// broadcast and those on one worker's catalogue subject.
type spyCatalogRequests struct {
	nc               *nats.Conn
	broadcast, aimed *nats.Subscription
}

func newSpyCatalogRequests(t *testing.T, srv *embedded.Server) *spyCatalogRequests {
	nc := meshtest.Connect(t, srv)
	s := &spyCatalogRequests{nc: nc}
	var err error
	if s.broadcast, err = nc.SubscribeSync(wire.Subjects{}.Catalog()); err != nil {
		t.Fatal(err)
	}
	if s.aimed, err = nc.SubscribeSync(wire.Subjects{}.Catalog() + ".>"); err != nil {
		t.Fatal(err)
	}
	_ = s.broadcast.SetPendingLimits(-1, -1)
	_ = s.aimed.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return s
}

// counts returns the requests seen so far: the server queues every
// routed message to the spy before its answer to the spy's flush.
func (s *spyCatalogRequests) counts(t *testing.T) (broadcast, aimed int) {
	if err := s.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	b, _, _ := s.broadcast.Pending()
	a, _, _ := s.aimed.Pending()
	return b, a
}

// A new caller's first Catalog of 1,000 workers in 50 spec sets asks one
// worker of each set on its own subject, never the whole fleet: 50
// answers rather than 1,000, and complete.
func TestColdCatalogAsksOneWorkerPerSpecSet(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	newSimFleet(t, srv, "C", 1_000, 5, 50).register(t)
	spy := newSpyCatalogRequests(t, srv)
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	cat, err := c.Catalog().List(context.Background(), 0)
	if err != nil || !cat.Complete || cat.Workers != 1_000 || len(cat.Tools) != 250 {
		t.Fatalf("catalogue: %v, complete=%v, %d workers, %d tools %v", err, cat.Complete, cat.Workers, len(cat.Tools), cat.ScopeWarnings)
	}
	if b, a := spy.counts(t); b != 0 || a != 50 {
		t.Fatalf("the catalogue sent %d broadcasts and %d requests to single workers; want 0 and 50 (one per spec set)", b, a)
	}
}

// A spec set whose first worker stays silent is asked of its next one,
// and the catalogue is complete; a set whose only worker stays silent
// leaves the catalogue incomplete, naming that worker.
func TestCatalogAsksASetsNextWorker(t *testing.T) {
	cases := []struct {
		name     string
		specs    []byte // the silent worker's registered spec set
		complete bool
	}{
		{"a set's first worker silent", specSet(0, 2), true},
		{"a set's only worker silent", specSet(99, 2), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := meshtest.StartServer(t, embedded.Config{})
			f := newSimFleet(t, srv, "S", 4, 2, 2)
			f.register(t)
			// "A-silent" sorts before the fleet's S… ids: its set asks it first.
			b, _ := json.Marshal(wire.Beacon{WorkerID: "A-silent", State: wire.BeaconUp, IntervalMS: 1000, Specs: wire.SpecsDigest(tc.specs), RefreshMS: 600000})
			if _, err := f.kv.Put(context.Background(), "A-silent", b); err != nil {
				t.Fatal(err)
			}
			c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
			cat, err := c.Catalog().List(context.Background(), 0)
			if err != nil || cat.Complete != tc.complete {
				t.Fatalf("catalogue: %v, complete=%v, want %v %v", err, cat.Complete, tc.complete, cat.ScopeWarnings)
			}
			if tc.complete && cat.Workers != 5 {
				t.Fatalf("%d workers listed, want the 4 answering and the registered silent one of a set they gave", cat.Workers)
			}
			if !tc.complete && (cat.Workers != 4 || len(cat.ScopeWarnings) != 1 || !strings.Contains(cat.ScopeWarnings[0], "A-silent")) {
				t.Fatalf("%d workers, warnings %v: want the 4 answering and a warning naming A-silent", cat.Workers, cat.ScopeWarnings)
			}
		})
	}
}
