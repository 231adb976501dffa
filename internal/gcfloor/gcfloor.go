package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// minHeap is the runtime's smallest heap goal at GOGC=100 (it scales with
// GOGC, so the GOGC a floor sets never puts the minimum above the floor).
const minHeap = 4 << 20

// The runtime's heap goal is live + (live + stacks + globals) × GOGC/100
// — the heap the last collection marked live, and the stacks and globals
// it scanned — and at least minHeap × GOGC/100.
var goalMetrics = [...]string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// Floor raises GOGC after every collection so that the next heap goal is
// at least its size; Stop puts GOGC back.
type Floor struct {
	bytes uint64
	base  int // GOGC when the floor started

	mu      sync.Mutex
	percent int // GOGC last set
	stopped bool
}

// sentinel is the object whose collection says a cycle has ended: large
// enough, and with a pointer, that it is never batched with other tiny
// objects (whose cleanups may never run).
type sentinel struct {
	_ *Floor
	_ [24]byte
}

// Start keeps the heap goal at least bytes until Stop. It returns nil —
// and changes nothing — when bytes is 0, when the GOGC environment
// variable is set (the operator's choice wins) or when collection is off.
// GOGC is the process's own setting, so start one Floor per process: two
// would each set it after the other's collections.
func Start(bytes uint64) *Floor {
	if bytes == 0 || os.Getenv("GOGC") != "" {
		return nil
	}
	base := debug.SetGCPercent(-1)
	debug.SetGCPercent(base)
	if base < 0 {
		return nil
	}
	f := &Floor{bytes: bytes, base: base, percent: base}
	f.tune()
	f.arm()
	return f
}

// Stop ends the floor and restores GOGC as it was when the floor started.
// A nil Floor (Start changed nothing) stops without doing anything.
func (f *Floor) Stop() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	debug.SetGCPercent(f.base)
}

// arm registers a cleanup that runs once the next collection finds a new
// sentinel unreachable: it re-tunes and arms again, so the floor follows
// the live heap cycle by cycle.
func (f *Floor) arm() {
	runtime.AddCleanup(new(sentinel), func(f *Floor) {
		if f.tune() {
			f.arm()
		}
	}, f)
}

// tune sets GOGC so that the next goal is the floor, never below the
// GOGC the process started with; false once the floor was stopped.
func (f *Floor) tune() bool {
	var samples [len(goalMetrics)]metrics.Sample
	for i, name := range goalMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples[:])
	live, stacks, globals := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
	percent := Percent(f.bytes, live, live+stacks+globals, f.base)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	if percent != f.percent {
		debug.SetGCPercent(percent)
		f.percent = percent
	}
	return true
}

// Percent is the GOGC that puts the runtime's heap goal — the larger of
// live + scanned × GOGC/100 and minHeap × GOGC/100 — at floor bytes, and
// base when that is higher. scanned is the live heap plus the stacks and
// globals the last collection scanned.
func Percent(floor, live, scanned uint64, base int) int {
	if live == 0 || scanned == 0 || floor <= live {
		return base
	}
	p := min((floor-live)*100/scanned, floor*100/minHeap)
	return max(int(min(p, 1<<30)), base)
}
