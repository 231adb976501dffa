package meshtest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// The test mesh runs JetStream, so a catalogue knows how many workers
// exist and returns complete as soon as the worker answered. Without a
// registry it could only gather for its whole wait (a minute here) and
// say complete:false.
func TestCatalogIsCompleteWithoutWaiting(t *testing.T) {
	m := meshtest.New(t)
	if err := worker.AddTool(m.Worker, envelope.ToolSpec{Name: "double"},
		func(_ context.Context, _ *worker.Request, in struct{ N int }) (int, error) { return 2 * in.N, nil }); err != nil {
		t.Fatal(err)
	}
	if !m.Server.Server.JetStreamEnabled() {
		t.Fatal("the test mesh runs without JetStream")
	}
	cat, err := m.Caller.Catalog().List(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !cat.Complete || cat.Workers != 1 || len(cat.Tools) != 1 || cat.Tools[0].Spec.Name != "double" {
		t.Fatalf("catalogue: complete=%v workers=%d tools=%d warnings=%v", cat.Complete, cat.Workers, len(cat.Tools), cat.ScopeWarnings)
	}
}

const logHelperEnv = "MESHTEST_LOG_HELPER"

// TestLogHelper is run by TestWorkerLogsReachTheTestOutput in a child
// process; on its own it does nothing.
func TestLogHelper(t *testing.T) {
	if os.Getenv(logHelperEnv) != "1" {
		t.Skip("run by TestWorkerLogsReachTheTestOutput")
	}
	m := meshtest.New(t)
	if err := m.Worker.Register(envelope.ToolSpec{Name: "boom"}, worker.HandlerFunc(
		func(context.Context, *worker.Request, worker.Emitter) (any, error) { panic("kaboom") })); err != nil {
		t.Fatal(err)
	}
	_, err := m.Caller.Call(context.Background(), "boom", map[string]any{})
	var p *envelope.Problem
	if !errors.As(err, &p) || p.Code != envelope.CodeHandlerError {
		t.Fatalf("call: %v", err)
	}
}

// The worker's log lines (here: a handler's panic, logged at error level)
// are written to the test's own output, indented under its name, and
// nothing panics when the mesh stops at the test's end.
func TestWorkerLogsReachTheTestOutput(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLogHelper$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), logHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	s := string(out)
	run := strings.Index(s, "=== RUN   TestLogHelper")
	logged := strings.Index(s, `level=ERROR msg="handler panicked"`)
	pass := strings.Index(s, "--- PASS: TestLogHelper")
	if run < 0 || logged < run || pass < logged {
		t.Fatalf("the handler's panic was not logged inside the test's output:\n%s", s)
	}
	start := strings.LastIndexByte(s[:logged], '\n') + 1
	line, _, _ := strings.Cut(s[start:], "\n")
	if !strings.HasPrefix(line, "    ") || !strings.Contains(line, " tool=boom ") {
		t.Errorf("log line not the test's, indented, naming the tool: %.200q", line)
	}
}
