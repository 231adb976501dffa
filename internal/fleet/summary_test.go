package fleet

import (
	"fmt"
	"testing"
	"time"
)

func hist(durations ...time.Duration) Histogram {
	h := NewHistogram()
	for _, d := range durations {
		h.Observe(d)
	}
	return h
}

// Summarize adds tools across workers, takes rates and window percentiles
// over the interval, and does not count a worker new in the second sample
// towards rates.
func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	prev := Sample{At: t0, Complete: true, Workers: []WorkerSample{
		{ID: "a", Tools: []ToolSample{{Name: "x", Requests: 10, Errors: 1, ToolLoad: ToolLoad{ErrorsByCode: map[string]int64{"timeout": 1}, Latency: hist(ms)}}}},
	}}
	cur := Sample{At: t0.Add(2 * time.Second), Complete: false, Workers: []WorkerSample{
		{ID: "a", Tools: []ToolSample{{Name: "x", Requests: 30, Errors: 5, ToolLoad: ToolLoad{InFlight: 2,
			ErrorsByCode: map[string]int64{"timeout": 3, "invalid_input": 2}, Latency: hist(ms, 200*ms, 200*ms)}}}},
		{ID: "b", Tools: []ToolSample{{Name: "x", Requests: 100, ToolLoad: ToolLoad{InFlight: 1, Latency: hist(ms)}},
			{Name: "y", Requests: 4}}},
	}}
	s := Summarize(&prev, cur)
	if s.IntervalSeconds != 2 || s.Complete || len(s.Workers) != 2 || len(s.Tools) != 2 {
		t.Fatalf("summary %+v", s)
	}
	x := s.Tools[0]
	want := ToolSummary{Name: "x", Instances: 2, InFlight: 3, Requests: 130, Errors: 5, CallsPerSec: 10, ErrorsPerSec: 2,
		P50Ms: 1, P99Ms: 200, WindowP50Ms: 200, WindowP99Ms: 200}
	if x.Latency.Total() != 4 {
		t.Errorf("tool x latency has %d calls, want 4", x.Latency.Total())
	}
	x.Latency = Histogram{}
	if fmt.Sprintf("%+v", x) != fmt.Sprintf("%+v", want) {
		t.Errorf("tool x:\n got %+v\nwant %+v", x, want)
	}
	codes := map[string]CodeSummary{}
	for _, c := range s.ErrorsByCode {
		codes[c.Code] = c
	}
	if codes["timeout"] != (CodeSummary{"timeout", 3, 1}) || codes["invalid_input"] != (CodeSummary{"invalid_input", 2, 1}) {
		t.Errorf("codes %+v", s.ErrorsByCode)
	}
	if s.Workers[1].CallsPerSec != 0 || s.Workers[1].Requests != 104 {
		t.Errorf("new worker b: %+v", s.Workers[1])
	}
	if one := Summarize(nil, cur); one.IntervalSeconds != 0 || one.Tools[0].CallsPerSec != 0 || one.Tools[0].P99Ms != 200 {
		t.Errorf("one sample: %+v", one.Tools[0])
	}
}
