package toolmesh_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh"
	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/worker"
)

// One call makes one process a complete mesh: a tool registered on its
// worker answers its caller, its catalogue is complete at once (JetStream
// is on by default), and Close stops everything.
func TestStartMesh(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cfg  toolmesh.MeshConfig
	}{
		{"in-process", toolmesh.MeshConfig{Server: embedded.Config{StoreDir: t.TempDir()}}},
		{"listening", toolmesh.MeshConfig{Server: embedded.Config{Listen: "127.0.0.1:0", StoreDir: t.TempDir()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := toolmesh.StartMesh(ctx, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if (m.Server.ClientURL() == "") != (tc.cfg.Server.Listen == "") {
				t.Errorf("client URL %q for listen %q", m.Server.ClientURL(), tc.cfg.Server.Listen)
			}
			if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "double"},
				func(_ context.Context, _ *worker.Request, in struct{ N int }) (int, error) { return 2 * in.N, nil }); err != nil {
				t.Fatal(err)
			}
			if n, err := caller.CallAs[int](ctx, m.Caller, "double", map[string]int{"N": 21}); err != nil || n != 42 {
				t.Fatalf("double: %d, %v", n, err)
			}
			cat, err := m.Caller.Catalog().List(ctx, time.Minute)
			if err != nil || !cat.Complete || cat.Workers != 1 {
				t.Fatalf("catalogue: %v complete=%v workers=%d %v", err, cat.Complete, cat.Workers, cat.ScopeWarnings)
			}
			if err := m.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if m.Server.Server.Running() {
				t.Error("the server still runs after Close")
			}
		})
	}
}
