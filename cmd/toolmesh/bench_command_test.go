package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
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

// benchJSON is what these tests read of `toolmesh bench --json`: each
// row's name and, for the rows with peers, every peer's side and
// toolmesh's ratios over it.
type benchJSON struct {
	Results []struct {
		Scenario string `json:"scenario"`
		InFlight int    `json:"in_flight"`
		Versus   []struct {
			Peer         string  `json:"peer"`
			Calls        int     `json:"calls"`
			CallsPerSec  float64 `json:"calls_per_sec"`
			ToolmeshOver struct {
				ThroughputRatio float64 `json:"throughput_ratio"`
				P50Ratio        float64 `json:"p50_ratio"`
			} `json:"toolmesh_over_peer"`
		} `json:"versus"`
	} `json:"results"`
}

// A whole bench with tiny counts prints every row, each with its target,
// and the memory row measured in two processes of its own.
func TestBenchPrintsEveryRow(t *testing.T) {
	t.Setenv(runMainEnv, "1")
	t.Setenv("NATS_URL", "")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--duration", "30ms", "--rounds", "2", "--concurrency", "2,256",
		"--cli-concurrency", "1", "--big-results", "1", "--gateway-concurrency", "1,2", "--cold-tools", "5", "--deltas", "3", "--memory-calls", "20", "--memory-settle", "300ms", "--flood", "30",
		"--fleet-workers", "2", "--fleet-slots", "2", "--fleet-work", "1ms"}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"SCENARIO", "MICRO/RAW", "TOOLMESH/MICRO", "TARGET", "MET",
		"\nunary   ", "unary, idempotent", "throughput over micro ≥ 0.85", "throughput over micro ≥ 1.00", "throughput ≥ 0.80", "throughput ≥ 1.00", "stream of 3 deltas", "no responders", "p50 ≤ 1.30", "cli /bin/true",
		"memory, 20 calls in flight", "caller heap per call", "worker heap+stack per blocked call",
		"caller heap/call ≤ 1.0 KiB", "worker/blocked call ≤ 6.0 KiB", "RSS after/baseline ≤ 1.20",
		"what users would pick instead", "micro+confirm", "mcp-http-stateless", "grpc", "result of 1 MiB", "throughput ≥ 0.50",
		"mcp gateway, http", "mcp gateway, stdio", "throughput over go-sdk ≥ 0.80, p50 ≤ go-sdk p50 + 1.50 NATS round trips",
		"mcp gateway, http at 1: toolmesh p50", "one raw NATS round trip", "mcp cold start, 5 tools", "p50 ≤ 1.50",
		"flood: 30 calls fired at once", "\n  toolmesh  ", "\n  raw       ",
		"fleet of 2 × 2 slots, 1ms each", "fleet of 2 × 2 slots, 1ms each, coalescing off", "throughput ≥ 0.95",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("bench output lacks %q:\n%s", want, out.String())
		}
	}
}

// --json gives the unary and stream rows a side for every peer — raw,
// micro (unary), micro+confirm (the destructive unary row), MCP over HTTP
// in both revisions, gRPC — each measured,
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
	var report benchJSON
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := map[string][]string{
		"unary":              {"raw", "micro", "micro+confirm", "mcp-http", "mcp-http-stateless", "grpc"},
		"unary, idempotent":  {"raw", "micro", "grpc"},
		"stream of 3 deltas": {"raw", "mcp-http", "mcp-http-stateless", "grpc"},
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
	if seen != 5 {
		t.Errorf("%d unary and stream rows, want 5:\n%s", seen, out.String())
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
			var report benchJSON
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
