package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// The spawn benchmarks compare a CLI-bound /bin/true with spawning
// /bin/true directly through os/exec, in the same run: the sides alternate
// for benchRounds rounds (each going first in half of them) so drift on a
// busy machine falls on both alike, and the median ratio is reported.
// Run them with -benchtime=1x: each measures for its own fixed time.
//
//	go test -run '^$' -bench Spawn -benchtime=1x ./worker/cli/

const (
	benchRounds = 11
	benchSlice  = 250 * time.Millisecond
)

// sideStats is what one side did in one round.
type sideStats struct {
	calls   int64
	errs    int64
	elapsed time.Duration
	cpu     time.Duration // this process and its reaped children
}

func (s sideStats) rate() float64 { return float64(s.calls) / s.elapsed.Seconds() }

func (s sideStats) cpuPerCall() time.Duration {
	if s.calls == 0 {
		return 0
	}
	return s.cpu / time.Duration(s.calls)
}

// cpuTime is the user+system time of this process and its reaped children.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		_ = syscall.Getrusage(who, &ru)
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}

// measure keeps n calls of f in flight for d.
func measure(n int, d time.Duration, f func() error) sideStats {
	var calls, errs atomic.Int64
	deadline := time.Now().Add(d)
	cpu0, start := cpuTime(), time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if f() != nil {
					errs.Add(1)
					continue
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	return sideStats{calls: calls.Load(), errs: errs.Load(), elapsed: time.Since(start), cpu: cpuTime() - cpu0}
}

// compare alternates the direct spawn and other for benchRounds rounds at
// n in flight and reports the median throughput ratio (other/direct) and
// the CPU each side used per call.
func compare(b *testing.B, n int, other func() error) {
	compareWith(b, n, func() error { return exec.Command("/bin/true").Run() }, other)
}

// compareWith is compare against direct instead of an os/exec spawn.
func compareWith(b *testing.B, n int, direct, other func() error) {
	var ratios, cpuRatios []float64
	var dRates, oRates []float64
	var dCPU, oCPU []time.Duration
	for round := range benchRounds {
		sides := []func() error{direct, other}
		if round%2 == 1 {
			sides = []func() error{other, direct}
		}
		var got [2]sideStats
		for i, f := range sides {
			got[(i+round)%2] = measure(n, benchSlice, f)
		}
		for i, s := range got {
			if s.errs > 0 || s.calls == 0 {
				b.Fatalf("side %d: %d calls, %d errors", i, s.calls, s.errs)
			}
		}
		ratios = append(ratios, got[1].rate()/got[0].rate())
		cpuRatios = append(cpuRatios, float64(got[1].cpuPerCall())/float64(got[0].cpuPerCall()))
		dRates, oRates = append(dRates, got[0].rate()), append(oRates, got[1].rate())
		dCPU, oCPU = append(dCPU, got[0].cpuPerCall()), append(oCPU, got[1].cpuPerCall())
	}
	b.Logf("in flight %d: ratios %.2f", n, ratios)
	b.ReportMetric(median(ratios), "ratio")
	b.ReportMetric(median(cpuRatios), "cpu-ratio")
	b.ReportMetric(median(dRates), "direct-calls/s")
	b.ReportMetric(median(oRates), "calls/s")
	b.ReportMetric(float64(median(dCPU).Microseconds()), "direct-cpu-µs/call")
	b.ReportMetric(float64(median(oCPU).Microseconds()), "cpu-µs/call")
}

func median[T int64 | float64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// trueHandler is the Handler of a tool bound to /bin/true with lines
// output (a json tool must print something).
func trueHandler(b *testing.B) *toolHandler {
	b.Helper()
	bind := cliBinding{Cmd: "/bin/true", OutputFormat: outputLines}
	h, err := newProbedHandler(fileTool{Spec: envelope.ToolSpec{Name: "true"}, Binding: &bind,
		Limits: toolLimits{MaxConcurrent: 64}}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	return h
}

// BenchmarkSpawnHandler is the CLI handler alone (no NATS) against a
// direct os/exec spawn.
func BenchmarkSpawnHandler(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(inFlight(n), func(b *testing.B) {
			h := trueHandler(b)
			req := &worker.Request{Tool: "true", Args: json.RawMessage(`{}`)}
			compare(b, n, func() error {
				_, err := h.Handle(context.Background(), req, &recorder{})
				return err
			})
		})
	}
}

// BenchmarkSandboxHandler is a sandboxed CLI-bound /bin/true against the
// same tool unconfined, both through the CLI handler alone (no NATS), with
// the sandbox of toolmesh bench's sandboxed row. The ratio is the
// sandboxed calls per second over the unconfined ones (the sandboxed
// row's target: at least 0.8).
func BenchmarkSandboxHandler(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(inFlight(n), func(b *testing.B) {
			plain := trueHandler(b)
			confined := sandboxed(b, sandboxBenchFile)
			req := &worker.Request{Tool: "true", Args: json.RawMessage(`{}`)}
			call := func(h *toolHandler) func() error {
				return func() error { _, err := h.Handle(context.Background(), req, &recorder{}); return err }
			}
			compareWith(b, n, call(plain), call(confined))
		})
	}
}

// sandboxBenchFile is the tools file of the sandboxed benchmarks: /bin/true
// under the sandbox of toolmesh bench's sandboxed row.
const sandboxBenchFile = `defaults: {max_concurrent: 64}
tools:
  - name: "true"
    sandbox: {read: [/usr/share], network: none, limits: {cpu_seconds: 10, memory_mb: 256, files: 64, processes: 16}}
    binding: {cli: {cmd: /bin/true, output_format: lines}}
`

// BenchmarkSandboxCPU is BenchmarkSandboxHandler with the CPU of the whole
// sandboxed path counted: each call's sandbox helper is a child of this
// process that ends with the call and is reaped here, and it reaps
// everything the call started, so the helper's CPU and the program's join
// this process's reaped children (cpuTime).
//
//	go test -run '^$' -bench SandboxCPU -benchtime=1x ./worker/cli/
func BenchmarkSandboxCPU(b *testing.B) {
	req := &worker.Request{Tool: "true", Args: json.RawMessage(`{}`)}
	call := func(h *toolHandler) error { _, err := h.Handle(context.Background(), req, &recorder{}); return err }
	for _, n := range []int{1, 8} {
		plain, confined := trueHandler(b), sandboxed(b, sandboxBenchFile)
		var pCPU, cCPU []time.Duration
		var ratios []float64
		for round := range benchRounds {
			var p, c sideStats
			if round%2 == 0 {
				p, c = measure(n, 2*benchSlice, func() error { return call(plain) }), measure(n, 2*benchSlice, func() error { return call(confined) })
			} else {
				c, p = measure(n, 2*benchSlice, func() error { return call(confined) }), measure(n, 2*benchSlice, func() error { return call(plain) })
			}
			if p.errs+c.errs > 0 || c.calls == 0 {
				b.Fatalf("plain %d calls %d errors, sandboxed %d calls %d errors", p.calls, p.errs, c.calls, c.errs)
			}
			pc, cc := p.cpuPerCall(), c.cpuPerCall()
			pCPU, cCPU, ratios = append(pCPU, pc), append(cCPU, cc), append(ratios, float64(cc)/float64(pc))
		}
		b.Logf("in flight %d: sandboxed/plain CPU per call %.2f", n, ratios)
		b.ReportMetric(float64(median(pCPU).Microseconds()), inFlight(n)+"-plain-cpu-µs/call")
		b.ReportMetric(float64(median(cCPU).Microseconds()), inFlight(n)+"-sandboxed-cpu-µs/call")
		b.ReportMetric(median(ratios), inFlight(n)+"-cpu-ratio")
	}
}

// BenchmarkSpawnMesh is a CLI-bound /bin/true called through the mesh
// (embedded server, worker and caller in this process) against a direct
// os/exec spawn. The floor rows call a plain Go tool that runs
// exec.Command("/bin/true").Run() instead: the best any CLI handler could
// do through the mesh, so the difference is what the handler costs.
func BenchmarkSpawnMesh(b *testing.B) {
	for _, tool := range []string{"true", "floor"} {
		for _, n := range []int{1, 8} {
			b.Run(map[string]string{"true": "", "floor": "floor-"}[tool]+inFlight(n), func(b *testing.B) {
				m := meshtest.New(b)
				registerTrue(b, m)
				compare(b, n, func() error {
					_, err := m.Caller.Call(context.Background(), tool, map[string]any{}, caller.WithTimeout(30*time.Second))
					return err
				})
			})
		}
	}
}

// registerTrue registers on m the CLI-bound /bin/true as "true" and the
// Go tool that spawns it as "floor".
func registerTrue(b *testing.B, m *meshtest.Mesh) {
	b.Helper()
	h := trueHandler(b)
	if err := m.Worker.Register(h.spec, h); err != nil {
		b.Fatal(err)
	}
	floor := worker.HandlerFunc(func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return map[string]any{}, exec.Command("/bin/true").Run()
	})
	if err := m.Worker.Register(envelope.ToolSpec{Name: "floor"}, floor); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSpawnLatency pairs single calls at one in flight, a direct
// spawn and a CLI call back to back (each first in half of the pairs), and
// reports the ratio of their p50 latencies (direct over CLI, so 1 = as
// fast, like the throughput ratios): pairs see the same moment of a
// shared machine, which makes this the steadiest of the figures.
// "mesh-floor" is a plain Go tool that runs exec.Command("/bin/true").Run()
// called through the mesh: the best any CLI handler could do there.
func BenchmarkSpawnLatency(b *testing.B) {
	h := trueHandler(b)
	m := meshtest.New(b)
	registerTrue(b, m)
	req := &worker.Request{Tool: "true", Args: json.RawMessage(`{}`)}
	b.Run("handler", func(b *testing.B) {
		pairs(b, func() error {
			_, err := h.Handle(context.Background(), req, &recorder{})
			return err
		})
	})
	for _, tool := range []string{"true", "floor"} {
		b.Run(map[string]string{"true": "mesh", "floor": "mesh-floor"}[tool], func(b *testing.B) {
			pairs(b, func() error {
				_, err := m.Caller.Call(context.Background(), tool, map[string]any{}, caller.WithTimeout(30*time.Second))
				return err
			})
		})
	}
}

// pairs times 2,000 pairs of a direct spawn and f.
func pairs(b *testing.B, f func() error) {
	direct := func() error { return exec.Command("/bin/true").Run() }
	var d, o []time.Duration
	for i := range 2000 {
		first, second := direct, f
		if i%2 == 1 {
			first, second = f, direct
		}
		t1, err1 := timed(first)
		t2, err2 := timed(second)
		if err := errors.Join(err1, err2); err != nil {
			b.Fatal(err)
		}
		if i%2 == 1 {
			t1, t2 = t2, t1
		}
		d, o = append(d, t1), append(o, t2)
	}
	b.ReportMetric(float64(median(d))/float64(median(o)), "p50-ratio")
	b.ReportMetric(float64(median(d).Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(median(o).Microseconds()), "p50-µs")
}

func timed(f func() error) (time.Duration, error) {
	t0 := time.Now()
	err := f()
	return time.Since(t0), err
}

func inFlight(n int) string {
	return map[int]string{1: "1-in-flight", 8: "8-in-flight"}[n]
}

// BenchmarkTrueAlone runs only the CLI side, b.N calls at 8 in flight,
// for -cpuprofile (the comparisons above profile both sides at once).
func BenchmarkTrueAlone(b *testing.B) {
	h := trueHandler(b)
	m := meshtest.New(b)
	if err := m.Worker.Register(h.spec, h); err != nil {
		b.Fatal(err)
	}
	req := &worker.Request{Tool: "true", Args: json.RawMessage(`{}`)}
	sides := map[string]func() error{
		"direct": func() error { return exec.Command("/bin/true").Run() },
		"handler": func() error {
			_, err := h.Handle(context.Background(), req, &recorder{})
			return err
		},
		"mesh": func() error {
			_, err := m.Caller.Call(context.Background(), "true", map[string]any{}, caller.WithTimeout(30*time.Second))
			return err
		},
	}
	for name, f := range sides {
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(4) // 4 × GOMAXPROCS(2) = 8 in flight
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := f(); err != nil {
						b.Error(err)
					}
				}
			})
		})
	}
}
