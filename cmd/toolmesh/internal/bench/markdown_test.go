package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestMarkdownRendersEachPeerBesideItsTarget: a report's JSON becomes one
// table line per peer, the target and verdict on the row's first peer,
// and the run's machine, date and load in the heading.
func TestMarkdownRendersEachPeerBesideItsTarget(t *testing.T) {
	met := false
	r := benchReport{Server: "embedded", Duration: "2s", Rounds: 6, Results: []benchResult{{
		Scenario: "unary", InFlight: 16, Toolmesh: benchSide{CallsPerSec: 900},
		Versus: []benchVersus{
			{Peer: "micro", benchSide: benchSide{CallsPerSec: 1000}, ToolmeshOver: benchRatios{ThroughputRatio: 0.9, ThroughputSpread: [2]float64{0.8, 0.95}, P50Ratio: 1.1, P50Spread: [2]float64{1, 1.2}}},
			{Peer: "grpc", benchSide: benchSide{CallsPerSec: 600}, ToolmeshOver: benchRatios{ThroughputRatio: 1.5, ThroughputSpread: [2]float64{1.4, 1.6}, P50Ratio: 0.7, P50Spread: [2]float64{0.6, 0.8}}},
		},
		Met:    &met,
		Checks: []benchCheck{{Metric: metricThroughput, Op: ">=", Want: 0.95, Got: 0.9}},
	}}}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Markdown(bytes.NewReader(raw), RunInfo{Date: "2026-11-27", Machine: "2 cores", Load: "1.0 → 1.5"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"on 2 cores, 2026-11-27; load 1.0 → 1.5. Server: embedded; 2s per side and row, 6 interleaved rounds.",
		"| unary | 16 | micro | 900 | 1000 | 0.90 [0.80–0.95] | 1.10 [1.00–1.20] | throughput ≥ 0.95 | no |",
		"| unary | 16 | grpc | 900 | 600 | 1.50 [1.40–1.60] | 0.70 [0.60–0.80] |  |  |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if _, err := Markdown(strings.NewReader("not json"), RunInfo{}); err == nil {
		t.Error("a report that is not JSON was rendered")
	}
}
