package tests

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// Under deploy/secure on the stock nats-server as its own process:
// `toolmesh call --detach` and the `tasks` commands, run by a tenant whose
// permissions give her the task API but not the task service's own
// subjects, do their work and print nothing alarming — no permissions
// violation, no "connection closed for good" — on stderr.
func TestSecureStockDetachAndTasksPrintNothingAlarming(t *testing.T) {
	m := startSecureStock(t)
	startService(t, m.dial(t, "tasks"), tasks.Config{})
	w := meshtest.NewWorker(t, m.dial(t, "tools"), worker.Config{Pool: "demo"})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	as := func(args ...string) result {
		return runCmd(t, "", append(args, "--server", m.url, "--user", "alice", "--password", m.passwords["alice"])...)
	}
	alarming := func(what string, r result) {
		t.Helper()
		if strings.Contains(r.stderr, "iolation") || strings.Contains(r.stderr, "closed for good") {
			t.Fatalf("%s printed an alarm although all went well: stderr %q", what, r.stderr)
		}
	}
	r := as("call", "demo.echo", "--detach", "--args", `{"message":"hi"}`)
	id := regexp.MustCompile(ulidRe).FindString(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("call --detach: %+v: want a task id and exit 0", r)
	}
	alarming("call --detach", r)
	r = as("tasks", "get", id, "--wait")
	var rec struct{ State string }
	if err := json.Unmarshal([]byte(r.stdout), &rec); r.code != 0 || err != nil || rec.State != "succeeded" {
		t.Fatalf("tasks get --wait: %+v (%v): want the task's record, succeeded", r, err)
	}
	alarming("tasks get", r)
	r = as("tasks", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Fatalf("tasks ls: %+v: want the task listed", r)
	}
	alarming("tasks ls", r)
}
