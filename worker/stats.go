package worker

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/fleet"
)

// loadStats keeps what a fleet view needs of one tool beyond the ADR-32
// counters: calls in flight, errors by code and a latency histogram. It is
// served as the Data of the tool's endpoint in $SRV.STATS (fleet.ToolLoad).
// The zero value is ready to use.
type loadStats struct {
	mu       sync.Mutex
	inFlight int64
	byCode   map[string]int64
	latency  fleet.Histogram
}

// begin counts a call admitted to run.
func (l *loadStats) begin() {
	l.mu.Lock()
	l.inFlight++
	l.mu.Unlock()
}

// end counts a call whose run finished.
func (l *loadStats) end() {
	l.mu.Lock()
	l.inFlight--
	l.mu.Unlock()
}

// observe counts a terminal: its duration, and its code when it is an error.
func (l *loadStats) observe(d time.Duration, p *envelope.Problem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.latency.Counts == nil {
		l.latency = fleet.NewHistogram()
	}
	l.latency.Observe(d)
	if p != nil {
		if l.byCode == nil {
			l.byCode = map[string]int64{}
		}
		l.byCode[string(p.Code)]++
	}
}

// data is the endpoint's stats Data: a copy taken under the lock.
func (l *loadStats) data() json.RawMessage {
	l.mu.Lock()
	load := fleet.ToolLoad{InFlight: l.inFlight, Latency: l.latency}
	if load.Latency.Counts == nil {
		load.Latency = fleet.NewHistogram()
	} else {
		load.Latency.Counts = append([]int64(nil), l.latency.Counts...)
	}
	if len(l.byCode) > 0 {
		load.ErrorsByCode = make(map[string]int64, len(l.byCode))
		for k, v := range l.byCode {
			load.ErrorsByCode[k] = v
		}
	}
	l.mu.Unlock()
	b, _ := json.Marshal(load)
	return b
}
