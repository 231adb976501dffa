package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// A CLI tool that runs one program at a time, as durable tasks: of three
// tasks offered to its worker at once, only the one whose program started
// reads running; the others wait for the tool's slot reading queued, and
// each reads running once its own program has started.
func TestDurableCLITaskReadsRunningOnlyOnceItsProgramStarted(t *testing.T) {
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	script := filepath.Join(dir, "slot.sh")
	// Each run notes its start, then waits for the test's word (a fifo:
	// no sleeping loop) and ends.
	body := "#!/bin/sh\necho run >> " + started + "\nread line < " + release + "\necho '{\"ok\":true}'\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(release); err != nil {
		t.Skipf("no fifo here: %v", err)
	}
	yaml := "tools:\n  - name: demo.slot\n    max_concurrent: 1\n    binding:\n      cli:\n        cmd: " + script + "\n        output_format: json\n"
	m := startDurable(t, tasks.Config{})
	w := meshtest.NewWorker(t, meshtest.Connect(t, m.srv), worker.Config{})
	file, err := cli.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.RegisterFile(w, file, meshtest.Quiet()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	for range 3 {
		id := submitTask(ctx, t, m.c, "demo.slot", map[string]any{})
		ids = append(ids, id)
	}
	runs := func() int {
		b, _ := os.ReadFile(started)
		return strings.Count(string(b), "run")
	}
	readRunning := func() int {
		n := 0
		for _, id := range ids {
			if rec, err := tasks.NewClient(m.c).Get(ctx, id, false); err == nil && rec.State == tasks.Running {
				n++
			}
		}
		return n
	}
	for want := 1; want <= 3; want++ {
		waitFor(t, "the next program to start and its task to read running", func() bool {
			return runs() == want && readRunning() == 1
		})
		if got := readRunning(); got != 1 || runs() != want {
			t.Fatalf("%d tasks read running with %d programs started and %d ended, want 1", got, runs(), want-1)
		}
		id := runningID(t, m.c, ids)
		f, err := os.OpenFile(release, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString("go\n")
		_ = f.Close()
		rec, err := tasks.NewClient(m.c).Get(ctx, id, true)
		if err != nil || rec.State != tasks.Succeeded {
			t.Fatalf("the released task: %+v, %v", rec, err)
		}
	}
}

// runningID is the id of the one task of ids that reads running.
func runningID(t *testing.T, c *caller.Caller, ids []string) string {
	t.Helper()
	for _, id := range ids {
		if rec, err := tasks.NewClient(c).Get(context.Background(), id, false); err == nil && rec.State == tasks.Running {
			return id
		}
	}
	t.Fatal("no task reads running")
	return ""
}
