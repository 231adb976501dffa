package tests

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/caller/callermw"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/workermw"
)

// trail records the order middleware runs in.
type trail struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trail) add(s string) { tr.mu.Lock(); tr.steps = append(tr.steps, s); tr.mu.Unlock() }
func (tr *trail) reset()       { tr.mu.Lock(); tr.steps = nil; tr.mu.Unlock() }
func (tr *trail) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return strings.Join(tr.steps, ",")
}

// mark is a worker middleware that records entering and leaving.
func (tr *trail) mark(name string) worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			tr.add(name + ">")
			defer tr.add("<" + name)
			return next.Handle(ctx, req, emit)
		})
	}
}

// wantShortCircuit checks that the trail of a call that passed reads
// wantOpen, then makes a call of shut, which a middleware refuses with
// code, and checks that its trail reads wantShut and that the handler,
// run once for the call that passed, ran no more.
func (tr *trail) wantShortCircuit(t *testing.T, c *caller.Caller, ran *atomic.Int64, wantOpen, shut string, code envelope.Code, wantShut string) {
	t.Helper()
	if got := tr.String(); got != wantOpen {
		t.Errorf("order %s, want %s", got, wantOpen)
	}
	tr.reset()
	_, err := c.Call(context.Background(), shut, nil)
	wantCode(t, err, code)
	if got := tr.String(); got != wantShut || ran.Load() != 1 {
		t.Errorf("short circuit: order %s (want %s), handler ran %d times (want 1)", got, wantShut, ran.Load())
	}
}

// refuse is a worker middleware that answers unauthorized itself.
func refuse(next worker.Handler) worker.Handler {
	return worker.HandlerFunc(func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return nil, envelope.NewProblem(envelope.CodeUnauthorized, "refused by middleware")
	})
}

func TestWorkerMiddlewareOrderAndShortCircuit(t *testing.T) {
	tr := &trail{}
	m := meshtest.NewWith(t, meshtest.Config{Worker: worker.Config{Middleware: []worker.Middleware{tr.mark("a"), tr.mark("b")}}})
	var ran atomic.Int64
	h := worker.HandlerFunc(func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		ran.Add(1)
		tr.add("h")
		return map[string]int{}, nil
	})
	register := func(name string, mw ...worker.Middleware) {
		if err := m.Worker.Register(envelope.ToolSpec{Name: name}, h, mw...); err != nil {
			t.Fatal(err)
		}
	}
	register("open", tr.mark("c"))
	register("shut", tr.mark("c"), refuse, tr.mark("d"))
	if _, err := m.Caller.Call(context.Background(), "open", nil); err != nil {
		t.Fatal(err)
	}
	tr.wantShortCircuit(t, m.Caller, &ran, "a>,b>,c>,h,<c,<b,<a", "shut", envelope.CodeUnauthorized, "a>,b>,c>,<c,<b,<a")
}

func TestCallerMiddlewareOrderAndShortCircuit(t *testing.T) {
	tr := &trail{}
	mark := func(name string) caller.Middleware {
		return func(next caller.Invoker) caller.Invoker {
			return func(ctx context.Context, inv *caller.Invocation) (string, envelope.ToolEvent) {
				tr.add(name + ">")
				defer tr.add("<" + name)
				return next(ctx, inv)
			}
		}
	}
	gate := func(next caller.Invoker) caller.Invoker {
		return func(ctx context.Context, inv *caller.Invocation) (string, envelope.ToolEvent) {
			if inv.Tool == "secret" {
				return "", envelope.ErrorEvent(envelope.NewProblem(envelope.CodeForbidden, "not from this caller"))
			}
			return next(ctx, inv)
		}
	}
	m := meshtest.NewWith(t, meshtest.Config{Caller: caller.Config{Middleware: []caller.Middleware{mark("a"), gate, mark("b")}}})
	var ran atomic.Int64
	for _, name := range []string{"open", "secret"} {
		if err := m.Worker.Register(envelope.ToolSpec{Name: name}, worker.HandlerFunc(func(context.Context, *worker.Request, worker.Emitter) (any, error) {
			ran.Add(1)
			tr.add("worker")
			return 7, nil
		})); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := caller.CallAs[int](context.Background(), m.Caller, "open", nil); err != nil || n != 7 {
		t.Fatalf("open: %d, %v", n, err)
	}
	tr.wantShortCircuit(t, m.Caller, &ran, "a>,b>,worker,<b,<a", "secret", envelope.CodeForbidden, "a>,<a")
}

func TestBearerMiddlewareAndDefaultOptions(t *testing.T) {
	m := meshtest.NewWith(t, meshtest.Config{Worker: worker.Config{Middleware: []worker.Middleware{workermw.BearerTokens("s3cret", "")}}})
	register(t, m.Worker, envelope.ToolSpec{Name: "echo"}, echo)
	ctx := context.Background()
	_, err := m.Caller.Call(ctx, "echo", nil)
	wantCode(t, err, envelope.CodeUnauthorized)
	_, err = m.Caller.Call(ctx, "echo", nil, caller.WithBearer("guess"))
	p := wantCode(t, err, envelope.CodeUnauthorized)
	if strings.Contains(p.Detail, "guess") {
		t.Errorf("the refusal repeats the token: %s", p.Detail)
	}
	if _, err := m.Caller.Call(ctx, "echo", nil, caller.WithBearer("s3cret")); err != nil {
		t.Errorf("right token refused: %v", err)
	}
	// A caller configured once sends the token on every call.
	c := meshtest.NewCaller(t, m.Connect(t), caller.Config{Options: []caller.Option{caller.WithBearer("s3cret")}})
	if _, err := c.Call(ctx, "echo", nil); err != nil {
		t.Errorf("default option not applied: %v", err)
	}
}

func TestLimitMiddleware(t *testing.T) {
	m := meshtest.New(t)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	block := worker.HandlerFunc(func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		started <- struct{}{}
		<-release
		return map[string]int{}, nil
	})
	if err := m.Worker.Register(envelope.ToolSpec{Name: "one"}, block, workermw.Concurrency(1)); err != nil {
		t.Fatal(err)
	}
	if err := m.Worker.Register(envelope.ToolSpec{Name: "rare"}, worker.HandlerFunc(echo), workermw.RateLimit(0.0001, 1)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { _, err := m.Caller.Call(ctx, "one", nil); first <- err }()
	<-started
	_, err := m.Caller.Call(ctx, "one", nil, caller.WithRetries(caller.NoRetries))
	wantCode(t, err, envelope.CodeOverloaded)
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the call holding the slot: %v", err)
	}
	if _, err := m.Caller.Call(ctx, "rare", nil); err != nil {
		t.Fatalf("first call within the rate: %v", err)
	}
	_, err = m.Caller.Call(ctx, "rare", nil, caller.WithRetries(caller.NoRetries))
	if p := wantCode(t, err, envelope.CodeOverloaded); p.RetryAfter == nil || *p.RetryAfter < 1 {
		t.Errorf("rate limited without a useful retry_after: %v", p.RetryAfter)
	}
}

