package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

// runMainEnv makes this test binary act as the toolmesh command, so that
// the bench's memory row can re-execute it as its worker and caller.
const runMainEnv = "TOOLMESH_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// A whole bench with tiny counts prints every row, each with its target,
// and the memory row measured in two processes of its own.
func TestBenchPrintsEveryRow(t *testing.T) {
	t.Setenv(runMainEnv, "1")
	t.Setenv("NATS_URL", "")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--duration", "30ms", "--rounds", "2", "--concurrency", "2,256",
		"--cli-concurrency", "1", "--big-results", "1", "--gateway-concurrency", "2", "--cold-tools", "5", "--deltas", "3", "--memory-calls", "20", "--memory-settle", "300ms", "--flood", "30",
		"--fleet-workers", "2", "--fleet-slots", "2", "--fleet-work", "1ms"}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"SCENARIO", "MICRO/RAW", "TOOLMESH/MICRO", "TARGET", "MET",
		"\nunary   ", "throughput ≥ 1.20", "stream of 3 deltas", "no responders", "p50 ≤ 1.30", "cli /bin/true",
		"memory, 20 calls in flight", "caller heap per call", "worker heap+stack per blocked call",
		"caller heap/call ≤ 1.0 KiB", "worker/blocked call ≤ 6.0 KiB", "RSS after/baseline ≤ 1.20",
		"what users would pick instead", "mcp-http-stateless", "grpc", "result of 1 MiB", "throughput ≥ 0.50",
		"mcp gateway, http", "mcp gateway, stdio", "throughput ≥ 0.80, p50 ≤ 1.25", "mcp cold start, 5 tools", "p50 ≤ 1.50",
		"flood: 30 calls fired at once", "\n  toolmesh  ", "\n  raw       ",
		"fleet of 2 × 2 slots, 1ms each", "fleet of 2 × 2 slots, 1ms each, coalescing off", "throughput ≥ 0.95",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("bench output lacks %q:\n%s", want, out.String())
		}
	}
}

// --json gives the unary and stream rows a side for every peer — raw,
// micro (unary), MCP over HTTP in both revisions, gRPC — each measured,
// with toolmesh's ratios over it.
func TestBenchJSONHasEveryPeer(t *testing.T) {
	t.Setenv("NATS_URL", "")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--json", "--duration", "40ms", "--rounds", "2", "--concurrency", "1,4",
		"--cli-concurrency", "none", "--big-results", "none",
		"--gateway-concurrency", "none", "--cold-tools", "0", "--deltas", "3", "--memory-calls", "0", "--fleet-workers", "0"}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	var report benchReport
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := map[string][]string{
		"unary":              {peerRaw, peerMicro, peerMCPHTTP, peerMCPStateles, peerGRPC},
		"stream of 3 deltas": {peerRaw, peerMCPHTTP, peerMCPStateles, peerGRPC},
	}
	seen := 0
	for _, r := range report.Results {
		peers, ok := want[r.Scenario]
		if !ok {
			continue
		}
		seen++
		var got []string
		for _, v := range r.Versus {
			got = append(got, v.Peer)
			if v.Calls == 0 || v.CallsPerSec <= 0 || v.ToolmeshOver.ThroughputRatio <= 0 || v.ToolmeshOver.P50Ratio <= 0 {
				t.Errorf("%s at %d, %s: %+v not measured", r.Scenario, r.InFlight, v.Peer, v)
			}
		}
		if !slices.Equal(got, peers) {
			t.Errorf("%s at %d: peers %v, want %v", r.Scenario, r.InFlight, got, peers)
		}
	}
	if seen != 3 {
		t.Errorf("%d unary and stream rows, want 3:\n%s", seen, out.String())
	}
}

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

// The memory row's processes get the server's URL and every secret given
// as a flag through their environment: none of it is in their argv, which
// any user can read.
func TestPeerSecretsStayOutOfArgv(t *testing.T) {
	g := &globals{nkey: "/keys/seed.nk"}
	g.connect.User, g.connect.Password, g.connect.Token = "alice", "s3cret-pw", "s3cret-token"
	url := "nats://alice:s3cret-pw@127.0.0.1:4222"
	cmd, err := peerCommand(context.Background(), g, &benchOptions{memoryCalls: 7}, url, "tm-bench", peerWorker, modeMesh)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(cmd.Args, " ")
	for _, secret := range []string{"s3cret-pw", "s3cret-token", "alice"} {
		if strings.Contains(argv, secret) {
			t.Errorf("argv %q carries %q", argv, secret)
		}
	}
	if !strings.Contains(argv, "--nkey /keys/seed.nk") || !strings.Contains(argv, "--memory-calls 7") {
		t.Errorf("argv %q lacks the nkey file or the count", argv)
	}
	env := strings.Join(cmd.Env, "\n")
	for _, want := range []string{"NATS_URL=" + url, "NATS_USER=alice", "NATS_PASSWORD=s3cret-pw", "NATS_TOKEN=s3cret-token"} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %s", want)
		}
	}
}

// --rows keeps the ratio rows whose name the expression matches, and a
// malformed expression is invalid_input (exit 2) before anything starts.
func TestBenchRowsFilter(t *testing.T) {
	t.Setenv("NATS_URL", "")
	cases := []struct {
		name, rows string
		code       int
		want       []string
	}{
		{"one row", "^no responders$", 0, []string{"no responders"}},
		{"a malformed expression", "(", 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"bench", "--json", "--rows", tc.rows, "--duration", "20ms", "--rounds", "1", "--concurrency", "1",
				"--cli-concurrency", "none", "--big-results", "none", "--gateway-concurrency", "none", "--cold-tools", "0", "--deltas", "3",
				"--memory-calls", "0", "--flood", "0", "--fleet-workers", "0"}, strings.NewReader(""), &out, &errb)
			if code != tc.code {
				t.Fatalf("bench --rows %q: exit %d, want %d\n%s\n%s", tc.rows, code, tc.code, out.String(), errb.String())
			}
			if tc.code != 0 {
				return
			}
			var report benchReport
			if err := json.Unmarshal(out.Bytes(), &report); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			var got []string
			for _, r := range report.Results {
				got = append(got, r.Scenario)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
		})
	}
}
