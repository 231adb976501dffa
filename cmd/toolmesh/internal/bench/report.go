package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
)

// benchSide is what one side (raw, micro or toolmesh) did in one scenario,
// over all its rounds.
type benchSide struct {
	Calls       int     `json:"calls"`
	Errors      int     `json:"errors"`
	CallsPerSec float64 `json:"calls_per_sec"`
	P50Micros   float64 `json:"p50_us"`
	P99Micros   float64 `json:"p99_us"`
	FirstError  string  `json:"first_error,omitempty"`

	elapsed time.Duration
	lat     []time.Duration
	rounds  []benchRound
}

// benchRound is one side's figures in one round, for per-round ratios.
type benchRound struct {
	callsPerSec float64
	p50         time.Duration
}

// benchRatios compare two sides: the median over rounds of the per-round
// ratios, and their spread (lowest and highest round).
type benchRatios struct {
	// ThroughputRatio is one side's calls/s over the other's (1 = as fast).
	ThroughputRatio  float64    `json:"throughput_ratio"`
	ThroughputSpread [2]float64 `json:"throughput_ratio_spread"`
	// P50Ratio is one side's p50 latency over the other's (1 = as fast).
	P50Ratio  float64    `json:"p50_ratio"`
	P50Spread [2]float64 `json:"p50_ratio_spread"`
}

// benchResult is one row of the report. The embedded ratios are toolmesh
// over raw, at the top level where scripts have always read them.
type benchResult struct {
	Scenario string     `json:"scenario"`
	InFlight int        `json:"in_flight"`
	Raw      benchSide  `json:"raw"`
	Toolmesh benchSide  `json:"toolmesh"`
	Micro    *benchSide `json:"micro,omitempty"`
	benchRatios
	// ToolmeshVsMicro and MicroVsRaw are present when the row has a micro side.
	ToolmeshVsMicro *benchRatios `json:"toolmesh_vs_micro,omitempty"`
	MicroVsRaw      *benchRatios `json:"micro_vs_raw,omitempty"`
	// Peers says what the raw (and micro) sides are.
	Peers string `json:"peers"`
	// RawPeer names the raw side when it is not raw NATS (the gateway
	// rows' direct go-sdk server), as the row's targets name it.
	RawPeer string `json:"raw_peer,omitempty"`
	// RoundTrip is a raw NATS round trip at 1 in flight measured in the
	// same rounds, for targets counted in round trips; P50Excess is
	// toolmesh's p50 minus the raw side's in such round trips, the median
	// over rounds and its spread.
	RoundTrip       *benchSide  `json:"nats_round_trip,omitempty"`
	P50Excess       float64     `json:"p50_excess_round_trips,omitempty"`
	P50ExcessSpread *[2]float64 `json:"p50_excess_round_trips_spread,omitempty"`
	// MicroConfirmOverMicro is, on the rows measured beside
	// micro+confirm, that peer over micro round by round: at 1 in flight,
	// the least p50 over micro that a call keeping the pickup
	// confirmation can have, whatever implements it.
	MicroConfirmOverMicro *benchRatios `json:"micro_confirm_over_micro,omitempty"`
	// Versus is toolmesh against each peer of the row in turn — raw,
	// micro, MCP over HTTP, gRPC — as the rounds measured them.
	Versus []benchVersus `json:"versus,omitempty"`
	// Memory holds the memory row's figures.
	Memory *benchMemory `json:"memory,omitempty"`
	// Target is the row's target (the bound within which the mesh's own
	// cost beside its peer is worth what it adds), Met whether this run
	// met it (absent when the row has none), Checks each part of it.
	Target string       `json:"target,omitempty"`
	Met    *bool        `json:"met,omitempty"`
	Checks []benchCheck `json:"checks,omitempty"`
}

// benchVersus is one peer's side of a row and toolmesh's ratios over it.
type benchVersus struct {
	Peer string `json:"peer"`
	What string `json:"what"`
	benchSide
	// ToolmeshOver is toolmesh over this peer, round by round.
	ToolmeshOver benchRatios `json:"toolmesh_over_peer"`
}

