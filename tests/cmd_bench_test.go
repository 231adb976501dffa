package tests

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
)

// benchJSONSide is one side of a `toolmesh bench --json` row.
type benchJSONSide struct {
	Calls       int     `json:"calls"`
	Errors      int     `json:"errors"`
	CallsPerSec float64 `json:"calls_per_sec"`
	P50         float64 `json:"p50_us"`
}

// benchJSONRatios are a row's ratios with their spread over rounds.
type benchJSONRatios struct {
	ThroughputRatio  float64    `json:"throughput_ratio"`
	ThroughputSpread [2]float64 `json:"throughput_ratio_spread"`
	P50Ratio         float64    `json:"p50_ratio"`
	P50Spread        [2]float64 `json:"p50_ratio_spread"`
}

// benchJSONRow is what scripts read of a row: the fields every version
// has had, and the additions.
type benchJSONRow struct {
	Scenario string         `json:"scenario"`
	InFlight int            `json:"in_flight"`
	Raw      benchJSONSide  `json:"raw"`
	Toolmesh benchJSONSide  `json:"toolmesh"`
	Micro    *benchJSONSide `json:"micro"`
	benchJSONRatios
	ToolmeshVsMicro *benchJSONRatios `json:"toolmesh_vs_micro"`
	MicroVsRaw      *benchJSONRatios `json:"micro_vs_raw"`
	RawPeer         string           `json:"raw_peer"`
	P50Excess       float64          `json:"p50_excess_round_trips"`
	RoundTrip       *benchJSONSide   `json:"nats_round_trip"`
	// MicroConfirmOverMicro is micro+confirm over micro, on the rows
	// measured beside it.
	MicroConfirmOverMicro *benchJSONRatios `json:"micro_confirm_over_micro"`
	Versus                []struct {
		Peer         string          `json:"peer"`
		ToolmeshOver benchJSONRatios `json:"toolmesh_over_peer"`
		benchJSONSide
	} `json:"versus"`
	Target string `json:"target"`
	Met    *bool  `json:"met"`
	Checks []struct {
		Metric string  `json:"metric"`
		Peer   string  `json:"peer"`
		Got    float64 `json:"got"`
		Met    bool    `json:"met"`
	} `json:"checks"`
	Memory *struct {
		Calls    int `json:"calls"`
		Toolmesh struct {
			WorkerBytes float64 `json:"worker_bytes_per_blocked_call"`
			RSSBaseline int64   `json:"worker_rss_baseline"`
			RSSAfter    int64   `json:"worker_rss_after"`
		} `json:"toolmesh"`
	} `json:"memory"`
}

