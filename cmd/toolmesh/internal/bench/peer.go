package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// The memory row runs its worker and its caller each in a process of its
// own (this binary, re-executed with the hidden --peer flag), so that each
// one's heap and RSS are its own and not the embedded server's or the
// other side's. The parent drives a peer by writing one command a line
// on its stdin; the peer answers each with one line of JSON (peerStats)
// on its stdout, and exits when its stdin closes.
const (
	peerWorker = "worker"
	peerCaller = "caller"
	modeMesh   = "toolmesh"
	modeRaw    = "raw"

	cmdPeek    = "peek"    // figures without a GC first
	cmdMeasure = "measure" // after a full GC: live heap only
	cmdBurst   = "burst"   // caller: start every call at once
	cmdWait    = "wait"    // caller: answer once every call has returned
	cmdRelease = "release" // worker: let every blocked handler return
	cmdSettle  = "settle"  // worker: GC, read RSS, return freed memory to the OS, read RSS again
)

// peerStats is what a memory-row process says of itself.
type peerStats struct {
	HeapAlloc  uint64 `json:"heap_alloc"`
	StackInuse uint64 `json:"stack_inuse"`
	RSS        int64  `json:"rss"`
	// RSSBeforeFree is settle's RSS before debug.FreeOSMemory.
	RSSBeforeFree int64 `json:"rss_before_free,omitempty"`
	Goroutines    int   `json:"goroutines"`
	// Entered counts calls whose handler has started (worker).
	Entered int64 `json:"entered"`
	// Done and Errors count calls returned, and failed (caller).
	Done       int64  `json:"done"`
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Error is why a command could not be carried out.
	Error string `json:"error,omitempty"`
}

// benchPeer is one side of the memory row in its own process.
type benchPeer struct {
	role, mode string
	calls      int
	beat       time.Duration // the caller's heartbeat interval
	nc         *nats.Conn
	subject    string // the raw side's subject
	args       json.RawMessage

	// worker
	w       *worker.Worker
	gate    chan struct{}
	release sync.Once
	entered atomic.Int64

	// caller
	c        *caller.Caller
	wg       sync.WaitGroup
	done     atomic.Int64
	errs     atomic.Int64
	firstErr atomic.Pointer[string]
}

