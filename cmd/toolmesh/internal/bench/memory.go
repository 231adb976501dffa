package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// benchMemory is the memory row: calls held in flight at once from one
// caller process to a worker process whose handler blocks.
type benchMemory struct {
	Calls    int        `json:"calls"`
	Toolmesh memorySide `json:"toolmesh"`
	Raw      memorySide `json:"raw"`
	// CallerHeapRatio and WorkerBytesRatio are toolmesh over raw.
	CallerHeapRatio  float64 `json:"caller_heap_ratio"`
	WorkerBytesRatio float64 `json:"worker_bytes_ratio"`
}

// memorySide is one side's figures in the memory row. Heap figures are
// live heap after a full GC, over the process's own baseline.
type memorySide struct {
	CallerHeapPerCall  float64 `json:"caller_heap_bytes_per_call"`
	WorkerHeapPerCall  float64 `json:"worker_heap_bytes_per_call"`
	WorkerStackPerCall float64 `json:"worker_stack_bytes_per_call"`
	WorkerBytesPerCall float64 `json:"worker_bytes_per_blocked_call"`
	// BurstSeconds is how long it took until every handler was running.
	BurstSeconds float64 `json:"burst_seconds"`
	// Worker RSS: before the burst, with every call blocked, and after
	// the burst once the worker's goroutines are back to their baseline
	// (or --memory-settle passed), after a GC: as the runtime holds it
	// (RSSAfterHeld) and after debug.FreeOSMemory (RSSAfter).
	RSSBaseline   int64   `json:"worker_rss_baseline"`
	RSSPeak       int64   `json:"worker_rss_peak"`
	RSSAfterHeld  int64   `json:"worker_rss_after_held"`
	RSSAfter      int64   `json:"worker_rss_after"`
	RSSAfterRatio float64 `json:"worker_rss_after_over_baseline"`
	// Measured says the burst held every call and every figure was read.
	Measured bool `json:"measured"`
	// Goroutines of the worker before and after the burst.
	GoroutinesBaseline int `json:"worker_goroutines_baseline"`
	GoroutinesAfter    int `json:"worker_goroutines_after"`
}

// memoryRow measures the toolmesh side, then the raw one (nats.go
// requests to a responder that hands each message to a goroutine that
// blocks), each with fresh processes.
func memoryRow(ctx context.Context, env *Env, url string, o *benchOptions) benchResult {
	n := o.memoryCalls
	r := benchResult{Scenario: fmt.Sprintf("memory, %d calls in flight", n), InFlight: n,
		Peers:  "raw: nats.go requests to a responder handing each to a goroutine that blocks; worker and caller in processes of their own",
		Memory: &benchMemory{Calls: n}}
	r.Memory.Toolmesh, r.Toolmesh = memoryBurst(ctx, env, url, o, modeMesh)
	r.Memory.Raw, r.Raw = memoryBurst(ctx, env, url, o, modeRaw)
	m := r.Memory
	m.CallerHeapRatio = ratio(m.Toolmesh.CallerHeapPerCall, m.Raw.CallerHeapPerCall)
	m.WorkerBytesRatio = ratio(m.Toolmesh.WorkerBytesPerCall, m.Raw.WorkerBytesPerCall)
	r.judge([]benchGoal{
		{metric: metricCallerHeap, atMost: true, bound: 1024},
		{metric: metricWorkerMemory, atMost: true, bound: 6 * 1024},
		{metric: metricRSSAfter, atMost: true, bound: 1.2},
	})
	return r
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// memoryBurst runs one side's burst; a failure is reported as the
// side's errors, like any failed call of the bench.
func memoryBurst(ctx context.Context, env *Env, url string, o *benchOptions, mode string) (memorySide, benchSide) {
	n := o.memoryCalls
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute+time.Duration(n)*time.Millisecond)
	defer cancel()
	prefix := env.Prefix + "-benchmem-" + strings.ToLower(ulid.Make().String())
	var side benchSide
	w, wBase, err := startPeer(ctx, env, o, url, prefix, peerWorker, mode)
	if err != nil {
		return memorySide{}, failedSide(n, err)
	}
	defer w.stop()
	c, cBase, err := startPeer(ctx, env, o, url, prefix, peerCaller, mode)
	if err != nil {
		return memorySide{}, failedSide(n, err)
	}
	defer c.stop()
	m, end, err := holdBurst(ctx, w, c, n, wBase, cBase, o.memorySettle)
	if err != nil {
		// The figures of a burst that did not hold every call are not shown.
		if cs, perr := c.ask(cmdPeek); perr == nil && cs.Errors > 0 {
			return memorySide{}, benchSide{Calls: int(cs.Done - cs.Errors), Errors: int(cs.Errors), FirstError: err.Error()}
		}
		return memorySide{}, failedSide(n, err)
	}
	side.Calls, side.Errors, side.FirstError = int(end.Done-end.Errors), int(end.Errors), end.FirstError
	return m, side
}

