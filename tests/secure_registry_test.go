package tests

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// Under deploy/secure a pool has no JetStream API: the worker learns the
// server's refusal from one flushed probe and runs unregistered, saying
// so, instead of waiting out a registry request nobody will answer; its
// tools are still in alice's catalogue, which says it cannot know the
// fleet's size (complete:false).
func TestSecurePoolWithoutJetStreamRunsUnregistered(t *testing.T) {
	m := startSecure(t)
	logs := &syncBuffer{}
	w := m.demoWorker(t, worker.Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	register(t, w, envelope.ToolSpec{Name: "demo.unregistered"}, echo)
	if err := w.Announce(context.Background()); err != nil {
		t.Fatalf("Announce without a registry: %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "refused=$JS.API.INFO") || !strings.Contains(out, "runs unregistered") {
		t.Fatalf("the worker did not say the server refused its registry:\n%s", out)
	}
	if strings.Contains(out, "deadline exceeded") {
		t.Fatalf("the worker waited out a registry request the server refused:\n%s", out)
	}
	alice := m.caller(t, "alice")
	cat, err := alice.Catalog().List(context.Background(), 0)
	if err != nil || cat.Complete || !slices.ContainsFunc(cat.Tools, func(t catalog.Tool) bool { return t.Spec.Name == "demo.unregistered" }) {
		t.Fatalf("alice's catalogue: %v, complete=%v, %d tools %v", err, cat.Complete, len(cat.Tools), cat.ScopeWarnings)
	}
}
