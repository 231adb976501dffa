package tests

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// envLeakTools print SECRET (the binding's env value TOK) after or before
// n ({arg.n}) bytes of padding, with shell built-ins only: leak.tail where
// the 4 KiB stderr tail of its Problem cuts, leak.stderr where the stderr
// tail of its lines result cuts (it exits 0), leak.json and leak.ndjson
// where the 200-byte output excerpt of their Problem cuts.
func envLeakTools(secret string) string {
	tool := func(name, script, format string) string {
		return fmt.Sprintf(`
  - name: %s
    binding:
      cli:
        cmd: sh
        args: ["-c", %q]
        args_template: "{arg.n}"
        env: {TOK: %q}
        output_format: %s
`, name, script, secret, format)
	}
	return "tools:" +
		tool("leak.tail", `printf %s "$TOK" >&2; printf "%${0}s" "" >&2; exit 3`, "json") +
		tool("leak.stderr", `printf %s "$TOK" >&2; printf "%${0}s" "" >&2`, "lines") +
		tool("leak.json", `printf "%${0}s" ""; printf %s "$TOK"; printf zzz`, "json") +
		tool("leak.ndjson", `printf "%${0}s" ""; printf '%s\n' "$TOK"`, "ndjson")
}

// leakWatch gathers every text that left a worker: answers, $SRV.STATS,
// spans and logs.
type leakWatch struct {
	logs  *syncBuffer
	log   *slog.Logger
	spans *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider
	mu    sync.Mutex
	seen  []string
}