// bench measures every row against its own embedded server, the memory
// row in processes of its own, and reports medians that lie within their
// spread and targets judged on the figures shown. With --targets enforce
// its exit code says whether every target was met.
func TestCommandBench(t *testing.T) {
	t.Setenv("NATS_URL", "") // an embedded server, whatever the environment says
	r := runCmd(t, "", "bench", "--duration", "40ms", "--rounds", "2", "--concurrency", "1,3", "--cli-concurrency", "2",
		"--big-results", "1", "--gateway-concurrency", "2", "--cold-tools", "5", "--deltas", "5", "--memory-calls", "40", "--memory-settle", "300ms", "--targets", "enforce", "--json",
		"--flood", "60", "--flood-timeout", "30s", "--fleet-workers", "2", "--fleet-slots", "2", "--fleet-work", "1ms")
	var report struct {
		Server  string         `json:"server"`
		Results []benchJSONRow `json:"results"`
		Flood   []struct {
			Side     string         `json:"side"`
			Calls    int            `json:"calls"`
			Outcomes map[string]int `json:"outcomes"`
		} `json:"flood"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("bench --json output: %v\n%s\nstderr %s", err, r.stdout, r.stderr)
	}
	if report.Server != "embedded" {
		t.Errorf("server = %q, want embedded", report.Server)
	}
	want := []struct {
		scenario string
		inFlight int
		micro    bool
		target   bool
		// confirm: beside micro+confirm, the pickup confirmation's floor
		confirm bool
	}{{"unary", 1, true, true, true}, {"unary", 3, true, false, true}, {"unary, idempotent", 1, true, true, false}, {"unary, idempotent", 3, true, false, false},
		{"unary, coalescing off", 3, true, false, false}, {"stream of 5 deltas", 1, false, true, false},
		{"no responders", 1, false, true, false}, {"durable unary (task)", 1, false, true, false}, {"durable unary (task)", 3, false, true, false},
		{"durable unary (task), 3-node R3", 1, false, false, false}, {"durable unary (task), 3-node R3", 3, false, false, false}, {"mcp gateway, http", 2, false, true, false}, {"mcp gateway, stdio", 2, false, true, false},
		{"mcp cold start, 5 tools", 1, false, true, false},
		{"fleet of 2 × 2 slots, 1ms each", 4, false, true, false}, {"fleet of 2 × 2 slots, 1ms each, coalescing off", 4, false, false, false},
		{"result of 1 MiB", 1, false, true, false}, {"cli /bin/true", 2, false, true, false}, {"memory, 40 calls in flight", 40, false, true, false}}
	if len(report.Results) != len(want) {
		t.Fatalf("got %d results, want %d:\n%s", len(report.Results), len(want), r.stdout)
	}
	// The flood row: both sides, every call counted once; each failure
	// of the mesh says whether the program ran, a raw one cannot.
	if len(report.Flood) != 2 || report.Flood[0].Side != "toolmesh" || report.Flood[1].Side != "raw" {
		t.Errorf("flood row %+v, want the toolmesh side and the raw side", report.Flood)
	}
	for _, side := range report.Flood {
		n := 0
		for outcome, k := range side.Outcomes {
			n += k
			if side.Side == "toolmesh" && outcome != "ok" && !strings.Contains(outcome, "(ran: ") {
				t.Errorf("flood row: the mesh's outcome %q does not say whether the program ran", outcome)
			}
		}
		if n != side.Calls || n != 60 {
			t.Errorf("flood row, %s side: %d outcomes of %d calls, want 60", side.Side, n, side.Calls)
		}
	}
	allMet := true
	for i, res := range report.Results {
		if res.Scenario != want[i].scenario || res.InFlight != want[i].inFlight {
			t.Errorf("result %d is %s at %d, want %s at %d", i, res.Scenario, res.InFlight, want[i].scenario, want[i].inFlight)
		}
		if (res.Micro != nil) != want[i].micro || (res.Micro != nil) != (res.ToolmeshVsMicro != nil && res.MicroVsRaw != nil) {
			t.Errorf("%s: micro side %v, want %v, with its ratios", res.Scenario, res.Micro, want[i].micro)
		}
		checkBenchTarget(t, res, want[i].target)
		checkBenchConfirmFloor(t, res, want[i].confirm)
		if strings.HasPrefix(res.Scenario, "durable unary (task)") {
			// Beside the equivalent-guarantee queue (raw), the bare queue,
			// measured in the same rounds.
			bare := false
			for _, v := range res.Versus {
				bare = bare || v.Peer == "bare-queue" && v.Calls > 0 && v.Errors == 0
			}
			if !bare {
				t.Errorf("durable row at %d in flight: no bare-queue side that made calls: %+v", res.InFlight, res.Versus)
			}
		}
		allMet = allMet && (res.Met == nil || *res.Met)
		if res.Memory != nil {
			checkBenchMemory(t, res)
			continue
		}
		checkBenchSides(t, res)
	}
	info, _ := codes.Lookup(envelope.CodeToolFailed)
	if wantCode := map[bool]int{true: 0, false: info.ExitCode}[allMet]; r.code != wantCode {
		t.Errorf("--targets enforce: exit %d with every target met = %v, want %d\n%s", r.code, allMet, wantCode, r.stderr)
	}
}

// checkBenchSides: every side made calls without errors, and each median
// lies within its spread.
func checkBenchSides(t *testing.T, res benchJSONRow) {
	t.Helper()
	sides := map[string]benchJSONSide{"raw": res.Raw, "toolmesh": res.Toolmesh}
	if res.Micro != nil {
		sides["micro"] = *res.Micro
	}
	for name, s := range sides {
		if s.Calls == 0 || s.Errors != 0 || s.CallsPerSec <= 0 || s.P50 <= 0 {
			t.Errorf("%s at %d, %s side: %+v", res.Scenario, res.InFlight, name, s)
		}
	}
	ratios := map[string]benchJSONRatios{"toolmesh/raw": res.benchJSONRatios}
	if res.Micro != nil {
		ratios["toolmesh/micro"], ratios["micro/raw"] = *res.ToolmeshVsMicro, *res.MicroVsRaw
	}
	for name, x := range ratios {
		for what, v := range map[string][3]float64{
			"throughput": {x.ThroughputSpread[0], x.ThroughputRatio, x.ThroughputSpread[1]},
			"p50":        {x.P50Spread[0], x.P50Ratio, x.P50Spread[1]},
		} {
			if !(0 < v[0] && v[0] <= v[1] && v[1] <= v[2]) {
				t.Errorf("%s at %d: %s %s ratio %v not within its spread [%v, %v]", res.Scenario, res.InFlight, name, what, v[1], v[0], v[2])
			}
		}
	}
}

// checkBenchConfirmFloor: a row measured beside micro+confirm has that
// peer's side, made of calls without errors, and its ratios over micro
// within their spread; no other row has either.
func checkBenchConfirmFloor(t *testing.T, res benchJSONRow, want bool) {
	t.Helper()
	var side *benchJSONSide
	for _, v := range res.Versus {
		if v.Peer == "micro+confirm" {
			side = &v.benchJSONSide
		}
	}
	if (side != nil) != want || (res.MicroConfirmOverMicro != nil) != want {
		t.Fatalf("%s at %d: micro+confirm side %+v, its ratios over micro %+v; want them: %v", res.Scenario, res.InFlight, side, res.MicroConfirmOverMicro, want)
	}
	if !want {
		return
	}
	if side.Calls == 0 || side.Errors != 0 || side.CallsPerSec <= 0 || side.P50 <= 0 {
		t.Errorf("%s at %d, micro+confirm side: %+v", res.Scenario, res.InFlight, *side)
	}
	x := res.MicroConfirmOverMicro
	for what, v := range map[string][3]float64{
		"throughput": {x.ThroughputSpread[0], x.ThroughputRatio, x.ThroughputSpread[1]},
		"p50":        {x.P50Spread[0], x.P50Ratio, x.P50Spread[1]},
	} {
		if !(0 < v[0] && v[0] <= v[1] && v[1] <= v[2]) {
			t.Errorf("%s at %d: micro+confirm/micro %s ratio %v not within its spread [%v, %v]", res.Scenario, res.InFlight, what, v[1], v[0], v[2])
		}
	}
}

// checkBenchTarget: a row has a target exactly when the issue gives one,
// and its verdict is that of its checks, which judge the row's figures.
func checkBenchTarget(t *testing.T, res benchJSONRow, want bool) {
	t.Helper()
	if (res.Met != nil) != want || (res.Target != "") != want || (len(res.Checks) > 0) != want {
		t.Fatalf("%s at %d: target %q, met %v, %d checks; want a target: %v", res.Scenario, res.InFlight, res.Target, res.Met, len(res.Checks), want)
	}
	met := true
	for _, c := range res.Checks {
		met = met && c.Met
		if !slices.Contains([]string{"throughput_ratio", "p50_ratio", "p50_excess_round_trips"}, c.Metric) {
			continue // the memory row's figures, checked by checkBenchMemory
		}
		if v, ok := benchFigure(res, c.Metric, c.Peer); ok && v != c.Got {
			t.Errorf("%s: check %s over %q judged %v, the row says %v", res.Scenario, c.Metric, c.Peer, c.Got, v)
		} else if !ok && c.Met {
			t.Errorf("%s: check %s over %q met, but the row has no such figure", res.Scenario, c.Metric, c.Peer)
		}
	}
	if res.Met != nil && *res.Met != met {
		t.Errorf("%s: met = %v, but its checks say %v", res.Scenario, *res.Met, met)
	}
}

// benchFigure is the row's figure a check judges: a ratio over the peer
// the check names (the raw side when it names none), or the p50 excess in
// raw NATS round trips.
func benchFigure(res benchJSONRow, metric, peer string) (float64, bool) {
	ratios := &res.benchJSONRatios
	switch {
	case metric == "p50_excess_round_trips":
		return res.P50Excess, res.RoundTrip != nil
	case peer == "micro":
		ratios = res.ToolmeshVsMicro
	case peer != "" && peer != "raw" && peer != res.RawPeer:
		ratios = nil
		for _, v := range res.Versus {
			if v.Peer == peer {
				ratios = &v.ToolmeshOver
			}
		}
	}
	if ratios == nil {
		return 0, false
	}
	if metric == "p50_ratio" {
		return ratios.P50Ratio, true
	}
	return ratios.ThroughputRatio, true
}

// checkBenchMemory: the memory row held every call and measured the
// worker's memory before and after.
func checkBenchMemory(t *testing.T, res benchJSONRow) {
	t.Helper()
	m := res.Memory
	if m.Calls != 40 || res.Toolmesh.Calls != 40 || res.Toolmesh.Errors != 0 || res.Raw.Calls != 40 || res.Raw.Errors != 0 {
		t.Errorf("memory row: %d calls; toolmesh side %+v, raw side %+v", m.Calls, res.Toolmesh, res.Raw)
	}
	if m.Toolmesh.RSSBaseline <= 0 || m.Toolmesh.RSSAfter <= 0 || m.Toolmesh.WorkerBytes == 0 {
		t.Errorf("memory row figures: %+v", m.Toolmesh)
	}
	if len(res.Checks) != 3 {
		t.Errorf("memory row checks: %+v, want caller heap, worker bytes and RSS", res.Checks)
	}
}

// Bad bench flags are usage errors; an unreachable server is connection_lost.
func TestCommandBenchBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code envelope.Code
	}{
		{[]string{"bench", "--concurrency", "0"}, envelope.CodeInvalidInput},
		{[]string{"bench", "--cli-concurrency", "x"}, envelope.CodeInvalidInput},
		{[]string{"bench", "--targets", "maybe"}, envelope.CodeInvalidInput},
		{[]string{"bench", "--memory-calls", "-1"}, envelope.CodeInvalidInput},
		{[]string{"bench", "--peer", "nobody"}, envelope.CodeInvalidInput},
		{[]string{"bench", "--server", "nats://127.0.0.1:1"}, envelope.CodeConnectionLost},
	} {
		r := runCmd(t, "", tc.args...)
		info, _ := codes.Lookup(tc.code)
		if want := info.ExitCode; r.code != want {
			t.Errorf("%v: exit %d, want %d (%s)\n%s", tc.args, r.code, want, tc.code, r.stderr)
		}
	}
}
