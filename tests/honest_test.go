package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
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
	"github.com/toolmesh/toolmesh/meshtest"
)

// floodCalls is how many calls the honesty flood fires at once:
// TOOLMESH_FLOOD=1 (make flood, .ci/run) fires the 20,000; the
// default test run a small version of the same accounting.
func floodCalls() int {
	if os.Getenv("TOOLMESH_FLOOD") != "" {
		return 20000
	}
	return 800
}

// execLogTool is a real program that appends the tag it is given to an
// execution log, one line per run, before answering: the log is the
// truth the outcomes are checked against.
func execLogTool(t *testing.T, dir string) (toolsFile, logPath string) {
	t.Helper()
	return gatedExecLogTool(t, dir, "")
}

// gatedExecLogTool is execLogTool whose program, after logging, waits
// for a shared lock on gate (flock(1)) before answering, when gate is
// set: while a test holds the lock exclusively, every run it started
// stays running.
func gatedExecLogTool(t *testing.T, dir, gate string) (toolsFile, logPath string) {
	t.Helper()
	logPath = filepath.Join(dir, "exec.log")
	body := "printf '%s\\n' \"$1\" >> " + logPath + "\n"
	if gate != "" {
		body += "flock -s " + gate + " true\n"
	}
	return logTagTool(t, dir, body), logPath
}

// logTagTool writes a tools file of two tools, flood.log and flood.idem,
// whose program runs body (a shell script given the tag as $1) and then
// answers {"tag": …}; it returns the tools file's path. flood.log
// declares nothing (destructive, MCP's default): no worker starts its
// calls before a confirmed heartbeat names them. flood.idem is declared
// idempotent: a call that accepts "maybe" may start unnamed.
func logTagTool(t *testing.T, dir, body string) string {
	t.Helper()
	script := filepath.Join(dir, "logtag.sh")
	body = "#!/bin/sh\n" + body + "printf '{\"tag\":\"%s\"}' \"$1\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	toolsFile := filepath.Join(dir, "tools.yaml")
	yaml := fmt.Sprintf(`tools:
  - name: flood.log
    description: appends its tag to an execution log
    input_schema: {type: object, properties: {tag: {type: string}}, required: [tag]}
    binding:
      cli: {cmd: %s, args_template: "{arg.tag}"}
  - name: flood.idem
    description: appends its tag to an execution log; declared idempotent
    input_schema: {type: object, properties: {tag: {type: string}}, required: [tag]}
    annotations: {idempotent: true}
    binding:
      cli: {cmd: %s, args_template: "{arg.tag}"}
`, script, script)
	if err := os.WriteFile(toolsFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return toolsFile
}

// stockCaller is a caller on its own connection to url, both closed when
// the test ends.
func stockCaller(t *testing.T, url string, opts ...nats.Option) *caller.Caller {
	t.Helper()
	return meshtest.NewCaller(t, dialURL(t, url, opts...), caller.Config{Logger: meshtest.Quiet()})
}

// holdGate creates gate and locks it exclusively: gated runs wait until
// the returned release is called (or the test ends).
func holdGate(t *testing.T, gate string) (release func()) {
	t.Helper()
	f, err := os.Create(gate)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = f.Close() }) }
	t.Cleanup(release)
	return release
}

// burnCPU starts n processes that spin a core each (a busy host), killed
// when the test ends.
func burnCPU(t *testing.T, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// outcome is how one call of a flood ended.
type outcome struct {
	code   envelope.Code // "" for ok
	ran    string        // the Problem's "ran" member ("" for ok)
	detail string
	after  time.Duration // from the flood's start
	idem   bool          // a call of flood.idem that accepted "maybe"
}

// fireFlood sends n calls to flood.log at once, tags "0".."n-1", and
// returns each call's outcome by tag.
func fireFlood(ctx context.Context, c *caller.Caller, n int) []outcome {
	return fireFloodOf(ctx, c, n, false)
}

// fireMixedFlood is fireFlood whose odd tags call flood.idem, declared
// idempotent by the call too (caller.Idempotent): those calls accept
// "maybe", and their workers start them without a confirmed naming.
func fireMixedFlood(ctx context.Context, c *caller.Caller, n int) []outcome {
	return fireFloodOf(ctx, c, n, true)
}

func fireFloodOf(ctx context.Context, c *caller.Caller, n int, mixed bool) []outcome {
	out := make([]outcome, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idem := mixed && i%2 == 1
			tool, opts := "flood.log", []caller.Option{caller.WithRetries(caller.NoRetries)}
			if idem {
				tool, opts = "flood.idem", append(opts, caller.Idempotent())
			}
			_, err := c.Call(ctx, tool, map[string]string{"tag": strconv.Itoa(i)}, opts...)
			out[i].idem = idem
			if err != nil {
				p := envelope.AsProblem(err, envelope.CodeInternal)
				ran, _ := p.Extensions["ran"].(string)
				out[i] = outcome{code: p.Code, ran: ran, detail: p.Detail, after: time.Since(start), idem: idem}
			}
		}()
	}
	wg.Wait()
	return out
}

// readExecLog counts the runs of each tag.
func readExecLog(t *testing.T, path string) map[string]int {
	t.Helper()
	runs := map[string]int{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return runs
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		runs[sc.Text()]++
	}
	return runs
}

// tally counts outcomes by "code/ran" for the report.
func tally(outs []outcome) string {
	n := map[string]int{}
	for _, o := range outs {
		k := "ok"
		if o.code != "" {
			k = string(o.code) + "/" + o.ran
		}
		if o.idem {
			k = "idem:" + k
		}
		n[k]++
	}
	var keys []string
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, n[k])
	}
	return b.String()
}

