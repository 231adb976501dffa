package tests

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/tasks"
)

// outputTools is a tools file of CLI tools that print their output as
// lines and as NDJSON.
const outputTools = `
tools:
  - name: greet
    binding:
      cli:
        cmd: sh
        args: ["-c", "echo hello; echo world"]
        output_format: lines
  - name: items
    binding:
      cli:
        cmd: sh
        args: ["-c", "echo '{\"a\":1}'; echo '{\"b\":2}'"]
        output_format: ndjson
`

// A detached call of a CLI tool keeps its output: the task's terminal
// holds what a plain call of the tool returns, lines and NDJSON items
// gathered as the plain call gathers them.
func TestCommandDetachedCLIToolKeepsItsOutput(t *testing.T) {
	cfg := writeTools(t, outputTools)
	_, url := startDev(t, "--config", cfg)
	for _, tool := range []string{"greet", "items"} {
		plain := runCmd(t, "", "call", tool, "--server", url)
		if plain.code != 0 {
			t.Fatalf("plain call of %s: %+v", tool, plain)
		}
		var resp map[string]json.RawMessage
		if err := json.Unmarshal([]byte(plain.stdout), &resp); err != nil {
			t.Fatalf("plain call of %s printed %q: %v", tool, plain.stdout, err)
		}
		detached := runCmd(t, "", "call", tool, "--detach", "--server", url)
		id := regexp.MustCompile(`"task_id":"(` + ulidRe + `)"`).FindStringSubmatch(detached.stdout)
		if detached.code != 0 || id == nil {
			t.Fatalf("call %s --detach: %+v", tool, detached)
		}
		got := runCmd(t, "", "tasks", "get", id[1], "--wait", "--server", url)
		var rec tasks.Record
		if err := json.Unmarshal([]byte(got.stdout), &rec); err != nil || got.code != 0 {
			t.Fatalf("tasks get %s --wait: %+v (%v)", id[1], got, err)
		}
		ev, ok := rec.TerminalEvent()
		if rec.State != tasks.Succeeded || !ok {
			t.Fatalf("task of %s: %+v", tool, rec)
		}
		want := plainResult(t, resp)
		if string(ev.Data) != want {
			t.Errorf("%s: the task's result is %s, a plain call's %s", tool, ev.Data, want)
		}
	}
}

// plainResult is the result a plain call printed in its Response: the
// Response without its id and success, or its "result" member when the
// result is not an object (§5.6).
func plainResult(t *testing.T, resp map[string]json.RawMessage) string {
	t.Helper()
	if r, ok := resp["result"]; ok {
		return string(r)
	}
	delete(resp, "id")
	delete(resp, "success")
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A detached call of a tool no worker hosts (a typo) is kept and waits,
// exit 0, but says so: on stderr at once, and in the task's record while
// it queues.
func TestCommandDetachedCallOfUnhostedToolSaysSo(t *testing.T) {
	_, url := startDev(t)
	r := runCmd(t, "", "call", "ecoh", "--detach", "--server", url)
	id := regexp.MustCompile(`"task_id":"(` + ulidRe + `)"`).FindStringSubmatch(r.stdout)
	if r.code != 0 || id == nil {
		t.Fatalf("call ecoh --detach: %+v", r)
	}
	if !strings.Contains(r.stderr, "no worker hosts tool ecoh") || !strings.Contains(r.stderr, id[1]) {
		t.Errorf("stderr %q does not say that no worker hosts ecoh", r.stderr)
	}
	var rec tasks.Record
	waitFor(t, "the record to say why the task waits", func() bool {
		got := runCmd(t, "", "tasks", "get", id[1], "--server", url)
		rec = tasks.Record{}
		return json.Unmarshal([]byte(got.stdout), &rec) == nil && rec.Waiting != ""
	})
	if rec.State != tasks.Queued || !strings.Contains(rec.Waiting, "no worker hosts tool ecoh") {
		t.Errorf("record %+v, want queued and waiting for a worker of ecoh", rec)
	}
	// A hosted tool's submit says nothing of the kind.
	r = runCmd(t, "", "call", "echo", "--detach", "--server", url, "--args", `{"message":"hi"}`)
	if r.code != 0 || strings.Contains(r.stderr, "no worker hosts") {
		t.Errorf("call echo --detach: %+v", r)
	}
}
