package tests

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
)

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
