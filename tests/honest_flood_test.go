package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
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
