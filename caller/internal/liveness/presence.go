package liveness

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Presence is what a caller's presence subscription has seen.
type Presence struct {
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

// NewPresence returns an empty Presence.
func NewPresence() *Presence {
	return &Presence{workers: map[string]presenceWorker{}, named: map[string]map[string]bool{}, asked: map[string]time.Time{}}
}

// Repeat records a beacon equal to worker wid's last, and reports whether
// it was one.
func (pr *Presence) Repeat(wid string, data []byte, now time.Time) bool {
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

// Beacon records one beacon (raw, as it came): a goodbye forgets the
// worker.
func (pr *Presence) Beacon(b wire.Beacon, raw []byte, interval time.Duration, now time.Time) {
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

// Learn records that worker wid named a call of tool: its spec set hosts
// the tool.
func (pr *Presence) Learn(wid, tool string) {
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

// SpecLookup gives the spec set a digest names, when it is known (the
// caller's catalogue answers it, from what it has seen).
type SpecLookup func(digest string) ([]envelope.ToolSpec, bool)

// hosts says whether worker wid, giving spec set w.digest, hosts tool;
// pr.mu must be held. A pooled worker hosts only its pool's tools (§14.1).
func (pr *Presence) hosts(known SpecLookup, wid string, w presenceWorker, tool string) hostKnowledge {
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

// Suspects lists the workers whose beacons are overdue (more than one and
// a half of their intervals old) and that may host tool.
func (pr *Presence) Suspects(known SpecLookup, tool string, now time.Time) []string {
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

// GoneHost returns a worker among gone (found gone by a probe) that hosts
// tool, or "". It also returns the spec sets of gone workers that may
// host it but are unknown, each with the live workers giving it, to fetch.
func (pr *Presence) GoneHost(known SpecLookup, tool string, gone []string, now time.Time) (string, map[string][]string) {
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
func (pr *Presence) twins(digest string, gone []string, now time.Time) []string {
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

// Forget drops the workers not heard for 10 of their intervals and a
// minute: gone for good.
func (pr *Presence) Forget(now time.Time) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for wid, w := range pr.workers {
		if now.Sub(w.seen) > 10*w.interval+GoneMemory {
			delete(pr.workers, wid)
		}
	}
}
