package tests

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/meshtest"
)

// fleetTools is hosted by all three workers of the top test.
const fleetTools = `
tools:
  - name: fleet.wc
    input_schema: {type: object, properties: {text: {type: string}}, required: [text]}
    binding:
      cli: {cmd: wc, args_template: "--bytes", stdin: arg.text}
`

// startFleet runs `toolmesh dev` and two `toolmesh worker`s, all hosting
// fleet.wc (dev also hosts the demo tools), and returns the mesh URL.
func startFleet(t *testing.T) string {
	t.Helper()
	requirePrograms(t, "wc")
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(fleetTools), 0o644); err != nil {
		t.Fatal(err)
	}
	_, url := startDev(t, "--config", path)
	for i := 0; i < 2; i++ {
		startCLIWorker(t, url, path)
	}
	return url
}

// loadFleet keeps the fleet busy until stop: unary calls that succeed, calls
// that fail with invalid_input, and two sleeps that stay in flight.
func loadFleet(t *testing.T, c *caller.Caller) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for ctx.Err() == nil {
				switch i {
				case 0, 1:
					_, _ = c.Call(ctx, "fleet.wc", map[string]string{"text": "hello"})
				case 2:
					_, _ = c.Call(ctx, "echo", map[string]string{"message": "hi"})
				default:
					_, _ = c.Call(ctx, "fleet.wc", map[string]int{"text": 5}) // invalid_input
				}
			}
		}(i)
	}
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.Call(ctx, "sleep", map[string]int{"seconds": 3600})
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// `toolmesh top` renders a fleet of three workers under load in a pty:
// fleet.wc on 3 instances, the two sleeps in flight, invalid_input in the
// errors by code, and it quits on Ctrl-C.
func TestTopRendersFleetInPty(t *testing.T) {
	url := startFleet(t)
	c := newCommandCaller(t, url)
	stop := loadFleet(t, c)
	defer stop()

	cmd := commandFor(t, "top", "--server", url, "--interval", "200ms")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	screen := make(chan string, 64)
	go func() {
		var all strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			all.Write(buf[:n])
			if frames := strings.Split(all.String(), "\x1b[H\x1b[2J"); len(frames) > 2 {
				screen <- frames[len(frames)-2] // the last complete frame
				all.Reset()
				all.WriteString("\x1b[H\x1b[2J" + frames[len(frames)-1])
			}
			if err != nil {
				close(screen)
				return
			}
		}
	}()
	want := []*regexp.Regexp{
		regexp.MustCompile(`3 workers  5 tools`), // dev's count, echo, remove and sleep, and fleet.wc
		regexp.MustCompile(`(?m)^fleet\.wc\s+3\s+\d+\s+[1-9][0-9.]*\s+[1-9][0-9.]*\s+\S*\d\S*\s+\S*\d\S*\s+\d+\s+[1-9]\d*\s*\r?$`),
		regexp.MustCompile(`(?m)^sleep\s+1\s+2\s+`),
		regexp.MustCompile(`(?m)^invalid_input\s+[1-9][0-9.]*\s+[1-9]\d*`),
	}
	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last frame:\n%s", last)
		}
	})
	testutil.WaitFor(t, "a frame showing the loaded fleet", func() bool {
		select {
		case f, ok := <-screen:
			if !ok {
				t.Fatalf("top exited; last frame:\n%s", last)
			}
			last = f
		default:
			return false
		}
		for _, re := range want {
			if !re.MatchString(last) {
				return false
			}
		}
		return true
	})
	if _, err := ptmx.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	if code := waitCmdExit(t, cmd); code != 0 {
		t.Fatalf("top exited %d after Ctrl-C", code)
	}
}

// The numbers of `toolmesh top --json` agree with the workers' own
// $SRV.STATS answers, read here with a plain NATS request.
func TestTopJSONAgreesWithStats(t *testing.T) {
	url := startFleet(t)
	c := newCommandCaller(t, url)
	stop := loadFleet(t, c)
	nc := dialURL(t, url)
	testutil.WaitFor(t, "calls on every worker", func() bool {
		stats := rawStats(t, nc, 3)
		for _, s := range stats {
			total := 0
			for _, ep := range s.Endpoints {
				total += ep.NumRequests
			}
			if total == 0 {
				return false
			}
		}
		return len(stats) == 3
	})
	stop()
	stats := settledStats(t, nc)
	r := runCmd(t, "", "top", "--json", "--server", url, "--interval", "100ms", "--wait", "2s")
	var sum fleet.Summary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("top --json: exit %d stdout %s stderr %s", r.code, r.stdout, r.stderr)
	}
	want := expectFromStats(t, stats)
	got := map[string]toolTotals{}
	for _, x := range sum.Tools {
		got[x.Name] = toolTotals{x.Instances, x.Requests, x.Errors, x.InFlight, x.P50Ms, x.P99Ms}
	}
	if len(sum.Workers) != 3 || !sum.Complete || len(got) != len(want) {
		t.Fatalf("top saw %d workers (complete %v) and tools %v; STATS has 3 and %v", len(sum.Workers), sum.Complete, got, want)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("tool %s: top %+v, $SRV.STATS %+v", name, got[name], w)
		}
	}
	compareCodes(t, sum, stats, want)
}

