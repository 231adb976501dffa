package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// BenchmarkCatalog10kWorkers measures one Catalog of a fleet of 10,000
// registered workers hosting 100,000 tools (10 each). The fleet is
// impersonated by one responder answering the catalogue broadcast once per
// worker, with the registry holding one key per worker, so the figure is
// the caller's and the server's cost, not 10,000 worker processes'.
func BenchmarkCatalog10kWorkers(b *testing.B) {
	const workers, toolsEach = 10_000, 10
	srv := meshtest.StartServer(b, embedded.Config{})
	fleet := meshtest.Connect(b, srv)
	subjects := mesh.Subjects{}
	js, _ := jetstream.New(fleet)
	kv, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: subjects.RegistryBucket(), History: 1})
	if err != nil {
		b.Fatal(err)
	}
	answers := make([][]byte, workers)
	for w := range workers {
		id := fmt.Sprintf("W%05d", w)
		specs := make([]envelope.ToolSpec, toolsEach)
		for i := range specs {
			specs[i] = envelope.ToolSpec{Name: fmt.Sprintf("ns%d.tool%d", w%5000, i), Description: "a tool of the benchmark fleet",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}
		}
		answers[w], _ = json.Marshal(map[string]any{"worker_id": id, "tools": specs})
		if _, err := kv.Put(context.Background(), id, []byte("{}")); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := fleet.Subscribe(subjects.Catalog(), func(m *nats.Msg) {
		for _, a := range answers {
			_ = fleet.Publish(m.Reply, a)
		}
	}); err != nil {
		b.Fatal(err)
	}
	_ = fleet.Flush()
	c := meshtest.NewCaller(b, meshtest.Connect(b, srv), caller.Config{})
	b.ResetTimer()
	for b.Loop() {
		cat, err := c.Catalog(context.Background(), time.Minute)
		if err != nil || !cat.Complete || cat.Workers != workers || len(cat.Tools) != workers/2*toolsEach {
			b.Fatalf("catalogue: %v complete=%v workers=%d tools=%d %v", err, cat.Complete, cat.Workers, len(cat.Tools), cat.ScopeWarnings)
		}
	}
}
