package tests

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// fleetSizes are the simulated fleets the Watch and catalogue CPU
// benchmarks run at: 1,000 workers, and with TOOLMESH_BIG_FLEET=1 5,000 as
// well (minutes of a 2-core box), or the sizes it lists ("5000,10000").
func fleetSizes(tb testing.TB) []int {
	sizes := []int{1_000}
	switch big := os.Getenv("TOOLMESH_BIG_FLEET"); big {
	case "":
	case "1":
		sizes = append(sizes, 5_000)
	default:
		for _, f := range strings.Split(big, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				tb.Fatalf("TOOLMESH_BIG_FLEET=%q: want 1 or fleet sizes separated by commas", big)
			}
			sizes = append(sizes, n)
		}
	}
	return sizes
}

// beaconTick is how often the simulated fleet publishes a share of its
// beacons; each worker beacons once per interval, in its own slot.
const beaconTick = 10 * time.Millisecond

// beaconer publishes every live simulated worker's up beacon once per
// interval, spread evenly over it as real workers' are.
type beaconer struct {
	f     *simFleet
	mu    sync.Mutex
	slots [][]string     // tick slot → the workers beaconing in it
	slot  map[string]int // worker → its slot
	now   int            // the slot published last
}

func newBeaconer(f *simFleet, interval time.Duration) *beaconer {
	bc := &beaconer{f: f, slots: make([][]string, max(int(interval/beaconTick), 1)), slot: map[string]int{}}
	for i, id := range f.order {
		bc.slots[i%len(bc.slots)] = append(bc.slots[i%len(bc.slots)], id)
		bc.slot[id] = i % len(bc.slots)
	}
	return bc
}

// run beacons until ctx ends; done is closed when it has returned.
func (bc *beaconer) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(beaconTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		bc.mu.Lock()
		bc.now = (bc.now + 1) % len(bc.slots)
		ids := slices.Clone(bc.slots[bc.now])
		bc.mu.Unlock()
		for _, id := range ids {
			_ = bc.f.nc.Publish(wire.Subjects{}.Presence(id), bc.f.beacon(id))
		}
	}
}

// ready is worker id's READY as Worker.Announce makes it: its registry
// key written, its first beacon sent, both confirmed by the server; from
// then on it beacons every interval.
func (bc *beaconer) ready(ctx context.Context, id string) error {
	if _, err := bc.f.kv.Put(ctx, id, bc.f.beacon(id)); err != nil {
		return err
	}
	if err := bc.f.nc.Publish(wire.Subjects{}.Presence(id), bc.f.beacon(id)); err != nil {
		return err
	}
	if err := bc.f.nc.FlushWithContext(ctx); err != nil {
		return err
	}
	bc.mu.Lock()
	defer bc.mu.Unlock()
	bc.slot[id] = bc.now
	bc.slots[bc.now] = append(bc.slots[bc.now], id)
	return nil
}

// kill stops worker id's beacons without a goodbye (a kill -9).
func (bc *beaconer) kill(id string) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	s, ok := bc.slot[id]
	if !ok {
		return
	}
	delete(bc.slot, id)
	bc.slots[s] = slices.DeleteFunc(bc.slots[s], func(x string) bool { return x == id })
}

// watchFeed runs one Watch into a channel until its context ends.
type watchFeed struct {
	changes chan catalog.Change
	err     chan error
	done    chan struct{}
}

