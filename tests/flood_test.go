package tests

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// floodHeapBound is the bound the flood test holds the whole process's
// heap in use to (server, worker and caller together). What bounds it:
// the worker admits at most MaxConcurrent+MaxQueued (8+32) calls, its call
// subscription holds at most 64 MiB unread, the caller keeps one pending
// record per call in flight (floodSenders).
const floodHeapBound = 256 << 20

const floodSenders = 1024

// floodOutcome counts how a flood's calls ended.
type floodOutcome struct {
	results, overloaded, other atomic.Int64
	maxHeap                    atomic.Uint64
	firstOther                 atomic.Pointer[envelope.Problem]
}

// flood sends n calls to "work" from one caller as fast as floodSenders
// goroutines can, sampling the heap every 2,000 answers.
func flood(ctx context.Context, c *caller.Caller, n int) *floodOutcome {
	var out floodOutcome
	var next, done atomic.Int64
	sample := make(chan struct{}, 1)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for range sample {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > out.maxHeap.Load() {
				out.maxHeap.Store(ms.HeapInuse)
			}
		}
	}()
	var wg sync.WaitGroup
	for range floodSenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				out.record(c.Call(ctx, "work", nil, caller.WithRetries(caller.NoRetries)))
				if done.Add(1)%2000 == 0 {
					select {
					case sample <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	wg.Wait()
	close(sample)
	<-sampled
	return &out
}

func (o *floodOutcome) record(_ envelope.Response, err error) {
	if err == nil {
		o.results.Add(1)
		return
	}
	p := envelope.AsProblem(err, envelope.CodeInternal)
	if p.Code == envelope.CodeOverloaded && p.RetryAfter != nil {
		o.overloaded.Add(1)
		return
	}
	o.other.Add(1)
	o.firstOther.CompareAndSwap(nil, p)
}

// A worker with MaxConcurrent 8 flooded with 100,000 calls (20,000 under
// the race detector) from one caller answers every one — a result, or
// overloaded with retry_after — keeps its heap bounded, and never cancels
// a call of its live caller for lost liveness.
func TestFloodIsAnsweredWithBoundedHeap(t *testing.T) {
	n := 100_000
	if raceEnabled {
		n = 20_000
	}
	f := newMesh(t, worker.Config{Limits: worker.Limits{MaxConcurrent: 8}}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "work"}, echo)
	out := flood(context.Background(), f.c, n)
	if p := out.firstOther.Load(); p != nil {
		t.Fatalf("%d calls ended neither in a result nor overloaded; first: %s: %s", out.other.Load(), p.Code, p.Detail)
	}
	if got := out.results.Load() + out.overloaded.Load(); got != int64(n) {
		t.Fatalf("%d of %d calls answered", got, n)
	}
	if out.maxHeap.Load() > floodHeapBound {
		t.Fatalf("heap in use reached %d MiB, over the %d MiB bound", out.maxHeap.Load()>>20, floodHeapBound>>20)
	}
	t.Logf("%d calls: %d results, %d overloaded; max heap in use %d MiB", n, out.results.Load(), out.overloaded.Load(), out.maxHeap.Load()>>20)
}

// BenchmarkFlood100k runs the full 100,000-call flood and reports the
// answers and the heap's high-water mark.
func BenchmarkFlood100k(b *testing.B) {
	srv := meshtest.StartServer(b, embedded.Config{})
	w := meshtest.NewWorker(b, meshtest.Connect(b, srv), worker.Config{Limits: worker.Limits{MaxConcurrent: 8}})
	register(b, w, envelope.ToolSpec{Name: "work"}, echo)
	c := meshtest.NewCaller(b, meshtest.Connect(b, srv), caller.Config{})
	for b.Loop() {
		out := flood(context.Background(), c, 100_000)
		if out.other.Load() != 0 {
			b.Fatalf("%d calls ended neither in a result nor overloaded", out.other.Load())
		}
		b.ReportMetric(float64(out.overloaded.Load()), "overloaded/op")
		b.ReportMetric(float64(out.maxHeap.Load()>>20), "max-heap-MiB")
	}
}
