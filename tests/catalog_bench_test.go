package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
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

// The catalogue's caller CPU beside a raw gather's: the caller runs in a
// process of its own (this test binary again, as TestCatalogCallerProcess)
// so getrusage counts only its CPU, not the server's or the simulated
// fleet's, which share the benchmark's process.

// catalogSides are the ways one round reads the catalogue: a raw
// scatter-gather of the catalogue subject that knows the fleet size, a
// caller's Catalog (its spec sets cached from earlier rounds), and a new
// caller's first Catalog (what `toolmesh tools list` does).
var catalogSides = []string{"raw", "toolmesh", "toolmesh-cold"}

// catalogRow is one side's cost in one round.
type catalogRow struct {
	Side    string `json:"side"`
	WallNS  int64  `json:"wall_ns"`
	CPUNS   int64  `json:"cpu_ns"` // user + system, the whole caller process
	BytesIn uint64 `json:"bytes_in"`
	Alloc   uint64 `json:"alloc"` // heap bytes allocated
}

// cpuNow is this process's user + system CPU time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs op once and reports its wall time, this process's CPU
// time and heap allocation meanwhile, and the bytes nc received.
func measure(side string, nc *nats.Conn, op func() error) (catalogRow, error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc, in := ms.TotalAlloc, nc.Stats().InBytes
	start, cpu := time.Now(), cpuNow()
	err := op()
	row := catalogRow{Side: side, WallNS: int64(time.Since(start)), CPUNS: int64(cpuNow() - cpu)}
	runtime.ReadMemStats(&ms)
	row.Alloc, row.BytesIn = ms.TotalAlloc-alloc, nc.Stats().InBytes-in
	return row, err
}

// catalogCaller is the caller process's state: one connection per side.
type catalogCaller struct {
	t       *testing.T
	url     string
	workers int
	raw     *nats.Conn
	warm    *nats.Conn
	c       *caller.Caller
}

// complete checks a catalogue lists the whole fleet.
func (cc *catalogCaller) complete(cat catalog.Listing, err error) error {
	if err != nil {
		return err
	}
	if !cat.Complete || cat.Workers != cc.workers {
		return fmt.Errorf("catalogue complete=%v with %d of %d workers %v", cat.Complete, cat.Workers, cc.workers, cat.ScopeWarnings)
	}
	return nil
}

// side measures one side once.
func (cc *catalogCaller) side(ctx context.Context, side string) (catalogRow, error) {
	switch side {
	case "raw":
		return measure(side, cc.raw, func() error { rawGather(cc.t, cc.raw, cc.workers); return nil })
	case "toolmesh":
		return measure(side, cc.warm, func() error { return cc.complete(cc.c.Catalog().List(ctx, 0)) })
	default:
		nc, err := nats.Connect(cc.url)
		if err != nil {
			return catalogRow{}, err
		}
		defer nc.Close()
		return measure(side, nc, func() error {
			c, err := caller.New(nc, caller.Config{})
			if err != nil {
				return err
			}
			defer c.Close()
			return cc.complete(c.Catalog().List(ctx, 0))
		})
	}
}

// TestCatalogCallerProcess is BenchmarkCatalogCallerCPU's caller process
// (it does nothing unless started by it): for each line on stdin, one
// round of every side in an order rotating by round, each side's row a
// JSON line on file descriptor 3 (stdout is the test's own).
func TestCatalogCallerProcess(t *testing.T) {
	url, workers := os.Getenv("TOOLMESH_CATALOG_CALLER"), os.Getenv("TOOLMESH_CATALOG_WORKERS")
	if url == "" {
		t.Skip("the caller process of BenchmarkCatalogCallerCPU; runs only when it starts it")
	}
	n, err := strconv.Atoi(workers)
	if err != nil {
		t.Fatal(err)
	}
	if path := os.Getenv("TOOLMESH_CATALOG_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	cc := &catalogCaller{t: t, url: url, workers: n}
	cc.raw, cc.warm = dialURL(t, url), dialURL(t, url)
	cc.c = meshtest.NewCaller(t, cc.warm, caller.Config{Logger: meshtest.Logger(t)})
	rows := os.NewFile(3, "rows")
	defer rows.Close()
	enc := json.NewEncoder(rows)
	in := bufio.NewScanner(os.Stdin)
	for round := 0; in.Scan(); round++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		for i := range catalogSides {
			row, err := cc.side(ctx, catalogSides[(round+i)%len(catalogSides)])
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			_ = enc.Encode(row)
		}
		cancel()
	}
}