// startWatch follows c's live catalogue on a goroutine of its own; the
// feed is closed (done) once ctx ends and Watch has returned.
func startWatch(ctx context.Context, c *caller.Caller) *watchFeed {
	w := &watchFeed{changes: make(chan catalog.Change, 1<<16), err: make(chan error, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ch, err := range c.Catalog().Watch(ctx) {
			if err != nil {
				w.err <- err
				return
			}
			select {
			case w.changes <- ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return w
}

// await reads changes until every tool in want has last been reported
// as want says (added or removed), and returns when that was; it fails
// when ctx ends first (a deadline, so a lost change cannot hang the run).
func (w *watchFeed) await(ctx context.Context, want map[string]catalog.ChangeKind) (time.Time, error) {
	missing := len(want)
	state := map[string]catalog.ChangeKind{}
	for missing > 0 {
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d of %d tools not yet %v: %w", missing, len(want), want, ctx.Err())
		case err := <-w.err:
			return time.Time{}, fmt.Errorf("watch ended: %w", err)
		case ch := <-w.changes:
			name, kind := ch.Tool.Spec.Name, ch.Kind
			if kind == catalog.ToolChanged {
				kind = catalog.ToolAdded
			}
			target, ok := want[name]
			if !ok {
				continue
			}
			was := state[name] == target
			state[name] = kind
			switch is := kind == target; {
			case is && !was:
				missing--
			case was && !is:
				missing++
			}
		}
	}
	return time.Now(), nil
}

// watchRig is a simulated fleet beaconing every interval, one watcher
// following it, and joiners: workers with tools of their own, not yet
// ready.
type watchRig struct {
	f        *simFleet
	bc       *beaconer
	feed     *watchFeed
	interval time.Duration
	started  time.Time // when Watch was started
	joiners  []string
	tools    map[string][]string // joiner → its tool names
}

// newWatchRig starts workers simulated workers of 5 tools in 500 spec
// sets, registered and beaconing every interval (they claim 1 s, which a
// shorter interval only beats), and a watcher; joiners more are
// prepared, each claiming interval and hosting 5 tools no other worker
// hosts. Everything stops, in order, when the test ends.
func newWatchRig(tb testing.TB, workers, joiners int, interval time.Duration) *watchRig {
	srv := meshtest.StartServer(tb, embedded.Config{})
	r := &watchRig{f: newSimFleet(tb, srv, "W", workers, 5, 500), interval: interval, tools: map[string][]string{}}
	for j := range joiners {
		id := fmt.Sprintf("J%05d", j)
		r.f.add(id, specSet(1_000_000+j, 5), interval)
		r.joiners = append(r.joiners, id)
		for i := range 5 {
			r.tools[id] = append(r.tools[id], fmt.Sprintf("ns%d.tool%d", 1_000_000+j, i))
		}
	}
	r.f.register(tb)
	ctx, cancel := context.WithCancel(context.Background())
	r.bc = newBeaconer(r.f, interval)
	beaconsDone := make(chan struct{})
	go r.bc.run(ctx, beaconsDone)
	c := meshtest.NewCaller(tb, meshtest.Connect(tb, srv), caller.Config{Heartbeat: interval})
	r.started = time.Now()
	r.feed = startWatch(ctx, c)
	tb.Cleanup(func() {
		cancel()
		<-beaconsDone
		<-r.feed.done
	})
	return r
}

// toolsWant is every one of names expected as kind.
func toolsWant(names []string, kind catalog.ChangeKind) map[string]catalog.ChangeKind {
	want := map[string]catalog.ChangeKind{}
	for _, n := range names {
		want[n] = kind
	}
	return want
}

// allFleetTools waits until Watch has shown every tool of the fleet's
// spec sets, and returns how long that took from Watch's start.
func (r *watchRig) allFleetTools(ctx context.Context) (time.Duration, error) {
	var names []string
	for set := range min(500, len(r.f.order)) {
		for i := range 5 {
			names = append(names, fmt.Sprintf("ns%d.tool%d", set, i))
		}
	}
	at, err := r.feed.await(ctx, toolsWant(names, catalog.ToolAdded))
	return at.Sub(r.started), err
}

// joinAndKill makes joiner id ready, waits until Watch shows its tools,
// kills it phase past its first beacon after READY (a kill lands anywhere
// between two beacons), and waits until Watch shows them gone: the two
// latencies, from READY's return and from the kill.
func (r *watchRig) joinAndKill(ctx context.Context, id string, phase time.Duration) (seen, gone time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*r.interval)
	defer cancel()
	if err := r.bc.ready(ctx, id); err != nil {
		return 0, 0, err
	}
	ready := time.Now()
	at, err := r.feed.await(ctx, toolsWant(r.tools[id], catalog.ToolAdded))
	if err != nil {
		return 0, 0, fmt.Errorf("joiner %s: %w", id, err)
	}
	seen = at.Sub(ready)
	select { // not a synchronisation: where between two beacons the kill lands
	case <-time.After(time.Until(ready.Add(r.interval + phase))):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	r.bc.kill(id)
	killed := time.Now()
	at, err = r.feed.await(ctx, toolsWant(r.tools[id], catalog.ToolRemoved))
	if err != nil {
		return 0, 0, fmt.Errorf("killed %s: %w", id, err)
	}
	return seen, at.Sub(killed), nil
}

// At fleet scale Watch shows a new worker's tools once it is ready and
// shows them gone once it is killed without a goodbye (200 workers
// beaconing every 200 ms; no figure asserted: BenchmarkWatchFleet
// measures how soon).
func TestWatchSeesJoinAndKillAtFleetScale(t *testing.T) {
	r := newWatchRig(t, 200, 2, 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := r.allFleetTools(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range r.joiners {
		if _, _, err := r.joinAndKill(ctx, id, r.interval/3); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkWatchFleet measures, at 1,000 simulated workers beaconing
// every second (more with TOOLMESH_BIG_FLEET, see fleetSizes), how long Watch
// takes to show the whole fleet from its start, and per round (one op)
// how long after a new worker's READY it shows all its tools and how long
// after that worker's kill -9 (at a phase between two of its beacons
// that varies by round) it shows them gone: medians (and maxima) over the
// rounds, in milliseconds and in heartbeat intervals (the target: a new
// worker within 2 intervals).
//
//	go test -run '^$' -bench BenchmarkWatchFleet -benchtime 5x ./tests/
func BenchmarkWatchFleet(b *testing.B) {
	for _, workers := range fleetSizes(b) {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			r := newWatchRig(b, workers, 64, time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			all, err := r.allFleetTools(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var seen, gone []time.Duration
			n := 0
			for b.Loop() {
				if n == len(r.joiners) {
					b.Fatalf("more rounds than the %d joiners prepared; use -benchtime Nx", len(r.joiners))
				}
				s, g, err := r.joinAndKill(ctx, r.joiners[n], r.interval*time.Duration(n*3%8)/8)
				if err != nil {
					b.Fatal(err)
				}
				seen, gone = append(seen, s), append(gone, g)
				n++
			}
			b.ReportMetric(float64(all.Milliseconds()), "ms_all_tools")
			b.ReportMetric(float64(median(seen).Milliseconds()), "ms_new_seen")
			b.ReportMetric(float64(median(seen))/float64(r.interval), "intervals_new_seen")
			b.ReportMetric(float64(median(gone).Milliseconds()), "ms_killed_gone")
			b.ReportMetric(float64(median(gone))/float64(r.interval), "intervals_killed_gone")
			b.ReportMetric(float64(slices.Max(seen))/float64(r.interval), "intervals_new_seen_max")
			b.ReportMetric(float64(slices.Max(gone))/float64(r.interval), "intervals_killed_gone_max")
			b.Logf("workers=%d rounds=%d new seen %v, killed gone %v", workers, n, seen, gone)
		})
	}
}

// median is the middle of ds (the upper of the two middles), 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
