package tests

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
