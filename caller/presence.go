package caller

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh"
)

// Finding a dead worker that never spoke to this caller (protocol v2,
// §8.2). A call the server handed to a worker that then died unread is
// named by nobody; the caller can end it, unrun, once it knows a worker
// of the tool is gone — but the workers it has heard on a tool are only
// those that answered its own calls. So the caller also follows the
// workers' presence beacons (§14.3): a worker whose beacons stop while
// calls of a tool it may host wait unnamed is probed (§8.2, a beat with
// a reply subject), and its 503 says it is gone. Which tools a worker
// hosts comes from its beacon's spec-set digest: a digest's tools are
// known when a worker giving it named a call of the tool, or from the
// spec sets the caller's catalogue has seen (List, Watch), or, for a worker found gone
// whose set is unknown, fetched from a live worker giving the same set.

// presence is what this caller's presence subscription has seen.
type presence struct {
	mu      sync.Mutex
	workers map[string]presenceWorker
	// named holds, per spec-set digest, the tools whose calls a worker
	// giving that set has named.
	named map[string]map[string]bool
	// asked is when each digest's spec set was last fetched.
	asked map[string]time.Time
}

// presenceWorker is one worker as its beacons show it.
type presenceWorker struct {
	digest   string
	interval time.Duration
	seen     time.Time
	raw      []byte // the beacon as it came: an equal one needs no decode
}

// maxPresence bounds the workers (and spec sets) a caller remembers.
const maxPresence = 4096

func newPresence() *presence {
	return &presence{workers: map[string]presenceWorker{}, named: map[string]map[string]bool{}, asked: map[string]time.Time{}}
}

// subscribePresence follows the workers' beacons. A worker repeats the
// same beacon every interval until its tools change, so a beacon equal
// to the worker's last costs a map lookup, not a decode: a caller in a
// fleet of thousands of workers pays little for following them. A beacon
// counts only on its own worker's subject, which the operator's
// permissions bind to the worker's pool (§13.2).
func (c *Caller) subscribePresence() (*nats.Subscription, error) {
	root := c.subjects.Presence("")
	return c.nc.Subscribe(c.subjects.PresenceAll(), func(m *nats.Msg) {
		wid, ok := strings.CutPrefix(m.Subject, root)
		now := time.Now()
		if !ok || c.presence.repeat(wid, m.Data, now) {
			return
		}
		b, err := wire.ParseBeacon(m.Data)
		if err != nil || b.WorkerID != wid || !wire.ValidWorkerID(wid) {
			return
		}
		c.presence.beacon(b, m.Data, wire.BeaconInterval(b.IntervalMS, c.cfg.Heartbeat), now)
	})
}

// repeat records a beacon equal to worker wid's last, and reports whether
// it was one.
func (pr *presence) repeat(wid string, data []byte, now time.Time) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	w, ok := pr.workers[wid]
	if !ok || !bytes.Equal(w.raw, data) {
		return false
	}
	w.seen = now
	pr.workers[wid] = w
	return true
}

// beacon records one beacon (raw, as it came): a goodbye forgets the
// worker.
func (pr *presence) beacon(b wire.Beacon, raw []byte, interval time.Duration, now time.Time) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if b.State == wire.BeaconGone {
		delete(pr.workers, b.WorkerID)
		return
	}
	if _, known := pr.workers[b.WorkerID]; !known && len(pr.workers) >= maxPresence {
		return
	}
	pr.workers[b.WorkerID] = presenceWorker{digest: b.Specs, interval: interval, seen: now, raw: bytes.Clone(raw)}
}

// learn records that worker wid named a call of tool: its spec set hosts
// the tool.
func (pr *presence) learn(wid, tool string) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	w, ok := pr.workers[wid]
	if !ok || w.digest == "" || pr.named[w.digest][tool] {
		return
	}
	if pr.named[w.digest] == nil {
		if len(pr.named) >= maxPresence {
			clear(pr.named)
		}
		pr.named[w.digest] = map[string]bool{}
	}
	pr.named[w.digest][tool] = true
}

// hostKnowledge is what the caller knows of whether a worker hosts a tool.
type hostKnowledge int

const (
	hostsNot hostKnowledge = iota
	hostsYes
	hostsUnknown
)

// specLookup gives the spec set a digest names, when it is known.
type specLookup func(digest string) ([]envelope.ToolSpec, bool)

// knownSet is the spec set digest names, when the caller's catalogue has
// seen it: a lookup, never a request.
func (c *Caller) knownSet(digest string) ([]envelope.ToolSpec, bool) {
	specs, err := c.cat.SpecSet(context.Background(), digest)
	return specs, err == nil
}

