package catalog

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// The live catalogue at the scale the issue names: 10,000 workers hosting
// 100,000 tools (10 each; every tool on 2 workers, so 50,000 names).
const (
	benchWorkers        = 10_000
	benchToolsPerWorker = 10
)

func benchSpecs(w int) []envelope.ToolSpec {
	specs := make([]envelope.ToolSpec, benchToolsPerWorker)
	for i := range specs {
		specs[i] = envelope.ToolSpec{Name: fmt.Sprintf("ns%d.tool%d", (w/2)%5000, i), Description: "a tool of the benchmark fleet",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}
	}
	return specs
}

func benchView(b *testing.B) *liveView {
	v := newLiveView(time.Second)
	now := time.Now()
	for w := range benchWorkers {
		v.setWorker(fmt.Sprint("W", w), 1, now, time.Second, benchSpecs(w))
	}
	v.flush(func(Change, error) bool { return true })
	return v
}

// BenchmarkWatchBuild10kWorkers: building the whole view (what Watch's
// first pass costs, after the catalogue gather) and yielding every tool.
func BenchmarkWatchBuild10kWorkers(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		benchView(b)
	}
}

// BenchmarkWatchBeacon: one steady-state beacon (decode and record), the
// per-message cost of 10,000 workers beaconing every interval.
func BenchmarkWatchBeacon(b *testing.B) {
	v := benchView(b)
	msgs := make([][]byte, benchWorkers)
	for w := range msgs {
		msgs[w], _ = json.Marshal(wire.Beacon{WorkerID: fmt.Sprint("W", w), State: wire.BeaconUp, Revision: 1, IntervalMS: 1000})
	}
	b.SetBytes(int64(len(msgs[0])))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var bc wire.Beacon
		if err := json.Unmarshal(msgs[i%benchWorkers], &bc); err != nil {
			b.Fatal(err)
		}
		if !v.heard(bc, time.Now(), time.Second) {
			b.Fatal("steady-state beacon took the slow path")
		}
		i++
	}
}

// BenchmarkWatchExpireScan: one expiry pass over 10,000 live workers (run
// every half interval).
func BenchmarkWatchExpireScan(b *testing.B) {
	v := benchView(b)
	b.ReportAllocs()
	for b.Loop() {
		v.expire(time.Now())
	}
	if len(v.workers) != benchWorkers {
		b.Fatal("live workers expired")
	}
}

// BenchmarkWatchWorkerChurn: one worker dying and coming back (20 tool
// changes), the cost of a change against the full fleet.
func BenchmarkWatchWorkerChurn(b *testing.B) {
	v := benchView(b)
	specs := benchSpecs(42)
	b.ReportAllocs()
	for b.Loop() {
		v.dropWorker("W42")
		v.flush(func(Change, error) bool { return true })
		v.setWorker("W42", 1, time.Now(), time.Second, specs)
		v.flush(func(Change, error) bool { return true })
	}
}
