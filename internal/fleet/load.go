package fleet

import (
	"math"
	"slices"
	"time"
)

// ToolLoad is what a worker adds to each endpoint of its $SRV.STATS answer
// (micro.EndpointStats.Data) beyond the ADR-32 counters, so that a fleet
// view (`toolmesh top`) can show calls in flight, errors by code and
// latency percentiles. Counters are totals since the worker started;
// readers take differences between two samples for rates.
type ToolLoad struct {
	// InFlight counts calls admitted and not yet finished.
	InFlight int64 `json:"in_flight"`
	// ErrorsByCode counts error terminals by their code.
	ErrorsByCode map[string]int64 `json:"errors_by_code,omitempty"`
	// Latency is the histogram of call durations, admission to terminal.
	Latency Histogram `json:"latency"`
}

// Histogram counts durations into buckets. Histograms with the same bounds
// add and subtract, so a fleet's percentiles come from the sum of its
// workers' histograms (percentiles themselves cannot be merged).
type Histogram struct {
	// BoundsMicros are the buckets' inclusive upper bounds in microseconds,
	// ascending; Counts has one more entry, for durations above the last.
	BoundsMicros []int64 `json:"bounds_us"`
	Counts       []int64 `json:"counts"`
	// MaxMicros is the longest duration seen.
	MaxMicros int64 `json:"max_us"`
}

// latencyBoundsMicros are the bucket bounds workers use: roughly three per
// decade from 50µs to 60s.
func latencyBoundsMicros() []int64 {
	return []int64{50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
		1_000_000, 2_500_000, 5_000_000, 10_000_000, 30_000_000, 60_000_000}
}

// NewHistogram returns an empty histogram with the workers' bounds.
func NewHistogram() Histogram {
	b := latencyBoundsMicros()
	return Histogram{BoundsMicros: b, Counts: make([]int64, len(b)+1)}
}

// Observe counts one duration.
func (h *Histogram) Observe(d time.Duration) {
	if len(h.Counts) != len(h.BoundsMicros)+1 {
		return // not a histogram this package made
	}
	us := d.Microseconds()
	i, _ := slices.BinarySearch(h.BoundsMicros, us)
	h.Counts[i]++
	h.MaxMicros = max(h.MaxMicros, us)
}

// Total is the number of durations counted.
func (h Histogram) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// compatible reports whether o can be added to or subtracted from h.
func (h Histogram) compatible(o Histogram) bool {
	return slices.Equal(h.BoundsMicros, o.BoundsMicros) && len(h.Counts) == len(o.Counts) && len(h.Counts) == len(h.BoundsMicros)+1
}

// Add returns h+o; an empty h takes o's bounds. Histograms with other
// bounds are not added (ok is false).
func (h Histogram) Add(o Histogram) (sum Histogram, ok bool) {
	if len(h.Counts) == 0 {
		return Histogram{BoundsMicros: slices.Clone(o.BoundsMicros), Counts: slices.Clone(o.Counts), MaxMicros: o.MaxMicros}, true
	}
	if !h.compatible(o) {
		return h, false
	}
	out := Histogram{BoundsMicros: h.BoundsMicros, Counts: slices.Clone(h.Counts), MaxMicros: max(h.MaxMicros, o.MaxMicros)}
	for i, c := range o.Counts {
		out.Counts[i] += c
	}
	return out, true
}

// Sub returns the counts of h that are not in an earlier sample o of the
// same histogram (a window's durations); MaxMicros stays h's.
func (h Histogram) Sub(o Histogram) Histogram {
	if !h.compatible(o) {
		return h
	}
	out := Histogram{BoundsMicros: h.BoundsMicros, Counts: slices.Clone(h.Counts), MaxMicros: h.MaxMicros}
	for i, c := range o.Counts {
		out.Counts[i] = max(0, out.Counts[i]-c)
	}
	return out
}

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q ≤ 1): a duration the quantile does not exceed. Past the last
// bound it is the longest duration seen. An empty histogram gives 0.
func (h Histogram) Quantile(q float64) time.Duration {
	total := h.Total()
	if total == 0 || len(h.Counts) != len(h.BoundsMicros)+1 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	rank = min(max(rank, 1), total)
	var seen int64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			if i < len(h.BoundsMicros) {
				return time.Duration(min(h.BoundsMicros[i], max(h.MaxMicros, 0))) * time.Microsecond
			}
			break
		}
	}
	return time.Duration(h.MaxMicros) * time.Microsecond
}