// versus fills the row's Versus from its raw and micro sides and from the
// other peers' (others, in the order of s.versus).
func (r *benchResult) versus(s benchScenario, others []benchSide) {
	if len(s.versus) == 0 {
		return
	}
	r.Versus = append(r.Versus, benchVersus{Peer: peerRaw, What: s.peers, benchSide: r.Raw, ToolmeshOver: r.benchRatios})
	if r.Micro != nil {
		r.Versus = append(r.Versus, benchVersus{Peer: peerMicro, What: "a nats.go micro endpoint", benchSide: *r.Micro, ToolmeshOver: *r.ToolmeshVsMicro})
	}
	for i, v := range s.versus {
		r.Versus = append(r.Versus, benchVersus{Peer: v.peer, What: v.what, benchSide: others[i], ToolmeshOver: ratiosOver(&r.Toolmesh, &others[i])})
		if v.peer == peerMicroConfirm && r.Micro != nil {
			floor := ratiosOver(&others[i], r.Micro)
			r.MicroConfirmOverMicro = &floor
		}
	}
}

type benchReport struct {
	Server   string        `json:"server"`
	Duration string        `json:"duration_per_side"`
	Rounds   int           `json:"rounds"`
	Results  []benchResult `json:"results"`
	// Flood is the flood row: each side's calls counted by outcome.
	Flood []floodCounts `json:"flood,omitempty"`
}

// benchGoal is one part of a row's target: a metric of the row over one
// of its peers, a comparison and a bound.
type benchGoal struct {
	metric benchMetric
	// peer names the side the ratio is over: "" for the row's raw side,
	// else micro, a peer of the row's versus (grpc, …) or its RawPeer.
	peer   string
	atMost bool // the metric must be ≤ bound (else ≥)
	bound  float64
}

// benchCheck is a goal as judged on one run.
type benchCheck struct {
	Metric benchMetric `json:"metric"`
	// Peer is the side the metric is over; absent for the row's raw side.
	Peer string  `json:"peer,omitempty"`
	Op   string  `json:"op"`
	Want float64 `json:"want"`
	Got  float64 `json:"got"`
	Met  bool    `json:"met"`
}

// benchMetric is what a goal can bound.
type benchMetric string

const (
	metricThroughput   benchMetric = "throughput_ratio"
	metricP50          benchMetric = "p50_ratio"
	metricCallerHeap   benchMetric = "caller_heap_bytes_per_call"
	metricWorkerMemory benchMetric = "worker_bytes_per_blocked_call"
	metricRSSAfter     benchMetric = "worker_rss_after_over_baseline"
	// metricP50Excess is toolmesh's p50 minus its peer's, in raw NATS
	// round trips measured in the same rounds.
	metricP50Excess benchMetric = "p50_excess_round_trips"
)

// of reads the metric over peer from a row, and whether the row measured
// it at all (a figure that was never measured meets no target).
func (m benchMetric) of(r benchResult, peer string) (float64, bool) {
	switch m {
	case metricThroughput, metricP50:
		over, ok := r.over(peer)
		if !ok {
			return 0, false
		}
		if m == metricP50 {
			return over.P50Ratio, over.P50Ratio > 0
		}
		return over.ThroughputRatio, over.ThroughputRatio > 0
	case metricP50Excess:
		return r.P50Excess, r.RoundTrip != nil && r.P50ExcessSpread != nil && peer == r.RawPeer
	}
	if r.Memory == nil || !r.Memory.Toolmesh.Measured {
		return 0, false
	}
	t := r.Memory.Toolmesh
	switch m {
	case metricCallerHeap:
		return t.CallerHeapPerCall, true
	case metricWorkerMemory:
		return t.WorkerBytesPerCall, true
	case metricRSSAfter:
		return t.RSSAfterRatio, t.RSSBaseline > 0 && t.RSSAfter > 0
	}
	return 0, false
}

// over is toolmesh's ratios over the named peer of the row: its raw side
// ("", raw or its RawPeer), micro, or one of its versus peers.
func (r benchResult) over(peer string) (benchRatios, bool) {
	switch {
	case peer == "" || peer == peerRaw || peer == r.RawPeer:
		return r.benchRatios, true
	case peer == peerMicro:
		if r.ToolmeshVsMicro == nil {
			return benchRatios{}, false
		}
		return *r.ToolmeshVsMicro, true
	}
	for _, v := range r.Versus {
		if v.Peer == peer {
			return v.ToolmeshOver, true
		}
	}
	return benchRatios{}, false
}

func (g benchGoal) String() string {
	op := "≥"
	if g.atMost {
		op = "≤"
	}
	if g.peer != "" {
		return fmt.Sprintf("%s over %s %s %g", g.metric, g.peer, op, g.bound)
	}
	return fmt.Sprintf("%s %s %g", g.metric, op, g.bound)
}