// callerProcess is a running TestCatalogCallerProcess.
type callerProcess struct {
	stdin io.WriteCloser
	rows  *json.Decoder
}

// startCallerProcess starts the caller process against srv's fleet of
// workers; it ends (stdin closed, then killed at the deadline) with tb.
func startCallerProcess(tb testing.TB, srv *embedded.Server, workers int) *callerProcess {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestCatalogCallerProcess$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "TOOLMESH_CATALOG_CALLER="+srv.ClientURL(), "TOOLMESH_CATALOG_WORKERS="+strconv.Itoa(workers))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	rows, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	_ = w.Close() // the child holds its end; EOF once it exits
	tb.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
		cancel()
		_ = rows.Close()
	})
	return &callerProcess{stdin: stdin, rows: json.NewDecoder(rows)}
}

// round has the process run one round and returns its rows by side.
func (p *callerProcess) round() (map[string]catalogRow, error) {
	if _, err := io.WriteString(p.stdin, "round\n"); err != nil {
		return nil, err
	}
	out := map[string]catalogRow{}
	for range catalogSides {
		var row catalogRow
		if err := p.rows.Decode(&row); err != nil {
			return nil, fmt.Errorf("caller process: %w (its test output is above)", err)
		}
		out[row.Side] = row
	}
	return out, nil
}

// BenchmarkCatalogCallerCPU measures, per round (one op), the caller's
// CPU time, wall time, bytes in and heap allocated for a raw gather of
// the catalogue subject, a Catalog by a caller that has read it before,
// and a new caller's first Catalog, interleaved in an order rotating by
// round, in a caller process of its own; it reports each side's median
// and the medians of the per-round ratios toolmesh/raw. 1,000 simulated
// workers of 5 tools in 500 spec sets (more with TOOLMESH_BIG_FLEET, see fleetSizes).
// TOOLMESH_CATALOG_CPUPROFILE=file profiles the caller process.
//
//	go test -run '^$' -bench BenchmarkCatalogCallerCPU -benchtime 7x ./tests/
func BenchmarkCatalogCallerCPU(b *testing.B) {
	for _, workers := range fleetSizes(b) {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			srv := meshtest.StartServer(b, embedded.Config{})
			newSimFleet(b, srv, "W", workers, 5, 500).register(b)
			p := startCallerProcess(b, srv, workers)
			if _, err := p.round(); err != nil { // warm-up: the caller's spec sets, the server's consumers
				b.Fatal(err)
			}
			var rounds []map[string]catalogRow
			for b.Loop() {
				r, err := p.round()
				if err != nil {
					b.Fatal(err)
				}
				rounds = append(rounds, r)
			}
			reportCatalogRounds(b, rounds)
		})
	}
}

// reportCatalogRounds reports each side's median CPU, wall time, bytes
// and allocation, and the median per-round ratios against raw.
func reportCatalogRounds(b *testing.B, rounds []map[string]catalogRow) {
	med := func(f func(r map[string]catalogRow) float64) float64 {
		v := make([]float64, len(rounds))
		for i, r := range rounds {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, side := range catalogSides {
		b.ReportMetric(med(func(r map[string]catalogRow) float64 { return float64(r[side].CPUNS) / 1e6 }), side+"_cpu_ms")
		b.ReportMetric(med(func(r map[string]catalogRow) float64 { return float64(r[side].WallNS) / 1e6 }), side+"_wall_ms")
		b.ReportMetric(med(func(r map[string]catalogRow) float64 { return float64(r[side].BytesIn) }), side+"_B_in")
		b.ReportMetric(med(func(r map[string]catalogRow) float64 { return float64(r[side].Alloc) }), side+"_B_alloc")
		if side == "raw" {
			continue
		}
		b.ReportMetric(med(func(r map[string]catalogRow) float64 { return float64(r[side].CPUNS) / float64(r["raw"].CPUNS) }), side+"/raw_cpu")
		b.ReportMetric(med(func(r map[string]catalogRow) float64 { return float64(r[side].WallNS) / float64(r["raw"].WallNS) }), side+"/raw_wall")
	}
}