// runBenchPeer serves as one process of the memory row until stdin closes.
func runBenchPeer(ctx context.Context, env *Env, o *benchOptions) error {
	if (o.peer != peerWorker && o.peer != peerCaller) || (o.peerMode != modeMesh && o.peerMode != modeRaw) || o.memoryCalls < 1 {
		return envelope.NewProblem(envelope.CodeInvalidInput, "--peer is internal to the bench: worker or caller, with --peer-mode toolmesh or raw and --memory-calls")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nc, err := env.Dial(ctx, "bench "+o.peer)
	if err != nil {
		return err
	}
	defer nc.Close()
	p := &benchPeer{role: o.peer, mode: o.peerMode, calls: o.memoryCalls, beat: o.memoryBeat, nc: nc,
		subject: env.Prefix + ".raw.block", args: json.RawMessage(`{"message":"x"}`), gate: make(chan struct{})}
	if err := p.start(env); err != nil {
		return err
	}
	defer p.stop()
	enc := json.NewEncoder(env.Stdout)
	if err := enc.Encode(p.stats(cmdMeasure)); err != nil {
		return nil
	}
	lines := bufio.NewScanner(env.Stdin)
	for lines.Scan() {
		if err := enc.Encode(p.do(ctx, strings.TrimSpace(lines.Text()))); err != nil {
			return nil
		}
	}
	return nil
}

// start hosts the blocking tool (worker) or makes the caller.
func (p *benchPeer) start(env *Env) error {
	var err error
	switch {
	case p.role == peerCaller && p.mode == modeMesh:
		p.c, err = caller.New(p.nc, caller.Config{Prefix: env.Prefix, Logger: env.Log, Retries: caller.NoRetries, Heartbeat: p.beat})
	case p.role == peerWorker && p.mode == modeMesh:
		err = p.hostBlock(env)
	case p.role == peerWorker:
		var sub *nats.Subscription
		sub, err = p.nc.QueueSubscribe(p.subject, "q", func(m *nats.Msg) {
			// A handler that blocks must leave the callback: one goroutine each.
			go func() {
				p.entered.Add(1)
				<-p.gate
				_ = m.Respond(m.Data)
			}()
		})
		if err == nil {
			err = sub.SetPendingLimits(-1, -1)
		}
	}
	if err == nil {
		err = p.nc.Flush()
	}
	if err != nil {
		return envelope.AsProblem(err, envelope.CodeConnectionLost)
	}
	return nil
}

// hostBlock registers "block", whose handler waits for release, on a
// worker whose admission limits allow every call of the burst at once
// (the bench caller is its only sender, so its share is the whole worker).
func (p *benchPeer) hostBlock(env *Env) error {
	n := p.calls
	w, err := worker.New(p.nc, worker.Config{Prefix: env.Prefix, Logger: env.Log, Description: "toolmesh bench memory", Limits: worker.Limits{MaxConcurrent: n, MaxQueued: n, MaxPerIdentity: n, MaxPendingCalls: 2*n + 1024, MaxPendingBytes: 1 << 30}})
	if err != nil {
		return err
	}
	p.w = w
	return w.Register(envelope.ToolSpec{Name: "block"}, worker.HandlerFunc(
		func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
			p.entered.Add(1)
			select {
			case <-p.gate:
				return map[string]bool{"ok": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
}

func (p *benchPeer) stop() {
	p.release.Do(func() { close(p.gate) })
	if p.c != nil {
		_ = p.c.Close()
	}
	if p.w != nil {
		p.w.Stop()
	}
}

// do carries out one command.
func (p *benchPeer) do(ctx context.Context, command string) peerStats {
	switch command {
	case cmdPeek, cmdMeasure, cmdSettle:
	case cmdRelease:
		p.release.Do(func() { close(p.gate) })
	case cmdBurst:
		p.burst(ctx)
	case cmdWait:
		p.wg.Wait()
	default:
		return peerStats{Error: "unknown command " + strconv.Quote(command)}
	}
	return p.stats(command)
}

// burst starts every call at once, each on its own goroutine as a
// program making blocking calls would.
func (p *benchPeer) burst(ctx context.Context) {
	call := func() error {
		_, err := p.c.Call(ctx, "block", p.args)
		return err
	}
	if p.mode == modeRaw {
		// nats.go wants a deadline on RequestWithContext.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Hour)
		context.AfterFunc(ctx, cancel)
		call = func() error {
			_, err := p.nc.RequestWithContext(ctx, p.subject, p.args)
			return err
		}
	}
	for range p.calls {
		p.wg.Go(func() {
			if err := call(); err != nil {
				p.errs.Add(1)
				msg := err.Error()
				p.firstErr.CompareAndSwap(nil, &msg)
			}
			p.done.Add(1)
		})
	}
}

// stats reads the process's figures; measure and settle collect garbage
// first so that the heap is what is live.
func (p *benchPeer) stats(command string) peerStats {
	var s peerStats
	if command == cmdMeasure || command == cmdSettle {
		runtime.GC()
	}
	if command == cmdSettle {
		s.RSSBeforeFree = readRSS()
		debug.FreeOSMemory()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.HeapAlloc, s.StackInuse, s.RSS = m.HeapAlloc, m.StackInuse, readRSS()
	s.Goroutines = runtime.NumGoroutine()
	s.Entered, s.Done, s.Errors = p.entered.Load(), p.done.Load(), p.errs.Load()
	if e := p.firstErr.Load(); e != nil {
		s.FirstError = *e
	}
	return s
}

// readRSS is the process's resident set size in bytes from
// /proc/self/status (0 where there is none).
func readRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