// judge fills the row's target, checks and verdict from its goals. A row
// whose calls failed meets none (its figures are not trustworthy), nor
// does a figure that was not measured.
func (r *benchResult) judge(goals []benchGoal) {
	if len(goals) == 0 {
		return
	}
	trusted := !slices.ContainsFunc(r.sides(), func(s benchSide) bool { return s.Errors > 0 })
	met := true
	var names []string
	for _, g := range goals {
		got, measured := g.metric.of(*r, g.peer)
		ok := got >= g.bound
		op := ">="
		if g.atMost {
			ok, op = got <= g.bound, "<="
		}
		ok = ok && trusted && measured
		met = met && ok
		names = append(names, g.String())
		r.Checks = append(r.Checks, benchCheck{Metric: g.metric, Peer: g.peer, Op: op, Want: g.bound, Got: got, Met: ok})
	}
	r.Target = strings.Join(names, ", ")
	r.Met = &met
}

// failures is the Problem of a run in which calls failed: its figures
// are not trustworthy.
func (report benchReport) failures() error {
	for _, r := range report.Results {
		for _, s := range r.sides() {
			if s.Errors > 0 {
				return envelope.Problemf(envelope.CodeToolFailed, "%s at %d in flight: %d of %d calls failed, first: %s; the figures above are not trustworthy",
					r.Scenario, r.InFlight, s.Errors, s.Calls+s.Errors, s.FirstError)
			}
		}
	}
	return nil
}

// sides are the row's sides that it has.
func (r benchResult) sides() []benchSide {
	sides := []benchSide{r.Raw, r.Toolmesh}
	if r.Micro != nil {
		sides = append(sides, *r.Micro)
	}
	if r.RoundTrip != nil {
		sides = append(sides, *r.RoundTrip)
	}
	for _, v := range r.Versus {
		if v.Peer != peerRaw && v.Peer != peerMicro {
			sides = append(sides, v.benchSide)
		}
	}
	return sides
}

// missed is the Problem of a run that missed a target (--targets enforce).
func (report benchReport) missed() error {
	var miss []string
	for _, r := range report.Results {
		if r.Met != nil && !*r.Met {
			miss = append(miss, fmt.Sprintf("%s at %d in flight (%s)", r.Scenario, r.InFlight, r.Target))
		}
	}
	if len(miss) == 0 {
		return nil
	}
	return envelope.Problemf(envelope.CodeToolFailed, "%d targets missed: %s", len(miss), strings.Join(miss, "; "))
}

// finish computes a side's pooled figures from all its rounds.
func (s *benchSide) finish() {
	s.Calls = len(s.lat)
	if s.elapsed > 0 {
		s.CallsPerSec = float64(s.Calls) / s.elapsed.Seconds()
	}
	if len(s.lat) == 0 {
		return
	}
	slices.Sort(s.lat)
	s.P50Micros = micros(quantile(s.lat, 0.50))
	s.P99Micros = micros(quantile(s.lat, 0.99))
}

// ratiosOver compares side a with side b round by round.
func ratiosOver(a, b *benchSide) benchRatios {
	var tp, p50 []float64
	for i := range min(len(a.rounds), len(b.rounds)) {
		if b.rounds[i].callsPerSec > 0 {
			tp = append(tp, a.rounds[i].callsPerSec/b.rounds[i].callsPerSec)
		}
		if b.rounds[i].p50 > 0 {
			p50 = append(p50, float64(a.rounds[i].p50)/float64(b.rounds[i].p50))
		}
	}
	var r benchRatios
	r.ThroughputRatio, r.ThroughputSpread = medianSpread(tp)
	r.P50Ratio, r.P50Spread = medianSpread(p50)
	return r
}

// excessOver is, round by round, how much longer a's p50 is than b's in
// units of unit's p50 (a raw NATS round trip): the median and spread.
func excessOver(a, b, unit *benchSide) (float64, [2]float64) {
	var xs []float64
	for i := range min(len(a.rounds), len(b.rounds), len(unit.rounds)) {
		if unit.rounds[i].p50 > 0 {
			xs = append(xs, float64(a.rounds[i].p50-b.rounds[i].p50)/float64(unit.rounds[i].p50))
		}
	}
	return medianSpread(xs)
}

func medianSpread(xs []float64) (float64, [2]float64) {
	if len(xs) == 0 {
		return 0, [2]float64{}
	}
	slices.Sort(xs)
	n := len(xs)
	med := xs[n/2]
	if n%2 == 0 {
		med = (xs[n/2-1] + xs[n/2]) / 2
	}
	return med, [2]float64{xs[0], xs[n-1]}
}

// quantile of sorted samples.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