func newLeakWatch(t *testing.T) *leakWatch {
	lw := &leakWatch{logs: &syncBuffer{}, spans: tracetest.NewInMemoryExporter()}
	lw.log = slog.New(slog.NewTextHandler(lw.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	lw.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(lw.spans))
	t.Cleanup(func() { _ = lw.tp.Shutdown(context.Background()) })
	return lw
}

// call records what one call answered, Problem or result; it is safe
// for concurrent use.
func (lw *leakWatch) call(t *testing.T, c *caller.Caller, tool string, args map[string]any, wantErr bool) {
	t.Helper()
	resp, err := c.Call(context.Background(), tool, args)
	if (err != nil) != wantErr {
		t.Errorf("%s %v: err %v, want an error: %v", tool, args, err, wantErr)
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	var p *envelope.Problem
	if errors.As(err, &p) {
		lw.seen = append(lw.seen, string(mustJSON(p)))
	}
	lw.seen = append(lw.seen, string(mustJSON(resp)))
}

// calls makes the calls of every n in [from, to] at once.
func (lw *leakWatch) calls(t *testing.T, c *caller.Caller, from, to int, one func(n int)) {
	t.Helper()
	var wg sync.WaitGroup
	for n := from; n <= to; n++ {
		wg.Go(func() { one(n) })
	}
	wg.Wait()
}

// finish adds $SRV.STATS, the spans and the logs, then fails on any
// piece of secret at least 8 bytes long.
func (lw *leakWatch) finish(t *testing.T, f *meshFixture, secrets ...string) {
	t.Helper()
	for _, subj := range []string{"$SRV.STATS", "$SRV.STATS.toolmesh"} {
		msg, err := f.cnc.Request(subj, nil, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lw.seen = append(lw.seen, string(msg.Data))
	}
	if len(lw.spans.GetSpans()) == 0 {
		t.Fatal("no spans exported")
	}
	for _, s := range lw.spans.GetSpans() {
		lw.seen = append(lw.seen, fmt.Sprintf("%s %+v %+v %+v", s.Name, s.Status, s.Attributes, s.Events))
	}
	lw.seen = append(lw.seen, lw.logs.String())
	all := strings.Join(lw.seen, "\n")
	for _, secret := range secrets {
		for i := 0; i+8 <= len(secret); i++ {
			if j := strings.Index(all, secret[i:i+8]); j >= 0 {
				t.Fatalf("secret piece %q leaked: …%s…", secret[i:i+8], all[max(0, j-60):min(len(all), j+60)])
			}
		}
	}
	if !strings.Contains(all, "[REDACTED]") {
		t.Error("no [REDACTED] mark anywhere: did the tools print the secret at all?")
	}
}

// A binding's env secret printed by a tool at every offset around the
// 4 KiB stderr tail (in a Problem and in a lines result) and the 200-byte
// output excerpt never appears in Problems, stats, spans or logs, whole or
// as any 8-byte piece.
func TestEnvSecretNeverLeaks(t *testing.T) {
	lw := newLeakWatch(t)
	f := newMesh(t, worker.Config{Logger: lw.log, Tracing: worker.Tracing{TracerProvider: lw.tp}}, caller.Config{Logger: lw.log, TracerProvider: lw.tp})
	secret := randomToken(t, 40)
	registerToolsFile(t, f.w, envLeakTools(secret), lw.log)
	// The 40-byte secret straddles the cut for n in 4057..4095 (tail) and
	// 161..199 (excerpt); a few offsets either side see it whole or not.
	lw.calls(t, f.c, 4052, 4100, func(n int) {
		lw.call(t, f.c, "leak.tail", map[string]any{"n": n}, true)
		lw.call(t, f.c, "leak.stderr", map[string]any{"n": n}, false)
	})
	lw.calls(t, f.c, 156, 204, func(n int) {
		lw.call(t, f.c, "leak.json", map[string]any{"n": n}, true)
		lw.call(t, f.c, "leak.ndjson", map[string]any{"n": n}, true)
	})
	lw.finish(t, f, secret)
}

// A Go handler's error text loses URL credentials and the call's bearer,
// whether it returns a Problem or a plain error: the caller sees the user
// name and where it failed, never the password.
func TestHandlerErrorsLoseURLCredentialsAndBearer(t *testing.T) {
	lw := newLeakWatch(t)
	f := newMesh(t, worker.Config{Logger: lw.log, Tracing: worker.Tracing{TracerProvider: lw.tp}}, caller.Config{Logger: lw.log, TracerProvider: lw.tp})
	password, bearer := "hunter2-"+randomToken(t, 12), randomToken(t, 40)
	register(t, f.w, envelope.ToolSpec{Name: "db.query"}, func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		var a struct{ Plain bool }
		_ = req.Bind(&a)
		if a.Plain {
			return nil, fmt.Errorf("dial postgres://admin:%s@db: refused (token %s): %w", password, req.Bearer, errors.ErrUnsupported)
		}
		return nil, envelope.Problemf(envelope.CodeToolFailed, "dial postgres://admin:%s@db: refused", password).
			WithExtension("dsn", map[string]any{"url": "postgres://admin:" + password + "@db/app", "auth": "Bearer " + req.Bearer})
	})
	for _, plain := range []bool{false, true} {
		resp, err := f.c.Call(context.Background(), "db.query", map[string]any{"plain": plain}, caller.WithBearer(bearer))
		p := wantCode(t, err, envelope.CodeToolFailed)
		if !strings.Contains(p.Detail, "postgres://admin:[REDACTED]@db: refused") {
			t.Errorf("plain=%v: detail %q, want the user and host kept and the password hidden", plain, p.Detail)
		}
		lw.seen = append(lw.seen, string(mustJSON(p)), string(mustJSON(resp)))
	}
	lw.finish(t, f, password, bearer)
}

// A middleware that takes the bearer off the request (an auth layer that
// checks it and passes it on in the context) does not turn its redaction
// off: the worker redacts the bearer the call brought, not whatever
// req.Bearer holds when the call ends.
func TestBearerTakenOffTheRequestStaysRedacted(t *testing.T) {
	lw := newLeakWatch(t)
	f := newMesh(t, worker.Config{Logger: lw.log, Tracing: worker.Tracing{TracerProvider: lw.tp}}, caller.Config{Logger: lw.log, TracerProvider: lw.tp})
	type tokenKey struct{}
	takeBearer := func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			ctx = context.WithValue(ctx, tokenKey{}, req.Bearer)
			req.Bearer = ""
			return next.Handle(ctx, req, emit)
		})
	}
	err := f.w.Register(envelope.ToolSpec{Name: "api.fetch"}, worker.HandlerFunc(func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		return nil, fmt.Errorf("the API refused token %s", ctx.Value(tokenKey{}))
	}), takeBearer)
	if err != nil {
		t.Fatal(err)
	}
	bearer := randomToken(t, 40)
	resp, err := f.c.Call(context.Background(), "api.fetch", nil, caller.WithBearer(bearer))
	p := wantCode(t, err, envelope.CodeToolFailed)
	if !strings.Contains(p.Detail, "the API refused token") {
		t.Fatalf("detail %q: want the handler's error, redacted", p.Detail)
	}
	lw.seen = append(lw.seen, string(mustJSON(p)), string(mustJSON(resp)))
	lw.finish(t, f, bearer)
}

// A bridged server's env secret in the text of its isError result, at
// every offset around the 2,000-byte cut of the Problem's detail, is in
// no Problem (detail nor mcp_content), span or log.
func TestBridgedEnvSecretNeverLeaks(t *testing.T) {
	lw := newLeakWatch(t)
	secret := randomToken(t, 40)
	srv := meshtest.StartServer(t, embedded.Config{})
	b, err := bridge.Start(context.Background(), meshtest.Connect(t, srv), bridge.Config{
		Entry: bridge.Entry{Namespace: "t", InheritEnv: []string{"PATH"},
			Server: bridge.ServerConfig{Command: mcpServerBin(t), Env: map[string]string{"TESTSERVER_SECRET": secret}}},
		Worker: worker.Config{Logger: lw.log, Tracing: worker.Tracing{TracerProvider: lw.tp}}, Logger: lw.log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Drain(context.Background()) })
	f := &meshFixture{srv: srv, cnc: meshtest.Connect(t, srv)}
	f.c = meshtest.NewCaller(t, f.cnc, caller.Config{Logger: lw.log, TracerProvider: lw.tp})
	lw.calls(t, f.c, 1955, 2005, func(n int) {
		lw.call(t, f.c, "t.fail_secret", map[string]any{"n": n}, true)
	})
	lw.finish(t, f, secret)
}
