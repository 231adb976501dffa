package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// cliMesh loads a tools file into a fresh mesh.
func cliMesh(t *testing.T, toolsYAML string) *meshFixture {
	t.Helper()
	f := newMesh(t, worker.Config{}, caller.Config{Heartbeat: 100 * time.Millisecond})
	file, err := cli.Parse([]byte(toolsYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.RegisterFile(f.w, file, meshtest.Quiet()); err != nil {
		t.Fatal(err)
	}
	return f
}

// Deltas flow while the program runs: the program prints its first line,
// then waits for a file the test creates only after receiving that line.
// If deltas were held until exit, this would never finish.
func TestCLIStreamsWhileRunning(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	f := cliMesh(t, fmt.Sprintf(`
tools:
  - name: ticker
    binding:
      cli:
        cmd: sh
        args: ["-c", "for i in 1 2 3; do echo tick $i; sleep 0.1; done; while [ ! -e %s ]; do sleep 0.01; done; echo done"]
        output_format: lines
`, gate))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := f.c.Stream(ctx, "ticker", nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var result envelope.ToolEvent
	eachEvent(t, s, func(ev envelope.ToolEvent) {
		switch ev.Type {
		case envelope.EventDelta:
			var d struct{ Line string }
			_ = json.Unmarshal(ev.Data, &d)
			lines = append(lines, d.Line)
			if d.Line == "tick 3" {
				if err := os.WriteFile(gate, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		case envelope.EventResult, envelope.EventError:
			result = ev
		}
	})
	if result.Type != envelope.EventResult || strings.Join(lines, ",") != "tick 1,tick 2,tick 3,done" {
		t.Fatalf("lines %q, terminal %+v", lines, result)
	}
}

// Cancelling the caller's context stops the program and its children.
func TestCLICancelFromCallerKillsGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	f := cliMesh(t, fmt.Sprintf(`
tools:
  - name: hang
    kill_grace: 100ms
    binding: {cli: {cmd: sh, args: ["-c", "trap '' TERM; sleep 1000 & echo $! > %s; wait; wait"]}}
`, pidfile))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := f.c.Call(ctx, "hang", nil); errc <- err }()
	var pid int
	waitFor(t, "the grandchild's pid", func() bool {
		b, err := os.ReadFile(pidfile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	cancel()
	wantCode(t, <-errc, envelope.CodeCancelled)
	// The caller returns at once; the worker stops the program (SIGTERM
	// ignored, so SIGKILL after the grace) and counts the call when done.
	waitToolStats(t, f.w, "hang", "the worker to finish the cancelled call", func(st fleet.Counters) bool {
		return st.Requests == 1
	})
	waitFor(t, "the grandchild to die", func() bool {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(stat), ") Z")
	})
}

func TestCLIBearerAndPaging(t *testing.T) {
	f := cliMesh(t, `
tools:
  - name: whoami
    binding: {cli: {cmd: sh, args: ["-c", "printf '{\"token\":\"%s\"}' \"$TOKEN\""], env: {TOKEN: $ATD_BEARER}}}
  - name: listing
    binding: {cli: {cmd: sh, args: ["-c", "if [ \"$1\" = --all ]; then echo '{\"items\":[1,2,3]}'; else echo '{\"items\":[1]}'; fi", "sh"], args_template: "{page_all}", page_all_flag: --all}}
  - name: single
    binding: {cli: {cmd: sh, args: ["-c", "echo '{\"items\":[1]}'"]}}
`)
	ctx := context.Background()
	resp, err := f.c.Call(ctx, "whoami", nil, caller.WithBearer("b-42"))
	if v, _ := resp.Get("token"); err != nil || string(v) != `"b-42"` {
		t.Fatalf("bearer: %v %s", err, v)
	}
	resp, err = f.c.CallAll(ctx, "listing", nil)
	if err != nil || string(resp.Data) != `{"items":[1,2,3],"complete":true}` {
		t.Fatalf("page_all: %v %s", err, resp.Data)
	}
	_, err = f.c.CallAll(ctx, "single", nil)
	wantCode(t, err, envelope.CodePaginationUnsupported)
	_, err = f.c.Call(ctx, "single", nil, caller.DryRun())
	wantCode(t, err, envelope.CodeDryRunUnsupported)
}

// A Go tool paging by cursor: CallAll walks the pages and merges them, and
// names the page it could not get.
func TestCallAllWalksCursors(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	pages := func(failAt string) worker.HandlerFunc {
		return func(_ context.Context, r *worker.Request, _ worker.Emitter) (any, error) {
			cur := ""
			if r.Page != nil {
				cur = r.Page.Cursor
			}
			switch cur {
			case "":
				return map[string]any{"items": []int{1, 2}, "next_cursor": "p2"}, nil
			case failAt:
				return nil, envelope.NewProblem(envelope.CodeToolFailed, "backend down")
			case "p2":
				return map[string]any{"items": []int{3}, "next_cursor": "p3"}, nil
			}
			return map[string]any{"items": []int{4}}, nil
		}
	}
	register(t, f.w, envelope.ToolSpec{Name: "pages"}, pages(""))
	register(t, f.w, envelope.ToolSpec{Name: "flaky"}, pages("p3"))
	resp, err := f.c.CallAll(context.Background(), "pages", nil)
	if err != nil || string(resp.Data) != `{"items":[1,2,3,4],"pages":3,"complete":true}` {
		t.Fatalf("%v %s", err, resp.Data)
	}
	wantPartialGather(t, f.c, "flaky", 3, "p3")
}

// A tool that hands back a cursor it already gave would be walked
// forever; CallAll stops and says the gather is incomplete.
func TestCallAllStopsOnRepeatedCursor(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "loop"}, func(_ context.Context, r *worker.Request, _ worker.Emitter) (any, error) {
		if r.Page != nil && r.Page.Cursor != "" {
			return map[string]any{"items": []string{r.Page.Cursor}, "next_cursor": "again"}, nil
		}
		return map[string]any{"items": []string{"first"}, "next_cursor": "again"}, nil
	})
	wantPartialGather(t, f.c, "loop", 2, "twice")
}
