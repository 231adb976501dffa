package liveness

import (
	"strconv"
	"sync"
	"time"
)

// Probes are a caller's questions to workers that fell silent
// (protocol v2, §8.2). Silence alone does not prove a worker gone — a
// busy host can delay its heartbeats, or this caller's reading of them —
// so before ending a call worker_lost the caller asks the worker for its
// heartbeat now, with a reply subject of its own: a worker that is gone
// has no control subscription, and the server answers that subject 503 at
// once; a live one answers with a heartbeat on its calls' subjects.
type Probes struct {
	mu     sync.Mutex
	seq    uint64
	token  map[string]string    // worker id → the reply token of its probe
	worker map[string]string    // reply token → worker id
	sent   map[string]time.Time // worker id → when it was last probed
	goneAt map[string]time.Time // worker id → when its probe came back 503
	// hosting holds, per tool, the workers heard on its calls lately.
	hosting map[string]map[string]time.Time
}

// HostState is what the caller knows of the workers of one tool.
type HostState struct {
	Alive bool // one was heard within the window
	Gone  bool // one's probe came back 503
}

// Hosts records that worker wid spoke on a call to tool.
func (w *Probes) Hosts(tool, wid string, now time.Time) {
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

// HostsOf says whether tool's workers were heard within window, and
// whether one of them is gone; workers not heard for 10 windows are
// forgotten.
func (w *Probes) HostsOf(tool string, now time.Time, window time.Duration) HostState {
	w.mu.Lock()
	defer w.mu.Unlock()
	var st HostState
	for wid, at := range w.hosting[tool] {
		if _, gone := w.goneAt[wid]; gone {
			st.Gone = true
		}
		switch age := now.Sub(at); {
		case age <= window:
			st.Alive = true
		case age > 10*window:
			delete(w.hosting[tool], wid)
		}
	}
	return st
}

// NewProbes returns an empty Probes.
func NewProbes() *Probes {
	return &Probes{token: map[string]string{}, worker: map[string]string{},
		sent: map[string]time.Time{}, goneAt: map[string]time.Time{}, hosting: map[string]map[string]time.Time{}}
}

// GoneMemory is how long a worker found gone is remembered.
const GoneMemory = time.Minute

// ProbeTokenPrefix starts a probe's reply token: no call or batch id (an
// upper-case ULID) starts with it.
const ProbeTokenPrefix = "wp-"

// Next makes the reply token of a new probe of worker wid, replacing its
// last one, or "" when wid was probed less than every ago.
func (w *Probes) Next(wid string, now time.Time, every time.Duration) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.sent[wid]) < every {
		return ""
	}
	w.sent[wid] = now
	delete(w.worker, w.token[wid])
	w.seq++
	tok := ProbeTokenPrefix + strconv.FormatUint(w.seq, 36) + unguessable()
	w.token[wid], w.worker[tok] = tok, wid
	return tok
}

// Gone takes a 503 on the reply token tok of a probe: the worker probed
// is gone. It returns when that probe was sent, and false when tok names
// no probe in flight.
func (w *Probes) Gone(tok string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wid, ok := w.worker[tok]
	if !ok {
		return time.Time{}, false
	}
	w.goneAt[wid] = time.Now()
	return w.sent[wid], true
}

// IsGone reports whether worker wid's probe came back 503.
func (w *Probes) IsGone(wid string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.goneAt[wid]
	return ok
}

// KeepOnly forgets every worker in neither set: state is held only for
// workers this caller has calls on or is probing.
func (w *Probes) KeepOnly(live, probed map[string]bool) {
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
	// unread calls still tell on it (the caller judges its unpicked calls by them).
	for wid, at := range w.goneAt {
		if time.Since(at) > GoneMemory {
			delete(w.goneAt, wid)
		}
	}
}

// HostIDs lists the workers heard on tool lately that are not known gone.
func (w *Probes) HostIDs(tool string) []string {
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

// GoneIDs lists the workers whose probe came back 503 lately.
func (w *Probes) GoneIDs() []string {
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

// HostCount is how many workers not known gone were heard on tool's
// calls since since.
func (w *Probes) HostCount(tool string, since time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for wid, at := range w.hosting[tool] {
		if _, gone := w.goneAt[wid]; !gone && !at.Before(since) {
			n++
		}
	}
	return n
}
