package tests

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

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
