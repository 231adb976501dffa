package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// A process that submitted a streaming task and followed it is killed
// with -9 after the first event; a new process attaches by id and gets
// every event exactly once, in order, and the terminal.
func TestDurableAttachAfterSubmitterKill9(t *testing.T) {
	m := startDurable(t, tasks.Config{})
	release := make(chan struct{})
	w := meshtest.NewWorker(t, meshtest.Connect(t, m.srv), worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "drip", Streaming: true}, func(ctx context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
		if err := emit.Delta(map[string]int{"i": 1}); err != nil {
			return nil, err
		}
		select { // the rest only once the submitter is dead
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		for i := 2; i <= 50; i++ {
			if err := emit.Delta(map[string]int{"i": i}); err != nil {
				return nil, err
			}
		}
		return map[string]int{"sent": 50}, nil
	})
	cmd := exec.Command(toolmeshBin(t), "call", "drip", "--durable", "--server", m.srv.ClientURL())
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	var rec tasks.Record
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &rec) != nil || rec.TaskID == "" {
		t.Fatalf("first line %q is not a task record", sc.Text())
	}
	for sc.Scan() && !strings.Contains(sc.Text(), `"delta"`) {
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(release)

	r := runCmd(t, "", "tasks", "watch", rec.TaskID, "--server", m.srv.ClientURL())
	if r.code != 0 {
		t.Fatalf("tasks watch exited %d: %s", r.code, r.stderr)
	}
	evs := ndjson[tasks.Event](t, r.stdout)
	wantNumbered(t, evs)
	if len(evs) != 52 { // start, 50 deltas, result
		t.Fatalf("%d events, want 52", len(evs))
	}
	for i, ev := range evs[1:51] {
		if want := fmt.Sprintf(`{"i":%d}`, i+1); string(ev.Event.Data) != want {
			t.Fatalf("event %d: %s, want %s", ev.N, ev.Event.Data, want)
		}
	}
}

// killTools is a tools file whose tool counts its runs in a file; the
// first run never finishes (its worker is to be killed), later ones do.
func killTools(t *testing.T, dir string, idempotent bool) string {
	t.Helper()
	cfg := filepath.Join(dir, "tools.yaml")
	script := fmt.Sprintf(`echo run >> %[1]s/runs; if [ "$(wc -l < %[1]s/runs)" -ge 2 ]; then echo '{"done":true}'; exit 0; fi; exec sleep 1000`, dir)
	body := fmt.Sprintf("tools:\n  - name: job\n    annotations: {idempotent: %v}\n    timeout: 5m\n    binding:\n      cli:\n        cmd: sh\n        args: [\"-c\", %q]\n", idempotent, script)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runsOf counts the runs the job tool recorded.
func runsOf(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "runs"))
	return strings.Count(string(b), "run")
}

// kill -9 of the worker mid-task: an idempotent task completes on a second
// worker with one terminal; any other ends worker_lost having run once.
func TestDurableWorkerKill9(t *testing.T) {
	for _, tc := range []struct {
		name       string
		idempotent bool
		state      string
		runs       int
	}{
		{"idempotent tool runs again elsewhere", true, tasks.Succeeded, 2},
		{"other tool ends worker_lost, run once", false, tasks.Failed, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := startDurable(t, tasks.Config{Heartbeat: 200 * time.Millisecond})
			dir := t.TempDir()
			cfg := killTools(t, dir, tc.idempotent)
			a, _ := startCLIWorker(t, m.srv.ClientURL(), cfg)
			ctx := context.Background()
			id := submitTask(ctx, t, m.c, "job", map[string]any{})
			waitFor(t, "the first run", func() bool { return runsOf(dir) == 1 })
			startCLIWorker(t, m.srv.ClientURL(), cfg) // the worker the task moves to
			_ = a.cmd.Process.Signal(syscall.SIGKILL)
			_ = a.cmd.Wait()
			wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			rec, err := tasks.NewClient(m.c).Get(wctx, id, true)
			if err != nil {
				t.Fatal(err)
			}
			checkAfterKill(t, m, id, rec, tc.state, dir, tc.runs)
		})
	}
}

// checkAfterKill checks a task's end after its worker was killed.
func checkAfterKill(t *testing.T, m *durableMesh, id string, rec tasks.Record, state, dir string, runs int) {
	t.Helper()
	// Nothing of the task is left to run: its queued call is gone.
	waitFor(t, "the task queue to be empty", func() bool { return queueLen(t, m.srv) == 0 })
	if rec.State != state || runsOf(dir) != runs {
		t.Fatalf("state %s after %d runs (%+v), want %s after %d", rec.State, runsOf(dir), rec, state, runs)
	}
	evs, _ := attachAll(t, m.c, id)
	wantNumbered(t, evs) // exactly one terminal, the last event
	last := evs[len(evs)-1].Event
	if state == tasks.Failed && last.Code != envelope.CodeWorkerLost {
		t.Fatalf("terminal %+v, want worker_lost", last)
	}
	if state == tasks.Succeeded {
		var retried bool
		for _, ev := range evs {
			retried = retried || (ev.Event.Type == envelope.EventProgress && strings.Contains(ev.Event.Message, "attempt 1 ended worker_lost"))
		}
		if !retried || rec.Attempt != 2 {
			t.Fatalf("attempt %d, retry visible %v: %+v", rec.Attempt, retried, evs)
		}
	}
}

// Cancel by id stops the running handler and its child processes.
func TestDurableCancelStopsHandlerAndChildren(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	m := startDurable(t, tasks.Config{})
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pids")
	cfg := filepath.Join(dir, "tools.yaml")
	_ = os.WriteFile(cfg, []byte(forkerTool(pidfile)), 0o644)
	startCLIWorker(t, m.srv.ClientURL(), cfg)
	ctx := context.Background()
	id := submitTask(ctx, t, m.c, "forker", map[string]any{})
	pids := forkedPids(t, pidfile)
	r := runCmd(t, "", "tasks", "cancel", id, "--server", m.srv.ClientURL())
	if r.code != 0 {
		t.Fatalf("tasks cancel exited %d: %s", r.code, r.stderr)
	}
	waitFor(t, "the program and its child to be gone", func() bool {
		return !testutil.ProcAlive(pids[0]) && !testutil.ProcAlive(pids[1])
	})
	rec, err := tasks.NewClient(m.c).Get(ctx, id, true)
	if err != nil || rec.State != tasks.Cancelled {
		t.Fatalf("record %+v, %v; want cancelled", rec, err)
	}
}
