package tests

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// gatedToolYAML is one CLI tool that runs one call at a time: each run
// appends the call's "who" to LOG, the tool's execution log, then waits
// until GATE exists.
const gatedToolYAML = `
tools:
  - name: demo.gated
    max_concurrent: 1
    binding:
      cli:
        cmd: sh
        args: ["-c", "echo \"$1\" >> LOG; while [ ! -e GATE ]; do sleep 0.01; done; echo '{}'", "gated"]
        args_template: "{arg.who}"
`

// Under deploy/secure on the stock nats-server as its own process: bob
// sends a burst of unleased calls to a tool busy with the first of them,
// then disconnects. The server never tells the tools' account that he
// left, so none of his calls waits in the tool's queue to run for nobody:
// checked against the execution log the tool writes (not what callers
// are told), nothing of his runs after he is gone, while alice's call to
// the same tool is served.
func TestSecureGoneSendersUnleasedCallsDoNotRun(t *testing.T) {
	m := startSecureStock(t)
	dir := t.TempDir()
	logPath, gate := filepath.Join(dir, "exec.log"), filepath.Join(dir, "gate")
	yaml := strings.NewReplacer("LOG", logPath, "GATE", gate).Replace(gatedToolYAML)
	file, err := cli.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	w := meshtest.NewWorker(t, m.dial(t, "tools"), worker.Config{Pool: "demo"})
	if err := cli.RegisterFile(w, file, meshtest.Quiet()); err != nil {
		t.Fatal(err)
	}
	runs := func() []string {
		b, _ := os.ReadFile(logPath)
		return strings.Fields(string(b))
	}

	bob := m.dial(t, "bob")
	var answered, refusedUnrun, notWaiting atomic.Int64
	burst(t, bob, "demo.gated", func(i int) string { return `{"args":{"who":"bob-` + strconv.Itoa(i) + `"}}` }, func(ev envelope.ToolEvent) {
		answered.Add(1)
		if p := ev.Problem(); p != nil && p.Code == envelope.CodeOverloaded && p.Ran() == envelope.RanNo {
			refusedUnrun.Add(1)
			if strings.Contains(p.Detail, "does not wait") {
				notWaiting.Add(1)
			}
		}
	})
	waitFor(t, "bob's first call running and every other one answered", func() bool {
		return len(runs()) == 1 && answered.Load() == bobBurst-1
	})
	// Refused past his share of the worker, or by the tool as calls that
	// may not wait for its slot.
	if n := refusedUnrun.Load(); n != bobBurst-1 || notWaiting.Load() == 0 {
		t.Fatalf("%d of bob's other %d calls were refused overloaded, unrun (%d as calls that do not wait); want all", n, bobBurst-1, notWaiting.Load())
	}
	bob.Close()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	alice := meshtest.NewCaller(t, m.dial(t, "alice"), caller.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := alice.Call(ctx, "demo.gated", map[string]any{"who": "alice"}, caller.WithRetries(caller.NoRetries)); err != nil {
		t.Fatalf("alice's call of the tool bob flooded: %v", err)
	}
	waitToolStats(t, w, "demo.gated", "every call of the tool ended", func(st fleet.Counters) bool {
		return st.Requests == bobBurst+1
	})
	if got := runs(); len(got) != 2 || !strings.HasPrefix(got[0], "bob-") || got[1] != "alice" {
		t.Fatalf("the tool ran %v; want one call of bob's (running before he left), then alice's", got)
	}
	if st, _ := w.ToolStats("demo.gated"); st.Errors != bobBurst-1 {
		t.Fatalf("%d calls of the tool ended in errors, want bob's %d refused", st.Errors, bobBurst-1)
	}
}
