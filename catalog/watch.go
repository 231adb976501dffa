package catalog

import (
	"context"
	"iter"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// ChangeKind says what happened to a tool in the live catalogue.
type ChangeKind string

// The three kinds of catalogue change.
const (
	// ToolAdded: the first worker hosting the tool appeared.
	ToolAdded ChangeKind = "added"
	// ToolRemoved: the last worker hosting the tool drained, stopped or died.
	ToolRemoved ChangeKind = "removed"
	// ToolChanged: the tool's spec or the set of workers hosting it changed.
	ToolChanged ChangeKind = "changed"
)

// Change is one change of the live catalogue: the tool as it is
// now (as it was last, for ToolRemoved).
type Change struct {
	Kind ChangeKind
	Tool Tool
}

// Watch follows the live catalogue of the tools this identity
// may call (see List): it first yields every tool already present as
// added, then one change per tool whenever a worker joins,
// changes its tools, drains or dies. Workers announce themselves every
// heartbeat interval on their presence subject and say goodbye when they
// drain or stop; a worker silent for 3 of its intervals
// (kill -9, a lost host) is gone. The sequence ends when ctx ends or the
// consumer stops; an error (a Problem) is yielded once and ends it.
// Workers that give different specs for one name are shown as List
// shows them: the spec most of them give, the others in
// Tool.Conflicts (a change of its own when one appears or goes).
//
// Cost: one presence beacon (~100 bytes) per worker per interval, handled
// in O(1) when nothing changed; a change costs one request to the one
// worker concerned and O(its tools) bookkeeping.
func (c *Catalog) Watch(ctx context.Context) iter.Seq2[Change, error] {
	return func(yield func(Change, error) bool) {
		beacons := make(chan *nats.Msg, 8192)
		sub, err := c.nc.ChanSubscribe(c.subjects.PresenceAll(), beacons)
		if err != nil {
			yield(Change{}, c.problems.New(envelope.CodeConnectionLost, err.Error()))
			return
		}
		// The channel bounds what waits unread; past it NATS drops beacons,
		// which costs nothing but a refresh: every worker beacons again.
		defer func() { _ = sub.Unsubscribe() }()
		v := newLiveView(c.cfg.Heartbeat)
		// Seeded from the catalogue: the registry when there is one (the
		// whole fleet in one pass), else a short gather.
		entries, _, _, err := c.entries(ctx, innerRegistryWait, innerGatherWait)
		if err != nil {
			yield(Change{}, err)
			return
		}
		now := time.Now()
		for _, w := range entries {
			v.setWorker(w.WorkerID, -1, now, wire.BeaconInterval(w.IntervalMS, v.interval), w.Tools)
		}
		if !v.flush(yield) {
			return
		}
		c.followPresence(ctx, v, beacons, yield)
	}
}

// maxFetches bounds the workers whose tools Watch fetches at once, so a
// flood of beacons naming workers that never answer (a hostile publisher)
// costs bounded goroutines and never stalls the view.
const maxFetches = 256

// fetched is the outcome of fetching one worker's tools.
type fetched struct {
	token    uint64
	beacon   wire.Beacon
	interval time.Duration
	tools    []envelope.ToolSpec
	access   *access // what the identity may call, decided for tools
	err      error
}

// follower applies beacons, fetch results and expiries to a live view,
// keeping only the tools this identity may call (tenantview.go).
type follower struct {
	c        *Catalog
	v        *liveView
	results  chan fetched
	inflight map[string]uint64 // worker id → token of its fetch in flight
	tokens   uint64
}

// followPresence applies beacons and expiries to v until ctx ends.
func (c *Catalog) followPresence(ctx context.Context, v *liveView, beacons chan *nats.Msg, yield func(Change, error) bool) {
	f := &follower{c: c, v: v, results: make(chan fetched, maxFetches), inflight: map[string]uint64{}}
	tick := time.NewTicker(max(v.interval/2, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			v.expire(now)
		case r := <-f.results:
			f.land(r)
		case m := <-beacons:
			// A beacon counts only on its own worker's subject, which the
			// operator's permissions bind to the worker's pool (§13.2):
			// one naming another worker (another pool's, say, as gone)
			// is not that worker's word.
			b, err := wire.ParseBeacon(m.Data)
			if err != nil || b.WorkerID == "" || m.Subject != c.subjects.Presence(b.WorkerID) {
				continue
			}
			f.apply(ctx, b)
		}
		if !v.flush(yield) {
			return
		}
	}
}

// apply records one beacon, starting a fetch of the worker's tools when
// they are new to the view or have changed.
func (f *follower) apply(ctx context.Context, b wire.Beacon) {
	interval := wire.BeaconInterval(b.IntervalMS, f.v.interval)
	if b.State == wire.BeaconGone {
		delete(f.inflight, b.WorkerID) // a fetch still out must not bring it back
		f.v.dropWorker(b.WorkerID)
		return
	}
	if f.v.heard(b, time.Now(), interval) {
		return
	}
	if specs, ok := f.c.specs.get(b.Specs); ok && b.Specs != "" {
		if a := f.c.current(); a.decided(specs) {
			// A spec set already known (a replica's), whose tools the
			// view has decided on: nothing to fetch or ask.
			delete(f.inflight, b.WorkerID)
			f.v.setWorker(b.WorkerID, b.Revision, time.Now(), interval, visibleSpecs(specs, a.may))
			return
		}
	}
	if _, out := f.inflight[b.WorkerID]; out || len(f.inflight) >= maxFetches {
		return // its next beacon tries again
	}
	f.tokens++
	token := f.tokens
	f.inflight[b.WorkerID] = token
	go func() {
		r := fetched{token: token, beacon: b, interval: interval}
		// The watcher's own interval bounds the fetch, not the one the
		// beacon claims: a worker cannot hold a fetch slot for long.
		r.tools, r.err = f.c.workerTools(ctx, b.WorkerID, wire.MissedBeats*f.v.interval)
		if r.err == nil {
			r.access, r.err = f.c.decide(ctx, toolNames(r.tools))
		}
		select {
		case f.results <- r:
		case <-ctx.Done():
		}
	}()
}

// land applies a fetch's outcome, unless the worker left meanwhile.
func (f *follower) land(r fetched) {
	id := r.beacon.WorkerID
	if f.inflight[id] != r.token {
		return
	}
	delete(f.inflight, id)
	if r.err != nil {
		f.c.log.Debug("watch: worker's tools not fetched; retrying on its next beacon", "worker_id", id, "err", r.err)
		return
	}
	f.v.setWorker(id, r.beacon.Revision, time.Now(), r.interval, visibleSpecs(r.tools, r.access.may))
}

// toolNames lists the names of specs.
func toolNames(specs []envelope.ToolSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// workerTools asks one worker for its specs.
func (c *Catalog) workerTools(ctx context.Context, workerID string, wait time.Duration) ([]envelope.ToolSpec, error) {
	e, err := c.askWorker(ctx, workerID, wait)
	e, dropped := inScope(e)
	for _, w := range dropped {
		c.log.Warn("watch: "+w, "worker_id", workerID)
	}
	return e.Tools, err
}

// liveView is Watch's state: the workers heard from and, per tool, who
// hosts it; dirty names the tools to report on the next flush.
type liveView struct {
	interval time.Duration
	workers  map[string]*viewWorker
	hosts    map[string]map[string]bool // tool → worker ids
	shown    map[string]Tool            // tool → as last yielded
	dirty    map[string]bool
}

type viewWorker struct {
	revision int64 // -1: not yet known (seeded from the catalogue)
	lastSeen time.Time
	interval time.Duration
	tools    map[string]envelope.ToolSpec
}

func newLiveView(interval time.Duration) *liveView {
	return &liveView{interval: interval, workers: map[string]*viewWorker{}, hosts: map[string]map[string]bool{},
		shown: map[string]Tool{}, dirty: map[string]bool{}}
}

func (v *liveView) setWorker(id string, revision int64, now time.Time, interval time.Duration, specs []envelope.ToolSpec) {
	v.dropWorker(id)
	w := &viewWorker{revision: revision, lastSeen: now, interval: interval, tools: make(map[string]envelope.ToolSpec, len(specs))}
	for _, s := range specs {
		w.tools[s.Name] = s
		if v.hosts[s.Name] == nil {
			v.hosts[s.Name] = map[string]bool{}
		}
		v.hosts[s.Name][id] = true
		v.dirty[s.Name] = true
	}
	v.workers[id] = w
}

func (v *liveView) dropWorker(id string) {
	w, ok := v.workers[id]
	if !ok {
		return
	}
	delete(v.workers, id)
	for name := range w.tools {
		delete(v.hosts[name], id)
		if len(v.hosts[name]) == 0 {
			delete(v.hosts, name)
		}
		v.dirty[name] = true
	}
}

// heard records a beacon of a worker whose tools the view already has; it
// reports false when the tools must be fetched (a new worker, or a new
// revision). This is the steady-state path: O(1), no allocation.
func (v *liveView) heard(b wire.Beacon, now time.Time, interval time.Duration) bool {
	w, ok := v.workers[b.WorkerID]
	if !ok || (w.revision != b.Revision && w.revision != -1) {
		return false
	}
	w.lastSeen, w.interval, w.revision = now, interval, b.Revision
	return true
}

// expire drops the workers silent for MissedBeats of their intervals.
func (v *liveView) expire(now time.Time) {
	for id, w := range v.workers {
		if now.Sub(w.lastSeen) > wire.MissedBeats*w.interval {
			v.dropWorker(id)
		}
	}
}

// tool returns name as the fleet now hosts it; ok is false when nobody
// does. Workers that give different specs for the name are a conflict,
// shown as List shows one (see catalogTool): the spec most of them
// give is the tool's, every other is in Conflicts — never the spec of
// whichever worker sorts first.
func (v *liveView) tool(name string) (Tool, bool) {
	hosts := v.hosts[name]
	if len(hosts) == 0 {
		return Tool{}, false
	}
	var variants []*Variant
	for id := range hosts {
		s := v.workers[id].tools[name]
		i := slices.IndexFunc(variants, func(tv *Variant) bool { return sameSpec(tv.Spec, s) })
		if i < 0 {
			i = len(variants)
			variants = append(variants, &Variant{Spec: s})
		}
		variants[i].Workers = append(variants[i].Workers, id)
	}
	byKey := make(map[string]*Variant, len(variants))
	for i, tv := range variants {
		byKey[strconv.Itoa(i)] = tv
	}
	return catalogTool(byKey), true
}

// sameSpec reports whether two workers give the same spec: of one
// wire.SpecDigest, as Catalog compares them, checked first for equal
// values, the common case of replicas sharing one spec set.
func sameSpec(a, b envelope.ToolSpec) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	da := wire.SpecDigest(a)
	return da != "" && da == wire.SpecDigest(b)
}

// flush yields one change per dirty tool, in name order; false when the
// consumer stopped.
func (v *liveView) flush(yield func(Change, error) bool) bool {
	names := make([]string, 0, len(v.dirty))
	for n := range v.dirty {
		names = append(names, n)
	}
	clear(v.dirty)
	sort.Strings(names)
	for _, n := range names {
		before, was := v.shown[n]
		now, is := v.tool(n)
		var ch Change
		switch {
		case is && !was:
			ch = Change{Kind: ToolAdded, Tool: now}
		case was && !is:
			ch = Change{Kind: ToolRemoved, Tool: before}
		case is && !reflect.DeepEqual(before, now):
			ch = Change{Kind: ToolChanged, Tool: now}
		default:
			continue
		}
		if is {
			v.shown[n] = now
		} else {
			delete(v.shown, n)
		}
		if !yield(ch, nil) {
			return false
		}
	}
	return true
}
