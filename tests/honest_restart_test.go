package tests

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// The stock nats-server restarts under load. The caller
// reconnects before the `toolmesh worker` has re-subscribed its tool, yet
// no call to the tool that existed before ends tool_not_found: a call that
// finds no worker just after the reconnect is connection_lost, ran "no"
// (and retried), and calls succeed again once the worker is back.
func TestHonestRestartUnderLoadSaysNoToolNotFound(t *testing.T) {
	srv := startStockServer(t)
	tools, logPath := execLogTool(t, t.TempDir())
	startCLIWorker(t, srv.url, tools)
	c := stockCaller(t, srv.url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))

	var restarted, okAfter atomic.Int64
	var mu sync.Mutex
	codes := map[envelope.Code]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := c.Call(ctx, "flood.log", map[string]any{"tag": "r"})
				cancel()
				mu.Lock()
				if err != nil {
					codes[envelope.AsProblem(err, envelope.CodeInternal).Code]++
				} else if restarted.Load() != 0 {
					okAfter.Add(1)
				}
				mu.Unlock()
			}
		}()
	}
	waitFor(t, "calls before the restart", func() bool { return readExecLog(t, logPath)["r"] >= 10 })
	srv.restart(t)
	restarted.Store(1)
	waitFor(t, "calls served after the restart", func() bool { return okAfter.Load() >= 20 })
	close(stop)
	wg.Wait()
	t.Logf("failures across the restart: %v; %d ok after it", codes, okAfter.Load())
	if n := codes[envelope.CodeToolNotFound]; n > 0 {
		t.Fatalf("%d calls to a tool that existed ended tool_not_found across a server restart", n)
	}
}