// hosts says whether worker wid, giving spec set w.digest, hosts tool;
// pr.mu must be held. A pooled worker hosts only its pool's tools (§14.1).
func (pr *presence) hosts(known specLookup, wid string, w presenceWorker, tool string) hostKnowledge {
	if pool := wire.PoolOf(wid); pool != "" && !strings.HasPrefix(tool, pool+".") {
		return hostsNot
	}
	if pr.named[w.digest][tool] {
		return hostsYes
	}
	if w.digest == "" {
		return hostsUnknown
	}
	specs, ok := known(w.digest)
	switch {
	case !ok:
		return hostsUnknown
	case slices.ContainsFunc(specs, func(s envelope.ToolSpec) bool { return s.Name == tool }):
		return hostsYes
	}
	return hostsNot
}

// suspects lists the workers whose beacons are overdue (more than one and
// a half of their intervals old) and that may host tool.
func (pr *presence) suspects(known specLookup, tool string, now time.Time) []string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var ids []string
	for wid, w := range pr.workers {
		if now.Sub(w.seen) > w.interval*3/2 && pr.hosts(known, wid, w, tool) != hostsNot {
			ids = append(ids, wid)
		}
	}
	return ids
}

// goneHost returns a worker among gone (found gone by a probe) that hosts
// tool, or "". It also returns the spec sets of gone workers that may
// host it but are unknown, each with the live workers giving it, to fetch.
func (pr *presence) goneHost(known specLookup, tool string, gone []string, now time.Time) (string, map[string][]string) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var fetch map[string][]string
	for _, wid := range gone {
		w, ok := pr.workers[wid]
		if !ok {
			continue
		}
		switch pr.hosts(known, wid, w, tool) {
		case hostsYes:
			return wid, nil
		case hostsUnknown:
			if w.digest != "" && now.Sub(pr.asked[w.digest]) > 10*w.interval {
				fetch = addTwins(fetch, w.digest, pr.twins(w.digest, gone, now))
			}
		}
	}
	for d := range fetch {
		if len(pr.asked) >= maxPresence {
			clear(pr.asked)
		}
		pr.asked[d] = now
	}
	return "", fetch
}

// addTwins adds digest's live workers to fetch, when it has any.
func addTwins(fetch map[string][]string, digest string, twins []string) map[string][]string {
	if len(twins) == 0 {
		return fetch
	}
	if fetch == nil {
		fetch = map[string][]string{}
	}
	fetch[digest] = twins
	return fetch
}

// twins lists up to three workers giving digest that beaconed within
// their interval and are not gone; pr.mu must be held.
func (pr *presence) twins(digest string, gone []string, now time.Time) []string {
	var ids []string
	for wid, w := range pr.workers {
		if w.digest == digest && now.Sub(w.seen) <= w.interval && !slices.Contains(gone, wid) {
			if ids = append(ids, wid); len(ids) == 3 {
				break
			}
		}
	}
	return ids
}

// forget drops the workers not heard for 10 of their intervals and a
// minute: gone for good.
func (pr *presence) forget(now time.Time) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for wid, w := range pr.workers {
		if now.Sub(w.seen) > 10*w.interval+goneMemory {
			delete(pr.workers, wid)
		}
	}
}

// fetchSets fetches, in the background, the spec sets of fetch (digest →
// live workers giving it) into the catalogue's spec cache, bounded by MissedBeats
// intervals and by the caller's life.
func (c *Caller) fetchSets(fetch map[string][]string) {
	for digest, twins := range fetch {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), mesh.MissedBeats*c.cfg.Heartbeat)
			defer cancel()
			go func() {
				select {
				case <-c.done:
					cancel()
				case <-ctx.Done():
				}
			}()
			if _, err := c.cat.SpecSet(ctx, digest, twins...); err != nil {
				c.log.Debug("spec set of a gone worker not fetched", "specs", digest, "err", err)
			}
		}()
	}
}

// silentHost returns a worker of tool that this caller saw beaconing and
// found gone (its beacons stopped, its probe came back 503), or "";
// spec sets it needs to know and does not are fetched meanwhile.
func (c *Caller) silentHost(tool string, now time.Time) string {
	gone := c.probes.goneIDs()
	if len(gone) == 0 {
		return ""
	}
	wid, fetch := c.presence.goneHost(c.knownSet, tool, gone, now)
	c.fetchSets(fetch)
	return wid
}
