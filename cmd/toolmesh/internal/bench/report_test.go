package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
)

func TestMedianSpread(t *testing.T) {
	for _, tc := range []struct {
		in       []float64
		median   float64
		min, max float64
	}{
		{nil, 0, 0, 0},
		{[]float64{2}, 2, 2, 2},
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 2, 3}, 2.5, 1, 4},
	} {
		med, s := medianSpread(tc.in)
		if med != tc.median || s != [2]float64{tc.min, tc.max} {
			t.Errorf("medianSpread(%v) = %v %v, want %v [%v %v]", tc.in, med, s, tc.median, tc.min, tc.max)
		}
	}
}

// Ratios are taken round by round, so one slow round of one side moves
// the spread, not the median.
func TestRatiosOverRounds(t *testing.T) {
	mesh := &benchSide{rounds: []benchRound{{100, 20}, {100, 20}, {10, 200}}}
	raw := &benchSide{rounds: []benchRound{{100, 10}, {50, 10}, {100, 10}}}
	r := ratiosOver(mesh, raw)
	if r.ThroughputRatio != 1 || r.ThroughputSpread != [2]float64{0.1, 2} {
		t.Errorf("throughput %v %v, want 1 [0.1 2]", r.ThroughputRatio, r.ThroughputSpread)
	}
	if r.P50Ratio != 2 || r.P50Spread != [2]float64{2, 20} {
		t.Errorf("p50 %v %v, want 2 [2 20]", r.P50Ratio, r.P50Spread)
	}
}

// A row is judged on its own figures, and meets nothing when calls failed;
// a missed target fails the run only when enforced, failed calls always.
func TestBenchTargets(t *testing.T) {
	goals := []benchGoal{{metric: metricThroughput, bound: 1.2}, {metric: metricP50, atMost: true, bound: 1.1}}
	for _, tc := range []struct {
		name       string
		tp, p50    float64
		errors     int
		met        bool
		text       string
		missed     bool
		untrusting bool
	}{
		{"both met", 1.3, 1.0, 0, true, "yes", false, false},
		{"one missed", 1.3, 1.5, 0, false, "no: p50", true, false},
		{"both missed", 0.5, 1.5, 0, false, "no", true, false},
		{"calls failed", 1.3, 1.0, 3, false, "no", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := benchResult{Scenario: "unary", InFlight: 256, Toolmesh: benchSide{Errors: tc.errors, FirstError: "boom"}}
			r.ThroughputRatio, r.P50Ratio = tc.tp, tc.p50
			r.judge(goals)
			if r.Met == nil || *r.Met != tc.met || metText(r) != tc.text || len(r.Checks) != 2 {
				t.Fatalf("met %v, text %q, checks %+v; want %v %q", r.Met, metText(r), r.Checks, tc.met, tc.text)
			}
			if r.Checks[0].Got != tc.tp || r.Checks[1].Got != tc.p50 {
				t.Errorf("checks judged %+v, the row says %v and %v", r.Checks, tc.tp, tc.p50)
			}
			report := benchReport{Results: []benchResult{r, {Scenario: "no target"}}}
			checkProblem(t, "missed", report.missed(), tc.missed)
			checkProblem(t, "failures", report.failures(), tc.untrusting)
		})
	}
}

func checkProblem(t *testing.T, what string, err error, want bool) {
	t.Helper()
	var p *envelope.Problem
	if want != (err != nil) || (err != nil && (!errors.As(err, &p) || p.Code != envelope.CodeToolFailed)) {
		t.Errorf("%s: %v, want a tool_failed Problem: %v", what, err, want)
	}
}

// A figure that was never measured (no raw calls, a memory burst that did
// not hold, no /proc for RSS) meets no target, however low it reads.
func TestUnmeasuredMeetsNothing(t *testing.T) {
	memoryGoals := []benchGoal{{metric: metricCallerHeap, atMost: true, bound: 1024}, {metric: metricRSSAfter, atMost: true, bound: 1.2}}
	for _, tc := range []struct {
		name  string
		row   benchResult
		goals []benchGoal
	}{
		{"no ratio", benchResult{}, []benchGoal{{metric: metricP50, atMost: true, bound: 1.1}}},
		{"burst not held", benchResult{Memory: &benchMemory{}}, memoryGoals},
		{"no RSS", benchResult{Memory: &benchMemory{Toolmesh: memorySide{Measured: true, CallerHeapPerCall: 2048}}}, memoryGoals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.row.judge(tc.goals)
			for _, c := range tc.row.Checks {
				if c.Met {
					t.Errorf("check %+v met", c)
				}
			}
			if tc.row.Met == nil || *tc.row.Met {
				t.Errorf("met = %v, want false", tc.row.Met)
			}
		})
	}
}

