package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// simFleet impersonates workers on one connection: each has a registry
// key (an up beacon naming its spec set) and answers the catalogue
// broadcast and its own catalogue subject exactly as a worker does, so a
// figure is the caller's and the server's cost, not worker processes'.
type simFleet struct {
	nc      *nats.Conn
	kv      jetstream.KeyValue
	mu      sync.RWMutex      // guards answers and beacons against join
	answers map[string][]byte // worker id → its catalogue answer
	order   []string
	beacons map[string][]byte
}

// specSet builds the public specs of set number n and their encoding.
func specSet(n, toolsEach int) []byte {
	specs := make([]envelope.ToolSpec, toolsEach)
	for i := range specs {
		specs[i] = envelope.ToolSpec{Name: fmt.Sprintf("ns%d.tool%d", n, i), Description: "a tool of the benchmark fleet",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}
	}
	b, _ := json.Marshal(specs)
	return b
}

// newSimFleet makes workers workers of toolsEach tools in sets distinct
// spec sets (worker w hosts set w%sets), registered as ids prefix+number.
func newSimFleet(tb testing.TB, srv *embedded.Server, prefix string, workers, toolsEach, sets int) *simFleet {
	f := &simFleet{nc: meshtest.Connect(tb, srv), answers: map[string][]byte{}, beacons: map[string][]byte{}}
	subjects := wire.Subjects{}
	js, _ := jetstream.New(f.nc)
	kv, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: subjects.RegistryBucket(), History: 1, TTL: 30 * time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	f.kv = kv
	encoded := make([][]byte, sets)
	for i := range encoded {
		encoded[i] = specSet(i, toolsEach)
	}
	for w := range workers {
		id := fmt.Sprintf("%s%05d", prefix, w)
		f.add(id, encoded[w%sets], time.Second)
		f.order = append(f.order, id)
	}
	answer := func(m *nats.Msg) {
		id := strings.TrimPrefix(m.Subject, subjects.Catalog()+".")
		f.mu.RLock()
		defer f.mu.RUnlock()
		if m.Subject == subjects.Catalog() {
			for _, id := range f.order {
				_ = f.nc.Publish(m.Reply, f.answers[id])
			}
			return
		}
		if a, ok := f.answers[id]; ok {
			_ = m.Respond(a)
		}
	}
	for _, subj := range []string{subjects.Catalog(), subjects.Catalog() + ".>"} {
		if _, err := f.nc.Subscribe(subj, answer); err != nil {
			tb.Fatal(err)
		}
	}
	_ = f.nc.Flush()
	return f
}

// add makes worker id, hosting the encoded specs tools and beaconing
// every interval, known to the fleet's answers (not yet registered).
func (f *simFleet) add(id string, tools []byte, interval time.Duration) {
	digest := wire.SpecsDigest(tools)
	answer, _ := json.Marshal(map[string]any{"worker_id": id, "tools": json.RawMessage(tools), "interval_ms": interval.Milliseconds(), "specs": digest})
	beacon, _ := json.Marshal(wire.Beacon{WorkerID: id, State: wire.BeaconUp, IntervalMS: interval.Milliseconds(), Specs: digest, RefreshMS: 600000}) // a 30 min TTL: the bench does not refresh
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[id], f.beacons[id] = answer, beacon
}

// beacon is worker id's up beacon.
func (f *simFleet) beacon(id string) []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.beacons[id]
}

// register writes every worker's registry key (a worker's READY).
func (f *simFleet) register(tb testing.TB) {
	for _, id := range f.order {
		if _, err := f.kv.Put(context.Background(), id, f.beacon(id)); err != nil {
			tb.Fatal(err)
		}
	}
}

// rawEntry is a catalogue answer as a raw NATS client reads it: plain
// encoding/json, schemas kept as bytes (no toolmesh decoder, which
// validates every spec and compiles its schema).
type rawEntry struct {
	WorkerID string `json:"worker_id"`
	Tools    []struct {
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Specs string `json:"specs"`
}

// rawGather is the peer: one request on the catalogue subject, answers
// counted until every worker's is in, each decoded as a raw client would.
func rawGather(tb testing.TB, nc *nats.Conn, workers int) {
	inbox := nc.NewInbox()
	ch := make(chan *nats.Msg, workers)
	sub, err := nc.ChanSubscribe(inbox, ch)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1)
	if err := nc.PublishRequest(wire.Subjects{}.Catalog(), inbox, nil); err != nil {
		tb.Fatal(err)
	}
	giveUp := time.After(time.Minute)
	for range workers {
		select {
		case m := <-ch:
			var e rawEntry
			if err := json.Unmarshal(m.Data, &e); err != nil {
				tb.Fatal(err)
			}
		case <-giveUp:
			tb.Fatal("raw gather: answers missing after a minute")
		}
	}
}

// BenchmarkCatalog measures one Catalog of 1,000 and 10,000 registered
// workers of 5 tools each (in 500 distinct spec sets, as replicas share
// them) beside a raw scatter-gather of the same catalogue subject that
// knows the fleet's size, in the same run: wall time per op, and bytes
// the caller's connection received per op.
//
//	go test -run '^$' -bench BenchmarkCatalog -benchtime 5x ./tests/
func BenchmarkCatalog(b *testing.B) {
	for _, workers := range []int{1_000, 10_000} {
		srv := meshtest.StartServer(b, embedded.Config{})
		f := newSimFleet(b, srv, "W", workers, 5, 500)
		f.register(b)
		b.Run(fmt.Sprintf("workers=%d/raw", workers), func(b *testing.B) {
			nc := meshtest.Connect(b, srv)
			in := nc.Stats().InBytes
			for b.Loop() {
				rawGather(b, nc, workers)
			}
			b.ReportMetric(float64(nc.Stats().InBytes-in)/float64(b.N), "B_in/op")
		})
		b.Run(fmt.Sprintf("workers=%d/toolmesh", workers), func(b *testing.B) {
			nc := meshtest.Connect(b, srv)
			c := meshtest.NewCaller(b, nc, caller.Config{})
			in := nc.Stats().InBytes
			for b.Loop() {
				cat, err := c.Catalog().List(context.Background(), 0)
				if err != nil || !cat.Complete || cat.Workers != workers || len(cat.Tools) != 500*5 {
					b.Fatalf("catalogue: %v complete=%v workers=%d tools=%d %v", err, cat.Complete, cat.Workers, len(cat.Tools), cat.ScopeWarnings)
				}
			}
			b.ReportMetric(float64(nc.Stats().InBytes-in)/float64(b.N), "B_in/op")
		})
		b.Run(fmt.Sprintf("workers=%d/toolmesh-cold", workers), func(b *testing.B) {
			// A new caller each time (a `toolmesh tools list`): every
			// spec set is fetched, none cached.
			for b.Loop() {
				c := meshtest.NewCaller(b, meshtest.Connect(b, srv), caller.Config{})
				cat, err := c.Catalog().List(context.Background(), 0)
				if err != nil || !cat.Complete || cat.Workers != workers {
					b.Fatalf("catalogue: %v complete=%v workers=%d %v", err, cat.Complete, cat.Workers, cat.ScopeWarnings)
				}
			}
		})
	}
}
