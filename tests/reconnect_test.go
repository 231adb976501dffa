package tests

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// countingHandler counts log records by message, so a test can wait for
// the connection's own account of an outage.
type countingHandler struct {
	mu     sync.Mutex
	counts map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[r.Message]++
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }
func (h *countingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[msg]
}

// A worker outlives an outage longer than nats.go's default reconnect
// window (60 attempts) and serves again without a restart; the outage and
// its end are logged. The clock is shortened by a 10ms reconnect wait,
// and the outage measured in failed attempts, not in time.
func TestWorkerSurvivesLongOutage(t *testing.T) {
	srv, err := embedded.Start(context.Background(), embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.ClientURL()
	logs := &countingHandler{counts: map[string]int{}}
	opts := mesh.ConnectOptions{URL: url, ReconnectWait: 10 * time.Millisecond, Logger: slog.New(logs)}
	wnc, err := mesh.Connect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer wnc.Close()
	w := meshtest.NewWorker(t, wnc, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "echo"}, echo)

	_ = srv.Shutdown(context.Background())
	waitFor(t, "an outage longer than the default 60 reconnect attempts", func() bool {
		return logs.count("NATS reconnect attempt failed") > 60
	})
	if wnc.IsClosed() {
		t.Fatal("the worker's connection gave up")
	}
	srv2, err := embedded.Start(context.Background(), embedded.Config{Listen: strings.TrimPrefix(url, "nats://")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv2.Shutdown(context.Background()) }()
	waitFor(t, "the worker to reconnect", func() bool { return logs.count("NATS connection re-established") == 1 })
	if err := wnc.Flush(); err != nil { // the worker's subscriptions are back on the server
		t.Fatal(err)
	}
	if logs.count("NATS connection lost; reconnecting") != 1 {
		t.Errorf("disconnect logged %d times, want 1", logs.count("NATS connection lost; reconnecting"))
	}
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv2), caller.Config{})
	resp, err := c.Call(context.Background(), "echo", map[string]any{"back": true})
	if err != nil || !strings.Contains(string(resp.Data), `"back":true`) {
		t.Fatalf("after the outage: %v %s", err, resp.Data)
	}
}

// A connection closed for good ends `toolmesh worker` with a non-zero exit
// and a message naming the cause, so a supervisor restarts it.
func TestCommandWorkerExitsOnClosedConnection(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	cfg := writeTools(t, "tools:\n  - name: t\n    binding: {cli: {cmd: \"true\"}}\n")
	p := startProc(t, "worker", "--config", cfg, "--server", srv.ClientURL(), "--max-reconnects", "3", "--reconnect-wait", "10ms", "--format", "json")
	p.waitLine(t, regexp.MustCompile(`worker ready`))
	_ = srv.Shutdown(context.Background())
	p.waitLine(t, regexp.MustCompile(`closed for good.*"code":"connection_lost"`))
	if code := p.stop(t, syscall.Signal(0)); code == 0 { // signal 0 only waits
		t.Fatalf("worker exited 0 after its connection closed for good")
	}
}

// SIGTERM during an outage stops the worker at once instead of waiting
// out a drain that cannot reach the server.
func TestCommandWorkerStopsAtOnceDuringOutage(t *testing.T) {
	t.Parallel()
	srv := meshtest.StartServer(t, embedded.Config{})
	cfg := writeTools(t, "tools:\n  - name: t\n    binding: {cli: {cmd: \"true\"}}\n")
	p := startProc(t, "worker", "--config", cfg, "--server", srv.ClientURL(), "--reconnect-wait", "10ms", "--drain-timeout", "1h")
	p.waitLine(t, regexp.MustCompile(`worker ready`))
	_ = srv.Shutdown(context.Background())
	p.waitLine(t, regexp.MustCompile(`NATS connection lost`))
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("worker exited %d after SIGTERM during an outage", code)
	}
}