func failedSide(n int, err error) benchSide {
	return benchSide{Errors: n, FirstError: err.Error()}
}

// holdBurst starts the burst, measures both processes while every call
// is blocked, releases them and measures the worker once it has settled.
func holdBurst(ctx context.Context, w, c *peerProc, n int, wBase, cBase peerStats, settleFor time.Duration) (memorySide, peerStats, error) {
	m := memorySide{RSSBaseline: wBase.RSS, GoroutinesBaseline: wBase.Goroutines}
	t0 := time.Now()
	if _, err := c.ask(cmdBurst); err != nil {
		return m, peerStats{}, err
	}
	if err := waitFor(ctx, func() (bool, error) { return allEntered(w, c, n) }); err != nil {
		return m, peerStats{}, err
	}
	m.BurstSeconds = time.Since(t0).Seconds()
	cPeak, err := c.ask(cmdMeasure)
	if err != nil {
		return m, peerStats{}, err
	}
	wPeak, err := w.ask(cmdMeasure)
	if err != nil {
		return m, peerStats{}, err
	}
	per := func(peak, base uint64) float64 { return (float64(peak) - float64(base)) / float64(n) }
	m.CallerHeapPerCall = per(cPeak.HeapAlloc, cBase.HeapAlloc)
	m.WorkerHeapPerCall = per(wPeak.HeapAlloc, wBase.HeapAlloc)
	m.WorkerStackPerCall = per(wPeak.StackInuse, wBase.StackInuse)
	m.WorkerBytesPerCall = m.WorkerHeapPerCall + m.WorkerStackPerCall
	m.RSSPeak = wPeak.RSS
	if _, err := w.ask(cmdRelease); err != nil {
		return m, peerStats{}, err
	}
	end, err := c.ask(cmdWait)
	if err != nil {
		return m, peerStats{}, err
	}
	m, err = settle(ctx, w, m, wBase, settleFor)
	m.Measured = err == nil
	return m, end, err
}

// allEntered says whether every call's handler is running; it fails when
// calls ended instead (overloaded, lost) so that they never will.
func allEntered(w, c *peerProc, n int) (bool, error) {
	ws, err := w.ask(cmdPeek)
	if err != nil || ws.Entered >= int64(n) {
		return err == nil, err
	}
	cs, err := c.ask(cmdPeek)
	if err != nil {
		return false, err
	}
	if cs.Errors > 0 {
		return false, fmt.Errorf("calls failed before all %d were blocked (%d were): %s", n, ws.Entered, cs.FirstError)
	}
	return false, nil
}