func TestAccessLogMiddleware(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	m := meshtest.NewWith(t, meshtest.Config{Worker: worker.Config{Middleware: []worker.Middleware{workermw.AccessLog(log)}}})
	register(t, m.Worker, envelope.ToolSpec{Name: "fail"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return nil, envelope.NewProblem(envelope.CodeToolFailed, "no")
	})
	_, err := m.Caller.Call(context.Background(), "fail", nil, caller.WithBearer("hidden-token"))
	wantCode(t, err, envelope.CodeToolFailed)
	wantLogged(t, buf.String(), []string{"level=WARN", "tool=fail", "outcome=tool_failed", "call_id="}, "hidden-token")
}

func TestMetricsMiddleware(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m := meshtest.NewWith(t, meshtest.Config{Worker: worker.Config{Middleware: []worker.Middleware{workermw.Metrics(mp)}}})
	register(t, m.Worker, envelope.ToolSpec{Name: "echo"}, echo)
	register(t, m.Worker, envelope.ToolSpec{Name: "fail"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return nil, envelope.NewProblem(envelope.CodeUnauthorized, "no")
	})
	ctx := context.Background()
	for range 2 {
		if _, err := m.Caller.Call(ctx, "echo", nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.Caller.Call(ctx, "fail", nil)
	wantCode(t, err, envelope.CodeUnauthorized)

	got := wantMetrics(t, reader, map[string]int64{
		"toolmesh.worker.calls/echo/":              2,
		"toolmesh.worker.calls/fail/":              1,
		"toolmesh.worker.errors/fail/unauthorized": 1,
		"toolmesh.worker.duration/echo/":           2,
		"toolmesh.worker.duration/fail/":           1,
		"toolmesh.worker.in_flight/echo/":          0,
		"toolmesh.worker.in_flight/fail/":          0,
	})
	if _, ok := got["toolmesh.worker.errors/echo/"]; ok {
		t.Errorf("errors counted for a tool that never failed: %v", got)
	}
}

// TestNoRetries: Config.Retries NoRetries sends an overloaded call once,
// where the zero value would retry it DefaultRetries times.
func TestNoRetries(t *testing.T) {
	var attempts atomic.Int64
	count := func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			attempts.Add(1)
			return next.Handle(ctx, req, emit)
		})
	}
	m := meshtest.NewWith(t, meshtest.Config{Caller: caller.Config{Retries: caller.NoRetries}})
	if err := m.Worker.Register(envelope.ToolSpec{Name: "counted"}, worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
		return nil, envelope.NewProblem(envelope.CodeOverloaded, "always busy").WithRetryAfter(0.001)
	}), count); err != nil {
		t.Fatal(err)
	}
	_, err := m.Caller.Call(context.Background(), "counted", nil)
	wantCode(t, err, envelope.CodeOverloaded)
	if n := attempts.Load(); n != 1 {
		t.Errorf("NoRetries: %d attempts, want 1", n)
	}
	attempts.Store(0)
	c := meshtest.NewCaller(t, m.Connect(t), caller.Config{})
	_, err = c.Call(context.Background(), "counted", nil)
	wantCode(t, err, envelope.CodeOverloaded)
	if n := attempts.Load(); n != 1+caller.DefaultRetries {
		t.Errorf("zero Retries: %d attempts, want %d", n, 1+caller.DefaultRetries)
	}
}

