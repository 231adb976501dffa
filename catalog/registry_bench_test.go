package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
)

// BenchmarkRegistrySnapshot10k reads a registry of 10,000 workers' keys
// in one pass, as every List does, on an embedded server with
// JetStream.
func BenchmarkRegistrySnapshot10k(b *testing.B) {
	ctx := context.Background()
	srv, err := embedded.Start(ctx, embedded.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: wire.Subjects{}.RegistryBucket(), History: 1, TTL: 30 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	for w := range 10_000 {
		id := fmt.Sprintf("W%05d", w)
		v, _ := json.Marshal(wire.Beacon{WorkerID: id, State: wire.BeaconUp, IntervalMS: 1000, Specs: wire.SpecsDigest([]byte(fmt.Sprint(w % 500))), RefreshMS: 600000})
		if _, err := kv.Put(ctx, id, v); err != nil {
			b.Fatal(err)
		}
	}
	c := New(nc, Config{})
	for b.Loop() {
		reg, err := c.registrySnapshot(ctx)
		if err != nil || len(reg) != 10_000 {
			b.Fatalf("%d workers, %v", len(reg), err)
		}
	}
}
