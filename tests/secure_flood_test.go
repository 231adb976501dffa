package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// bobBurst is the burst: 5,300 calls of 40-odd bytes without
// caller= (unleased), sent at once.
const bobBurst = 5300

// burst publishes bobBurst unleased calls of tool on nc at once, call i
// with body(i), each with a reply subject of its own, and hands every
// event answered to onEvent (in the subscription's goroutine).
func burst(t *testing.T, nc *nats.Conn, tool string, body func(i int) string, onEvent func(envelope.ToolEvent)) {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.Subscribe(inbox+".*", func(msg *nats.Msg) {
		if ev, err := envelope.ParseEvent(msg.Data); err == nil && len(msg.Data) > 0 {
			onEvent(ev)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	for i := range bobBurst {
		if err := nc.PublishRequest("toolmesh.call."+tool, inbox+"."+strconv.Itoa(i), []byte(body(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// noArgs is a burst's body of a call without arguments.
func noArgs(int) string { return `{"args":{}}` }

// Under deploy/secure verbatim: bob's burst of unleased calls to
// a slow tool takes only his share of the shared worker (MaxPerIdentity);
// the rest are refused overloaded, unrun; he disconnects, and alice is
// still served by the same worker at once.
func TestSecureOneTenantsBurstLeavesOthersServed(t *testing.T) {
	m := startSecure(t)
	release := make(chan struct{})
	defer close(release)
	var parked atomic.Int64
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.slow"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		parked.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return map[string]bool{"ok": true}, nil
	})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)

	bob, _ := m.dial(t, "bob")
	refused := make(chan struct{}, bobBurst)
	burst(t, bob, "demo.slow", noArgs, func(ev envelope.ToolEvent) {
		if p := ev.Problem(); p != nil && p.Code == envelope.CodeOverloaded && p.Ran() == envelope.RanNo {
			refused <- struct{}{}
		}
	})
	share := 1024 / 2 // worker.Config.Limits.MaxPerIdentity's default: half of MaxConcurrent's
	for range bobBurst - share {
		<-refused
	}
	bob.Close()
	if got := parked.Load(); got != int64(share) {
		t.Fatalf("bob holds %d calls running on the worker, want his share of %d", got, share)
	}

	alice := m.caller(t, "alice")
	for i := range 20 {
		if _, err := alice.Call(context.Background(), "demo.echo", map[string]string{"message": "hi"}, caller.WithRetries(caller.NoRetries)); err != nil {
			t.Fatalf("alice's call %d after bob's burst: %v", i, err)
		}
	}
}

// controlFloodRSSBound bounds the worker process's peak RSS under bob's
// flood of 1 MB control messages: the worker's control subscription holds
// at most 4 MiB unread (the worker's bound), and a message over 1 KiB is
// dropped undecoded, so the flood (300 MB) must leave the process near its
// idle size (without those bounds it grew from 44 MiB to 1.27 GiB).
const controlFloodRSSBound = 160 << 20

// Under deploy/secure verbatim: bob floods a `toolmesh worker`
// process's control subject with 1 MB messages; its peak RSS stays under
// the bound and it still serves alice.
func TestSecureControlFloodLeavesWorkerMemoryBounded(t *testing.T) {
	m := startSecure(t)
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(tools, []byte("tools:\n  - name: demo.ok\n    binding:\n      cli: {cmd: echo, args: [\"{}\"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, wid := startCLIWorker(t, m.srv.ClientURL(), tools, "--pool", "demo", "--user", "tools", "--password", m.passwords["tools"])
	bob, _ := m.dial(t, "bob")
	msg := []byte(`{"op":"alive","caller_id":"` + strings.Repeat("x", 1_000_000-40) + `"}`)
	for range 300 {
		if err := bob.Publish("toolmesh.ctl."+wid, msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := bob.FlushTimeout(time.Minute); err != nil {
		t.Fatal(err)
	}
	alice := m.caller(t, "alice")
	if _, err := alice.Call(context.Background(), "demo.ok", nil); err != nil {
		t.Fatalf("alice's call after bob's control flood: %v", err)
	}
	hwm := procPeakRSS(t, p.cmd.Process.Pid)
	t.Logf("worker peak RSS after 300 MB of control messages: %d MiB", hwm>>20)
	if hwm > controlFloodRSSBound {
		t.Fatalf("worker peak RSS %d MiB, want at most %d MiB", hwm>>20, controlFloodRSSBound>>20)
	}
}

// procPeakRSS reads a process's peak resident set (VmHWM) in bytes.
func procPeakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status to read RSS from: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// sleepToolYAML is one CLI tool that takes a second a call, two at a time.
const sleepToolYAML = `
tools:
  - name: demo.sleep
    max_concurrent: 2
    binding:
      cli:
        cmd: sleep
        args_template: "1"
        output_format: lines
`

// Under deploy/secure on the stock nats-server as its own process: bob
// sends 5,300 unleased calls of one slow CLI tool and disconnects; the
// same tool still serves alice in her turn, within her 5 s budget —
// behind one of bob's calls, not behind the hundreds the worker admitted
// for him (his worker-wide share). The tool's slots go round robin by
// sender, and bob's calls that find no slot free are refused overloaded,
// unrun.
func TestSecureFloodOfOneToolLeavesItServingOthers(t *testing.T) {
	m := startSecureStock(t)
	w := meshtest.NewWorker(t, m.dial(t, "tools"), worker.Config{Pool: "demo"})
	file, err := cli.Parse([]byte(sleepToolYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.RegisterFile(w, file, meshtest.Quiet()); err != nil {
		t.Fatal(err)
	}

	bob := m.dial(t, "bob")
	var refusedUnrun, refusedOther atomic.Int64
	burst(t, bob, "demo.sleep", noArgs, func(ev envelope.ToolEvent) {
		p := ev.Problem()
		switch {
		case p == nil:
		case p.Code == envelope.CodeOverloaded && p.Ran() == envelope.RanNo:
			refusedUnrun.Add(1)
		default:
			refusedOther.Add(1)
		}
	})
	// The worker admits his share; the tool keeps two running for him and
	// none waiting (a call without caller= from another account does not
	// wait for room: the worker could not see him leave); every other call
	// is refused unrun.
	waitFor(t, "bob's calls past his shares to be refused", func() bool {
		return refusedUnrun.Load() >= bobBurst-512
	})
	bob.Close()

	alice := meshtest.NewCaller(t, m.dial(t, "alice"), caller.Config{})
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := alice.Call(ctx, "demo.sleep", map[string]any{}, caller.WithRetries(caller.NoRetries))
		cancel()
		if err != nil {
			t.Fatalf("alice's call %d of the tool bob flooded: %v", i, err)
		}
	}
	if n := refusedOther.Load(); n != 0 {
		t.Errorf("%d of bob's calls ended otherwise than overloaded, unrun", n)
	}
}

// secureStock is deploy/secure/nats-server.conf, verbatim, loaded by the
// stock nats-server in a process of its own.
type secureStock struct {
	url       string
	passwords map[string]string
}

func startSecureStock(t *testing.T) *secureStock {
	t.Helper()
	m, _ := startSecureStockWith(t)
	return m
}

// startSecureStockWith starts deploy/secure on the stock server with
// extra arguments, and returns it and its process.
func startSecureStockWith(t *testing.T, extra ...string) (*secureStock, *stockServer) {
	t.Helper()
	m := &secureStock{passwords: secureEnv(t)}
	s := startStockServer(t, append([]string{"-c", "../deploy/secure/nats-server.conf"}, extra...)...)
	m.url = s.url
	return m, s
}

// dial connects as user.
func (m *secureStock) dial(t *testing.T, user string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(m.url, nats.UserInfo(user, m.passwords[user]))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

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