// A target names the peer it is over: micro's ratios judge a micro goal,
// a versus peer's its goal, the raw side's (by any of its names) the
// rest; a peer the row did not measure meets nothing.
func TestGoalsJudgeTheirPeer(t *testing.T) {
	r := benchResult{Scenario: "unary", InFlight: 16, RawPeer: peerGoSDK,
		benchRatios:     benchRatios{ThroughputRatio: 2, P50Ratio: 0.5},
		ToolmeshVsMicro: &benchRatios{ThroughputRatio: 0.7, P50Ratio: 1.4},
		Versus:          []benchVersus{{Peer: peerGRPC, ToolmeshOver: benchRatios{ThroughputRatio: 1.1, P50Ratio: 0.9}}}}
	r.judge([]benchGoal{
		{metric: metricThroughput, peer: peerMicro, bound: 0.75},
		{metric: metricP50, peer: peerMicro, atMost: true, bound: 1.6},
		{metric: metricThroughput, peer: peerGRPC, bound: 1.0},
		{metric: metricThroughput, bound: 1.9},
		{metric: metricP50, peer: peerGoSDK, atMost: true, bound: 0.6},
		{metric: metricThroughput, peer: peerMCPHTTP, bound: 0.1},
	})
	want := []struct {
		got float64
		met bool
	}{{0.7, false}, {1.4, true}, {1.1, true}, {2, true}, {0.5, true}, {0, false}}
	if len(r.Checks) != len(want) {
		t.Fatalf("checks %+v", r.Checks)
	}
	for i, w := range want {
		if c := r.Checks[i]; c.Got != w.got || c.Met != w.met {
			t.Errorf("check %d %+v, want got %v met %v", i, c, w.got, w.met)
		}
	}
	if *r.Met || r.Checks[0].Peer != peerMicro || r.Checks[3].Peer != "" {
		t.Errorf("met %v, checks %+v", *r.Met, r.Checks)
	}
	if got, want := targetText(r), "throughput over micro ≥ 0.75, p50 over micro ≤ 1.60"; !strings.HasPrefix(got, want) {
		t.Errorf("target text %q, want it to start %q", got, want)
	}
}

// The gateway's single-call target is its peer's p50 plus a number of
// raw NATS round trips measured in the same rounds, judged round by round.
func TestP50ExcessInRoundTrips(t *testing.T) {
	us := time.Microsecond
	mesh := &benchSide{rounds: []benchRound{{p50: 400 * us}, {p50: 500 * us}, {p50: 900 * us}}}
	direct := &benchSide{rounds: []benchRound{{p50: 200 * us}, {p50: 200 * us}, {p50: 300 * us}}}
	rtt := &benchSide{rounds: []benchRound{{p50: 100 * us}, {p50: 200 * us}, {p50: 100 * us}}}
	excess, spread := excessOver(mesh, direct, rtt)
	if excess != 2 || spread != [2]float64{1.5, 6} {
		t.Fatalf("excess %v %v, want 2 [1.5 6]", excess, spread)
	}
	goals := []benchGoal{{metric: metricP50Excess, peer: peerGoSDK, atMost: true, bound: 1.5}}
	for _, tc := range []struct {
		name      string
		roundTrip *benchSide
		excess    float64
		met       bool
	}{{"within", rtt, 1.2, true}, {"beyond", rtt, 2, false}, {"no round trip measured", nil, 1.2, false}} {
		r := benchResult{RawPeer: peerGoSDK, RoundTrip: tc.roundTrip, P50Excess: tc.excess}
		if tc.roundTrip != nil {
			r.P50ExcessSpread = &spread
		}
		r.judge(goals)
		if *r.Met != tc.met || r.Checks[0].Got != tc.excess {
			t.Errorf("%s: met %v, checks %+v; want %v", tc.name, *r.Met, r.Checks, tc.met)
		}
	}
	if got := targetText(benchResult{Checks: []benchCheck{{Metric: metricP50Excess, Peer: peerGoSDK, Op: "<=", Want: 1.5}}}); got != "p50 ≤ go-sdk p50 + 1.50 NATS round trips" {
		t.Errorf("target text %q", got)
	}
}

// Beside the destructive unary row, micro+confirm's ratios over micro are
// taken round by round, and at 1 in flight the report states that floor
// beside the row's target, in the text report and on the performance
// page; at other levels it states nothing.
func TestConfirmFloorBesideTheTarget(t *testing.T) {
	us := time.Microsecond
	s := benchScenario{name: "unary", inFlight: 1, versus: unaryVersus()}
	r := benchResult{Scenario: s.name, InFlight: 1,
		Toolmesh: benchSide{P50Micros: 42, rounds: []benchRound{{p50: 40 * us}, {p50: 44 * us}, {p50: 42 * us}}},
		Micro:    &benchSide{P50Micros: 20, rounds: []benchRound{{p50: 20 * us}, {p50: 20 * us}, {p50: 25 * us}}}}
	vsMicro := ratiosOver(&r.Toolmesh, r.Micro)
	r.ToolmeshVsMicro = &vsMicro
	others := make([]benchSide, len(s.versus))
	for i, v := range s.versus {
		others[i] = benchSide{rounds: r.Micro.rounds}
		if v.peer == peerMicroConfirm {
			others[i] = benchSide{P50Micros: 36, rounds: []benchRound{{p50: 36 * us}, {p50: 40 * us}, {p50: 45 * us}}}
		}
	}
	r.versus(s, others)
	r.judge(destructiveGoals(1))
	f := r.MicroConfirmOverMicro
	if f == nil || f.P50Ratio != 1.8 || f.P50Spread != [2]float64{1.8, 2} {
		t.Fatalf("micro+confirm over micro %+v, want p50 1.8 [1.8 2]", f)
	}
	text := confirmFloorText(r)
	for _, want := range []string{"unary at 1 in flight: p50 42 µs through toolmesh, 20 µs from micro, 36 µs from micro plus the confirmation's round trip (micro+confirm)",
		"p50 1.80 [1.80–2.00]", "target: p50 over micro ≤ 1.60"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in %q", want, text)
		}
	}
	raw, err := json.Marshal(benchReport{Results: []benchResult{r}})
	if err != nil {
		t.Fatal(err)
	}
	if md, err := Markdown(bytes.NewReader(raw), RunInfo{}); err != nil || !strings.Contains(md, "\n"+text+"\n") {
		t.Errorf("the performance page lacks the floor sentence %q (%v):\n%s", text, err, md)
	}
	r.InFlight = 16
	if text := confirmFloorText(r); text != "" {
		t.Errorf("at 16 in flight: %q, want no floor sentence", text)
	}
}