// compareCodes checks top's errors by code against the sum of the raw
// answers, and that the load left its trace there.
func compareCodes(t *testing.T, sum fleet.Summary, stats []micro.Stats, want map[string]toolTotals) {
	t.Helper()
	codes := map[string]int64{}
	for _, s := range stats {
		for _, ep := range s.Endpoints {
			var l fleet.ToolLoad
			_ = json.Unmarshal(ep.Data, &l)
			for code, n := range l.ErrorsByCode {
				codes[code] += n
			}
		}
	}
	if codes["invalid_input"] == 0 || codes["cancelled"] == 0 || want["fleet.wc"].Requests == 0 {
		t.Errorf("the load left no trace in $SRV.STATS: codes %v, tools %v", codes, want)
	}
	for _, cs := range sum.ErrorsByCode {
		if codes[cs.Code] != cs.Total {
			t.Errorf("errors by code %s: top %d, $SRV.STATS %d", cs.Code, cs.Total, codes[cs.Code])
		}
		delete(codes, cs.Code)
	}
	if len(codes) != 0 {
		t.Errorf("codes top did not report: %v", codes)
	}
}

type toolTotals struct {
	Instances                  int
	Requests, Errors, InFlight int64
	P50Ms, P99Ms               float64
}

// expectFromStats sums the raw answers per tool; the percentiles are the
// upper bound of the bucket holding the rank, computed here independently.
func expectFromStats(t *testing.T, stats []micro.Stats) map[string]toolTotals {
	t.Helper()
	out := map[string]toolTotals{}
	counts := map[string][]int64{}
	bounds := map[string][]int64{}
	maxUS := map[string]int64{}
	for _, s := range stats {
		for _, ep := range s.Endpoints {
			// Endpoint names are ADR-32 safe (fleet_wc); top names tools
			// as they are called, which the call subject carries.
			ep.Name = strings.TrimPrefix(ep.Subject, "toolmesh.call.")
			var l fleet.ToolLoad
			if err := json.Unmarshal(ep.Data, &l); err != nil {
				t.Fatalf("endpoint %s has no load data: %v", ep.Name, err)
			}
			x := out[ep.Name]
			x.Instances++
			x.Requests += int64(ep.NumRequests)
			x.Errors += int64(ep.NumErrors)
			x.InFlight += l.InFlight
			out[ep.Name] = x
			if counts[ep.Name] == nil {
				counts[ep.Name] = make([]int64, len(l.Latency.Counts))
				bounds[ep.Name] = l.Latency.BoundsMicros
			}
			for i, n := range l.Latency.Counts {
				counts[ep.Name][i] += n
			}
			maxUS[ep.Name] = max(maxUS[ep.Name], l.Latency.MaxMicros)
		}
	}
	quantile := func(name string, q float64) float64 {
		var total int64
		for _, n := range counts[name] {
			total += n
		}
		if total == 0 {
			return 0
		}
		rank, seen := int64(math.Ceil(q*float64(total))), int64(0)
		for i, n := range counts[name] {
			seen += n
			if seen >= rank && i < len(bounds[name]) {
				return float64(min(bounds[name][i], maxUS[name])) / 1000
			}
		}
		return float64(maxUS[name]) / 1000
	}
	for name, x := range out {
		x.P50Ms, x.P99Ms = quantile(name, 0.5), quantile(name, 0.99)
		out[name] = x
	}
	return out
}

// rawStats asks $SRV.STATS.toolmesh and collects answers until n arrived
// (or a generous bound passes), sorted by worker id.
func rawStats(t *testing.T, nc *nats.Conn, n int) []micro.Stats {
	t.Helper()
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$SRV.STATS.toolmesh", inbox, nil); err != nil {
		t.Fatal(err)
	}
	var out []micro.Stats
	for len(out) < n {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			break
		}
		var s micro.Stats
		if err := json.Unmarshal(m.Data, &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// newCommandCaller is a library caller on the mesh a command serves.
func newCommandCaller(t *testing.T, url string) *caller.Caller {
	t.Helper()
	return meshtest.NewCaller(t, dialURL(t, url), caller.Config{})
}

// commandFor is an unstarted command running the binary.
func commandFor(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(toolmeshBin(t), args...)
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	return cmd
}

// settledStats waits until no call is in flight on any of the three
// workers and returns their $SRV.STATS answers, which then stay put.
func settledStats(t *testing.T, nc *nats.Conn) []micro.Stats {
	t.Helper()
	var stats []micro.Stats
	testutil.WaitFor(t, "no call in flight", func() bool {
		stats = rawStats(t, nc, 3)
		for _, s := range stats {
			for _, ep := range s.Endpoints {
				var l fleet.ToolLoad
				if json.Unmarshal(ep.Data, &l) != nil || l.InFlight != 0 {
					return false
				}
			}
		}
		return len(stats) == 3
	})
	return stats
}
