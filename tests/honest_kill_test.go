package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// pidLogTool is execLogTool whose program also appends its parent's pid —
// the `toolmesh worker` that ran it — to a second log, so a test knows
// which workers have run calls (and so named them to the caller).
func pidLogTool(t *testing.T, dir string) (toolsFile, logPath, pidPath string) {
	t.Helper()
	logPath, pidPath = filepath.Join(dir, "exec.log"), filepath.Join(dir, "pids.log")
	body := "printf '%s\\n' \"$1\" >> " + logPath + "\nprintf '%s\\n' \"$PPID\" >> " + pidPath + "\n"
	return logTagTool(t, dir, body), logPath, pidPath
}

// A worker dies holding calls it never read. One of 4
// `toolmesh worker`s is stopped (SIGSTOP: it reads nothing more), calls
// are fired at the tool — the server hands a share of them to the stopped
// worker — and it is killed (SIGKILL). The caller finds it gone by
// probing the workers of a tool whose calls wait unnamed, and settles
// those calls: every call fired after the stop ends ok, refused, or
// worker_lost saying "no" (the worker never named it, so it never ran),
// never "may have run"; and none said "no" is in the execution log.
func TestHonestUnreadCallsOfAKilledWorkerSettleUnrun(t *testing.T) {
	srv := startStockServer(t)
	dir := t.TempDir()
	tools, logPath, pidPath := pidLogTool(t, dir)
	var victim *proc
	for i := range 4 {
		p, _ := startCLIWorker(t, srv.url, tools)
		if i == 0 {
			victim = p
		}
	}
	c := stockCaller(t, srv.url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	warmUntilEveryWorkerRan(ctx, t, c, pidPath, 4)
	baseline := len(readExecLog(t, logPath))

	// A plain subscriber on the tool's subject sees every call message the
	// server routes (one of each goes to one worker of the queue group).
	var routed atomic.Int64
	spy := dialURL(t, srv.url)
	if _, err := spy.Subscribe(wire.Subjects{}.Call("flood.log"), func(*nats.Msg) { routed.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	stopProcess(t, victim.cmd.Process)
	const n = 400
	done := make(chan []outcome, 1)
	start := time.Now()
	go func() { done <- fireFlood(ctx, c, n) }()
	// Kill once the live workers are running the flood's calls and the
	// server has routed enough call messages that the stopped worker, one
	// of four in the queue group, was handed some: each message goes to a
	// member at random, so 40 miss it with odds of (3/4)^40, about 1e-5
	// (400 calls are at least 50 messages: a batch carries at most 8).
	// Killing earlier can leave it no call to die holding.
	waitFor(t, "flood calls running and routed", func() bool {
		return routed.Load() >= 40 && len(readExecLog(t, logPath)) >= baseline+40
	})
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Since(start)
	outs := <-done
	runs := readExecLog(t, logPath)
	t.Logf("%d calls at 4 workers, one stopped then killed: %s; %d runs logged; %d call messages routed", n, tally(outs), len(runs)-baseline, routed.Load())
	checkAccounting(t, outs, runs, true)
	settled := 0
	for i, o := range outs {
		switch {
		case o.ran == string(envelope.RanMaybe):
			t.Errorf("call %d ended %s saying it may have run, but no worker that could have taken it up died: %s", i, o.code, o.detail)
		case o.code == envelope.CodeWorkerLost && o.ran == string(envelope.RanNo):
			settled++
		}
	}
	if settled == 0 {
		t.Fatal("no call ended worker_lost, ran no, although the killed worker held calls it never read")
	}
	t.Logf("%d unread calls of the killed worker settled unrun; the last %s after the kill", settled, lastSettled(outs, killed))
}

// warmUntilEveryWorkerRan makes calls until each of the n workers has run
// one (its pid is in pidPath): the caller has then heard every worker on
// the tool.
func warmUntilEveryWorkerRan(ctx context.Context, t *testing.T, c *caller.Caller, pidPath string, n int) {
	t.Helper()
	for round := 0; ; round++ {
		for i := range 16 {
			if _, err := c.Call(ctx, "flood.log", map[string]string{"tag": "warm-" + strconv.Itoa(round*16+i)}); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := os.ReadFile(pidPath)
		pids := map[string]bool{}
		for _, p := range strings.Fields(string(b)) {
			pids[p] = true
		}
		if len(pids) >= n {
			return
		}
		if round > 50 {
			t.Fatalf("after %d calls only %d of %d workers ran one", (round+1)*16, len(pids), n)
		}
	}
}

// lastSettled is how long after the kill (killed, from the flood's
// start, as outcome times are) the last worker_lost call ended.
func lastSettled(outs []outcome, killed time.Duration) time.Duration {
	var last time.Duration
	for _, o := range outs {
		if o.code == envelope.CodeWorkerLost && o.after > last {
			last = o.after
		}
	}
	return (last - killed).Round(time.Millisecond)
}

// A worker stopped (SIGSTOP) holds calls it never read, then is killed.
// A call that accepted "maybe" — its tool declared idempotent, so the
// worker may start it without a confirmed heartbeat naming it — ends
// saying it may have run; a call of the destructive tool, which no
// worker starts unnamed, ends saying it did not run. Neither ran: the
// stopped worker read nothing.
func TestHonestUnnamedCallRanMaybeOnlyWhenIdempotent(t *testing.T) {
	srv := startStockServer(t)
	dir := t.TempDir()
	tools, logPath := execLogTool(t, dir) // flood.log (destructive) and flood.idem (idempotent)
	victim, _ := startCLIWorker(t, srv.url, tools)
	c := stockCaller(t, srv.url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, tool := range []string{"flood.log", "flood.idem"} { // the caller hears the worker on both
		if _, err := c.Call(ctx, tool, map[string]string{"tag": "warm"}); err != nil {
			t.Fatal(err)
		}
	}
	seen := watchCalls(t, srv.url)
	stopProcess(t, victim.cmd.Process)
	const n = 8
	outs := make([]outcome, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		tool, opts := "flood.log", []caller.Option{caller.WithRetries(caller.NoRetries)}
		if i%2 == 1 {
			tool, opts = "flood.idem", append(opts, caller.Idempotent())
		}
		wg.Go(func() {
			_, err := c.Call(ctx, tool, map[string]string{"tag": strconv.Itoa(i)}, opts...)
			if err != nil {
				p := envelope.AsProblem(err, envelope.CodeInternal)
				ran, _ := p.Extensions["ran"].(string)
				outs[i] = outcome{code: p.Code, ran: ran, detail: p.Detail}
			}
		})
	}
	// Kill once the server has routed every call: the stopped worker's
	// share sits unread in its buffer, and dies with it.
	waitFor(t, "every call routed", func() bool { return seen() >= 2*n })
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	runs := readExecLog(t, logPath)
	t.Logf("%d calls of each tool at a stopped, then killed worker: %s", n, tally(outs))
	for i, o := range outs {
		want := envelope.RanNo
		if i%2 == 1 {
			want = envelope.RanMaybe
		}
		switch {
		case runs[strconv.Itoa(i)] != 0:
			t.Errorf("call %d ran although its worker was stopped before it was sent", i)
		case o.code == "":
			t.Errorf("call %d ended ok although its only worker was stopped", i)
		case o.ran != string(want):
			t.Errorf("call %d (%s) ended %s ran=%q, want ran=%q: %s", i, map[bool]string{true: "idempotent", false: "destructive"}[i%2 == 1], o.code, o.ran, want, o.detail)
		}
	}
}

// watchCalls counts the calls the server routes on toolmesh.call.>, a
// batch message's each (every call in one begins "tm2 id="): a plain
// subscriber gets a copy of each call as the worker's queue group does.
func watchCalls(t *testing.T, url string) func() int {
	t.Helper()
	nc := dialURL(t, url)
	var mu sync.Mutex
	count := 0
	if _, err := nc.Subscribe("toolmesh.call.>", func(m *nats.Msg) {
		mu.Lock()
		count += strings.Count(string(m.Data), "tm2 id=")
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return count
	}
}

// A worker that never said a word to this caller dies (kill -9)
// holding calls it never read. Of 2 `toolmesh worker`s the victim is
// stopped (SIGSTOP: it reads nothing, names nothing, beacons no more)
// before a fresh caller fires its calls, so the caller has only seen the
// victim's presence beacons; then it is killed. The caller probes the
// worker whose beacons stopped while calls of a tool it hosts wait
// unnamed, finds it gone by the 503, and settles those calls: worker_lost
// saying "no", citing the lost presence — not overloaded after 30
// intervals as when only the workers heard on the tool were probed — and
// none of them is in the execution log. Nothing says "may have run": the
// victim took nothing up.
func TestHonestSilentWorkerKilledFoundByPresence(t *testing.T) {
	srv := startStockServer(t)
	dir := t.TempDir()
	tools, logPath, pidPath := pidLogTool(t, dir)
	victim, victimID := startCLIWorker(t, srv.url, tools)
	_, survivorID := startCLIWorker(t, srv.url, tools)
	c := stockCaller(t, srv.url)
	// The caller subscribed to presence when it was made: once a beacon
	// of each worker sent after that has arrived here, the caller's
	// subscription was sent it too.
	awaitBeacons(t, srv.url, victimID, survivorID)
	stopProcess(t, victim.cmd.Process)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const n = 200
	done := make(chan []outcome, 1)
	start := time.Now()
	go func() { done <- fireFlood(ctx, c, n) }()
	waitFor(t, "the survivor running the flood's calls", func() bool { return len(readExecLog(t, logPath)) >= 20 })
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Since(start)
	outs := <-done
	runs := readExecLog(t, logPath)
	t.Logf("%d calls at 2 workers, one stopped then killed: %s; %d runs logged", n, tally(outs), len(runs))
	checkAccounting(t, outs, runs, true)
	checkVictimRanNothing(t, pidPath, victim.cmd.Process.Pid)
	settled := 0
	for i, o := range outs {
		switch {
		case o.ran == string(envelope.RanMaybe):
			t.Errorf("call %d ended %s saying it may have run, but the killed worker took nothing up: %s", i, o.code, o.detail)
		case o.code == envelope.CodeWorkerLost && (!strings.Contains(o.detail, victimID) || !strings.Contains(o.detail, "presence beacons stopped")):
			t.Errorf("call %d ended worker_lost without citing the killed worker's lost presence: %s", i, o.detail)
		case o.code == envelope.CodeWorkerLost:
			settled++
		}
	}
	if settled == 0 {
		t.Fatalf("no call ended worker_lost found by presence, although the killed worker held unread calls: %s", tally(outs))
	}
	t.Logf("%d unread calls of the killed worker settled unrun; the last %s after the kill", settled, lastSettled(outs, killed))
}

// awaitBeacons waits for a presence beacon of each worker id.
func awaitBeacons(t *testing.T, url string, ids ...string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("toolmesh.presence.>")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for len(want) > 0 {
		m, err := sub.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("no beacon of %v: %v", want, err)
		}
		var b wire.Beacon
		if json.Unmarshal(m.Data, &b) == nil {
			delete(want, b.WorkerID)
		}
	}
}

// checkVictimRanNothing: the killed worker's pid is not in the pid log.
func checkVictimRanNothing(t *testing.T, pidPath string, pid int) {
	t.Helper()
	b, _ := os.ReadFile(pidPath)
	for _, p := range strings.Fields(string(b)) {
		if p == strconv.Itoa(pid) {
			t.Fatalf("the stopped worker (pid %d) ran a call", pid)
		}
	}
}
