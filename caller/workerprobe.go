package caller

import (
	"strconv"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// workerProbes are this caller's questions to workers that fell silent
// (protocol v2, §8.2). Silence alone does not prove a worker gone — a
// busy host can delay its heartbeats, or this caller's reading of them —
// so before ending a call worker_lost the caller asks the worker for its
// heartbeat now, with a reply subject of its own: a worker that is gone
// has no control subscription, and the server answers that subject 503 at
// once; a live one answers with a heartbeat on its calls' subjects.
type workerProbes struct {
	mu     sync.Mutex
	seq    uint64
	token  map[string]string    // worker id → the reply token of its probe
	worker map[string]string    // reply token → worker id
	sent   map[string]time.Time // worker id → when it was last probed
	goneAt map[string]time.Time // worker id → when its probe came back 503
	// hosting holds, per tool, the workers heard on its calls lately.
	hosting map[string]map[string]time.Time
}

// hostState is what the caller knows of the workers of one tool.
type hostState struct {
	alive bool // one was heard within the window
	gone  bool // one's probe came back 503
}

// hosts records that worker wid spoke on a call to tool.
func (w *workerProbes) hosts(tool, wid string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.hosting[tool]
	if m == nil {
		if len(w.hosting) >= maxToolsTracked {
			clear(w.hosting)
		}
		m = map[string]time.Time{}
		w.hosting[tool] = m
	}
	m[wid] = now
}

// maxToolsTracked bounds the tools whose workers a caller remembers.
const maxToolsTracked = 4096

// hostsOf says whether tool's workers were heard within window, and
// whether one of them is gone; workers not heard for 10 windows are
// forgotten.
func (w *workerProbes) hostsOf(tool string, now time.Time, window time.Duration) hostState {
	w.mu.Lock()
	defer w.mu.Unlock()
	var st hostState
	for wid, at := range w.hosting[tool] {
		if _, gone := w.goneAt[wid]; gone {
			st.gone = true
		}
		switch age := now.Sub(at); {
		case age <= window:
			st.alive = true
		case age > 10*window:
			delete(w.hosting[tool], wid)
		}
	}
	return st
}

func newWorkerProbes() *workerProbes {
	return &workerProbes{token: map[string]string{}, worker: map[string]string{},
		sent: map[string]time.Time{}, goneAt: map[string]time.Time{}, hosting: map[string]map[string]time.Time{}}
}

// goneMemory is how long a worker found gone is remembered.
const goneMemory = time.Minute

// probeTokenPrefix starts a probe's reply token: no call or batch id (an
// upper-case ULID) starts with it.
const probeTokenPrefix = "wp-"

// next makes the reply token of a new probe of worker wid, replacing its
// last one, or "" when wid was probed less than every ago.
func (w *workerProbes) next(wid string, now time.Time, every time.Duration) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.sent[wid]) < every {
		return ""
	}
	w.sent[wid] = now
	delete(w.worker, w.token[wid])
	w.seq++
	tok := probeTokenPrefix + strconv.FormatUint(w.seq, 36)
	w.token[wid], w.worker[tok] = tok, wid
	return tok
}

// gone takes a 503 on the reply token tok of a probe: the worker probed
// is gone. It returns when that probe was sent, and false when tok names
// no probe in flight.
func (w *workerProbes) gone(tok string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wid, ok := w.worker[tok]
	if !ok {
		return time.Time{}, false
	}
	w.goneAt[wid] = time.Now()
	return w.sent[wid], true
}

// isGone reports whether worker wid's probe came back 503.
func (w *workerProbes) isGone(wid string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.goneAt[wid]
	return ok
}

// keepOnly forgets every worker in neither set: state is held only for
// workers this caller has calls on or is probing.
func (w *workerProbes) keepOnly(live, probed map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wid := range w.sent {
		if !live[wid] && !probed[wid] {
			delete(w.worker, w.token[wid])
			delete(w.token, wid)
			delete(w.sent, wid)
		}
	}
	// A gone worker is remembered a while after its calls have ended: its
	// unread calls still tell on it (see Caller.judgeUnpicked).
	for wid, at := range w.goneAt {
		if time.Since(at) > goneMemory {
			delete(w.goneAt, wid)
		}
	}
}

// hostIDs lists the workers heard on tool lately that are not known gone.
func (w *workerProbes) hostIDs(tool string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for wid := range w.hosting[tool] {
		if _, gone := w.goneAt[wid]; !gone {
			ids = append(ids, wid)
		}
	}
	return ids
}

// probe asks worker wid for this caller's heartbeat now, at most once per
// interval.
func (c *Caller) probeWorker(wid string, now time.Time) {
	if !wire.ValidWorkerID(wid) {
		return
	}
	tok := c.probes.next(wid, now, c.cfg.Heartbeat)
	if tok == "" {
		return
	}
	ctl := wire.Control{Op: wire.OpBeat, CallerID: c.cfg.ID}
	if err := c.nc.PublishRequest(c.subjects.Control(wid), c.inbox+tok, ctl.Encode()); err != nil {
		c.log.Debug("worker probe not sent", "worker_id", wid, "err", err)
	}
}

// goneIDs lists the workers whose probe came back 503 lately.
func (w *workerProbes) goneIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.goneAt) == 0 {
		return nil
	}
	ids := make([]string, 0, len(w.goneAt))
	for wid := range w.goneAt {
		ids = append(ids, wid)
	}
	return ids
}
