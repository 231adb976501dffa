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
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

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