// A flood of CLI calls at 2 `toolmesh worker`s on a stock
// nats-server, half of a destructive tool, half of an idempotent one
// that accepts "maybe". Every call ends ok (in the log exactly once),
// refused not-run (absent from the log), or cancelled by its caller; no
// live worker is ever reported lost; only the idempotent tool's calls
// may say "maybe".
func TestHonestFloodAtTwoWorkers(t *testing.T) { floodAtTwoWorkers(t, 0) }

// On a busy host: the same flood while as many processes as the
// host has cores spin (opt-in: make flood): outcomes stay true when the
// workers, the caller and the server all fight for CPU.
func TestHonestFloodOnABusyHost(t *testing.T) {
	if os.Getenv("TOOLMESH_FLOOD") == "" {
		t.Skip("a flood on a host with every core busy: opt-in, TOOLMESH_FLOOD=1 (make flood)")
	}
	floodAtTwoWorkers(t, 2*runtime.NumCPU())
}

// floodAtTwoWorkers fires floodCalls at 2 workers, with burners
// processes spinning meanwhile, and holds the outcomes to the log.
func floodAtTwoWorkers(t *testing.T, burners int) {
	srv := startStockServer(t)
	dir := t.TempDir()
	tools, logPath := execLogTool(t, dir)
	for range 2 {
		startCLIWorker(t, srv.url, tools)
	}
	c := stockCaller(t, srv.url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	burnCPU(t, burners)
	n := floodCalls()
	outs := fireMixedFlood(ctx, c, n)
	runs := readExecLog(t, logPath)
	t.Logf("%d calls at 2 workers, %d processes spinning: %s; %d runs logged", n, burners, tally(outs), len(runs))
	checkAccounting(t, outs, runs, false)
}

// checkAccounting holds every outcome to the execution log: ok ran
// exactly once, not-run never ran, nothing ran twice; worker_lost only
// when allowLost (a worker was killed), and then only "maybe" for calls
// that ran and never "no" for a call in the log. A call the caller
// settled unnamed (overloaded) says "no" — "maybe" only when the call
// and its tool's declaration allow it (flood.idem's, which may start
// unnamed).
func checkAccounting(t *testing.T, outs []outcome, runs map[string]int, allowLost bool) {
	t.Helper()
	bad := 0
	report := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for i, o := range outs {
		tag := strconv.Itoa(i)
		switch {
		case runs[tag] > 1:
			report("call %s ran %d times", tag, runs[tag])
		case o.code == "" && runs[tag] != 1:
			report("call %s ended ok but is not in the execution log", tag)
		case o.code == "":
		case o.ran == "no" && runs[tag] != 0:
			report("call %s ended %s saying it did not run, but it ran", tag, o.code)
		case o.code == envelope.CodeWorkerLost && !allowLost:
			report("call %s ended worker_lost (ran=%q) after %s although both workers lived: %s", tag, o.ran, o.after, o.detail)
		case o.code == envelope.CodeOverloaded && o.ran == "maybe" && o.idem:
		case o.code == envelope.CodeOverloaded && o.ran != "no":
			report("call %s ended overloaded without saying it did not run (ran=%q)", tag, o.ran)
		case o.code != envelope.CodeOverloaded && o.code != envelope.CodeWorkerLost && o.code != envelope.CodeCancelled:
			report("call %s ended %s (ran=%q): want ok, overloaded, or cancelled by its caller", tag, o.code, o.ran)
		}
	}
	if bad > 10 {
		t.Errorf("... and %d more", bad-10)
	}
}

// Kill -9 of one of 2 workers under the same flood. Its
// calls end worker_lost saying "maybe" (picked up) or "no" (never taken
// up) — and no call said "no" is in the execution log; every ok is in it
// once; nothing ran twice.
func TestHonestFloodWorkerKilled(t *testing.T) {
	srv := startStockServer(t)
	dir := t.TempDir()
	// Runs wait at a gate until the kill: the killed worker surely holds
	// calls it took up, besides those unread in its buffer.
	gate := filepath.Join(dir, "gate")
	release := holdGate(t, gate)
	tools, logPath := gatedExecLogTool(t, dir, gate)
	victim, _ := startCLIWorker(t, srv.url, tools)
	startCLIWorker(t, srv.url, tools)
	c := stockCaller(t, srv.url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n := floodCalls()
	done := make(chan []outcome, 1)
	go func() { done <- fireMixedFlood(ctx, c, n) }()
	// Kill once both workers are running calls at the gate: each runs at
	// most 8 at once (the tools file's default max_concurrent), so more
	// than 8 logged runs are on both.
	waitFor(t, "calls running on both workers", func() bool { return len(readExecLog(t, logPath)) >= 12 })
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	release()
	outs := <-done
	runs := readExecLog(t, logPath)
	t.Logf("%d calls at 2 workers, one killed: %s; %d runs logged", n, tally(outs), len(runs))
	lost := 0
	for _, o := range outs {
		if o.code == envelope.CodeWorkerLost {
			lost++
			if o.ran != string(envelope.RanMaybe) && o.ran != string(envelope.RanNo) {
				t.Errorf("worker_lost without saying whether it ran: ran=%q", o.ran)
			}
		}
	}
	if lost == 0 {
		t.Error("no call ended worker_lost although a worker holding calls was killed")
	}
	checkAccounting(t, outs, runs, true)
}

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