// wantMetrics checks that reader holds want (see collect) and returns
// everything it holds.
func wantMetrics(t *testing.T, reader *sdkmetric.ManualReader, want map[string]int64) map[string]int64 {
	t.Helper()
	got := collect(t, reader)
	for k, v := range want {
		if n, ok := got[k]; !ok || n != v {
			t.Errorf("%s = %d (present %v), want %d", k, n, ok, v)
		}
	}
	return got
}

// wantLogged checks that the access log out has every line part in want
// and never the secret.
func wantLogged(t *testing.T, out string, want []string, secret string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("access log %q lacks %q", out, w)
		}
	}
	if strings.Contains(out, secret) {
		t.Errorf("access log holds the bearer: %s", out)
	}
}

// collect reads reader's metrics as "<name>/<tool>/<code>" → value (the
// count for a histogram), summed over data points.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					tool, _ := p.Attributes.Value("toolmesh.tool")
					code, _ := p.Attributes.Value("toolmesh.code")
					got[mt.Name+"/"+tool.AsString()+"/"+code.AsString()] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					tool, _ := p.Attributes.Value("toolmesh.tool")
					got[mt.Name+"/"+tool.AsString()+"/"] += int64(p.Count)
				}
			}
		}
	}
	return got
}

// TestCallerMetricsAndAccessLog: the caller's middleware counts a logical
// call once, and sees failures the worker never saw (no worker at all).
func TestCallerMetricsAndAccessLog(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	var buf syncBuffer
	m := meshtest.NewWith(t, meshtest.Config{Caller: caller.Config{Middleware: []caller.Middleware{
		callermw.Metrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		callermw.AccessLog(slog.New(slog.NewTextHandler(&buf, nil))),
	}}})
	register(t, m.Worker, envelope.ToolSpec{Name: "echo"}, echo)
	ctx := context.Background()
	if _, err := m.Caller.Call(ctx, "echo", nil, caller.WithBearer("hidden-token")); err != nil {
		t.Fatal(err)
	}
	_, err := m.Caller.Call(ctx, "absent", nil)
	wantCode(t, err, envelope.CodeToolNotFound)
	wantMetrics(t, reader, map[string]int64{
		"toolmesh.caller.calls/echo/":                  1,
		"toolmesh.caller.calls/absent/":                1,
		"toolmesh.caller.errors/absent/tool_not_found": 1,
		"toolmesh.caller.duration/echo/":               1,
		"toolmesh.caller.in_flight/echo/":              0,
	})
	wantLogged(t, buf.String(), []string{"tool=echo", "tool=absent", "outcome=tool_not_found", "level=WARN"}, "hidden-token")
}

// TestZeroMeansDefault: one rule for zero across the API — a zero
// Config.Retries and WithRetries(0) both mean the default, and NoRetries
// (in either place) means none; an option wins over the Config.
func TestZeroMeansDefault(t *testing.T) {
	var attempts atomic.Int64
	m := meshtest.New(t)
	if err := m.Worker.Register(envelope.ToolSpec{Name: "busy"}, worker.HandlerFunc(func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		attempts.Add(1)
		return nil, envelope.NewProblem(envelope.CodeOverloaded, "always busy").WithRetryAfter(0.001)
	})); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		config   int
		opts     []caller.Option
		attempts int64
	}{
		{"zero config", 0, nil, 1 + caller.DefaultRetries},
		{"zero config, WithRetries(0)", 0, []caller.Option{caller.WithRetries(0)}, 1 + caller.DefaultRetries},
		{"zero config, WithRetries(NoRetries)", 0, []caller.Option{caller.WithRetries(caller.NoRetries)}, 1},
		{"zero config, WithRetries(3)", 0, []caller.Option{caller.WithRetries(3)}, 4},
		{"NoRetries config", caller.NoRetries, nil, 1},
		{"NoRetries config, WithRetries(0)", caller.NoRetries, []caller.Option{caller.WithRetries(0)}, 1},
		{"NoRetries config, WithRetries(1)", caller.NoRetries, []caller.Option{caller.WithRetries(1)}, 2},
		{"Retries 1", 1, nil, 2},
		{"Retries 1, WithRetries(NoRetries)", 1, []caller.Option{caller.WithRetries(caller.NoRetries)}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			attempts.Store(0)
			cl := meshtest.NewCaller(t, m.Connect(t), caller.Config{Retries: c.config})
			_, err := cl.Call(context.Background(), "busy", nil, c.opts...)
			wantCode(t, err, envelope.CodeOverloaded)
			if n := attempts.Load(); n != c.attempts {
				t.Errorf("%d attempts, want %d", n, c.attempts)
			}
		})
	}
}