// settle waits (up to settleFor) for the worker's goroutines to fall
// back to their baseline, then reads its RSS.
func settle(ctx context.Context, w *peerProc, m memorySide, base peerStats, settleFor time.Duration) (memorySide, error) {
	ctx, cancel := context.WithTimeout(ctx, settleFor)
	defer cancel()
	_ = waitFor(ctx, func() (bool, error) {
		s, err := w.ask(cmdPeek)
		return err == nil && s.Goroutines <= base.Goroutines+8, err
	})
	after, err := w.ask(cmdSettle)
	if err != nil {
		return m, err
	}
	m.RSSAfterHeld, m.RSSAfter, m.GoroutinesAfter = after.RSSBeforeFree, after.RSS, after.Goroutines
	m.RSSAfterRatio = ratio(float64(after.RSS), float64(base.RSS))
	return m, nil
}

// waitFor polls cond until it holds, fails or ctx ends.
func waitFor(ctx context.Context, cond func() (bool, error)) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// peerProc is a running memory-row process.
type peerProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *capped
}

// startPeer re-executes this binary as one side of the memory row and
// reads its first figures. The server's URL and secrets given as flags
// reach it through its environment, never its argv.
func startPeer(ctx context.Context, env *Env, o *benchOptions, url, prefix, role, mode string) (*peerProc, peerStats, error) {
	cmd, err := peerCommand(ctx, env, o, url, prefix, role, mode)
	if err != nil {
		return nil, peerStats{}, err
	}
	p := &peerProc{cmd: cmd, stderr: &capped{max: 4096}}
	cmd.Stderr = p.stderr
	if p.in, err = cmd.StdinPipe(); err != nil {
		return nil, peerStats{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, peerStats{}, err
	}
	p.out = bufio.NewScanner(stdout)
	if err := cmd.Start(); err != nil {
		return nil, peerStats{}, err
	}
	first, err := p.read()
	if err != nil {
		p.stop()
	}
	return p, first, err
}

// peerCommand is the command line of one memory-row process.
func peerCommand(ctx context.Context, env *Env, o *benchOptions, url, prefix, role, mode string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"bench", "--peer", role, "--peer-mode", mode, "--memory-calls", strconv.Itoa(o.memoryCalls),
		"--memory-heartbeat", o.memoryBeat.String(), "--prefix", prefix, "--log-level", "error"}
	for flag, v := range map[string]string{"creds": env.Connect.Creds, "nkey": env.NKey,
		"tls-ca": env.Connect.TLSCA, "tls-cert": env.Connect.TLSCert, "tls-key": env.Connect.TLSKey} {
		if v != "" {
			args = append(args, "--"+flag, v)
		}
	}
	cmd := exec.CommandContext(ctx, self, args...)
	// The URL too goes by the environment: it may carry a password.
	cmd.Env = append(os.Environ(), "NATS_URL="+url)
	for name, v := range map[string]string{"NATS_USER": env.Connect.User, "NATS_PASSWORD": env.Connect.Password, "NATS_TOKEN": env.Connect.Token} {
		if v != "" {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	return cmd, nil
}

// ask sends one command and reads its answer.
func (p *peerProc) ask(command string) (peerStats, error) {
	if _, err := io.WriteString(p.in, command+"\n"); err != nil {
		return peerStats{}, p.exited(err)
	}
	return p.read()
}

func (p *peerProc) read() (peerStats, error) {
	if !p.out.Scan() {
		return peerStats{}, p.exited(p.out.Err())
	}
	var s peerStats
	if err := json.Unmarshal(p.out.Bytes(), &s); err != nil {
		return s, fmt.Errorf("bench peer said %q: %w", p.out.Text(), err)
	}
	if s.Error != "" {
		return s, fmt.Errorf("bench peer: %s", s.Error)
	}
	return s, nil
}

func (p *peerProc) exited(err error) error {
	return fmt.Errorf("bench peer %s stopped (%v): %s", p.cmd.Args[2], err, strings.TrimSpace(p.stderr.String()))
}

// stop closes the peer's stdin, which ends it; one that does not end is killed.
func (p *peerProc) stop() {
	_ = p.in.Close()
	t := time.AfterFunc(10*time.Second, func() { _ = p.cmd.Process.Kill() })
	_ = p.cmd.Wait()
	t.Stop()
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	mu  sync.Mutex
	b   strings.Builder
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
