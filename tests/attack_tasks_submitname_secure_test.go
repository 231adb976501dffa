package tests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/tasks"
)

// Under deploy/secure verbatim, with raw NATS (no Go caller to check
// names first): the server lets alice publish on a subject that is
// itself a pattern within her grant (submit.demo.>, submit.demo.*), so
// the service must judge the name: a submit there, or on a demo tool's
// name, of fs.wipe is forbidden, one of a pattern invalid_input; her
// submit of a demo tool on fs.wipe's name is refused by the server. None
// leaves a task.
func TestSecureRawSubmitUnderOddNamesMakesNoTask(t *testing.T) {
	m := startSecure(t)
	m.taskService(t, tasks.Config{})
	nc, errs := m.dial(t, "alice")
	cases := []struct {
		subject, tool string
		code          envelope.Code
	}{
		{"toolmesh.tasks.call.submit.demo.>", "fs.wipe", envelope.CodeForbidden},
		{"toolmesh.tasks.call.submit.demo.*", "fs.wipe", envelope.CodeForbidden},
		{"toolmesh.tasks.call.submit.demo.x", "fs.wipe", envelope.CodeForbidden},
		{"toolmesh.tasks.call.submit.demo.>", "demo.>", envelope.CodeInvalidInput},
		{"toolmesh.tasks.call.submit.demo.*", "demo.*", envelope.CodeInvalidInput},
		{"toolmesh.tasks.call.submit.demo.x", "demo.x.>", envelope.CodeInvalidInput},
	}
	for _, tc := range cases {
		ev, err := rawSubmit(nc, tc.subject, tc.tool)
		if err != nil || ev.Type != envelope.EventError || ev.Code != tc.code {
			t.Fatalf("submit on %s of %s: %+v, %v; want %s", tc.subject, tc.tool, ev, err, tc.code)
		}
	}
	go func() { _, _ = rawSubmit(nc, "toolmesh.tasks.call.submit.fs.wipe", "demo.x") }()
	waitFor(t, "alice's submit on fs.wipe's name to be refused", func() bool {
		for _, e := range errs.all() {
			if strings.Contains(e.Error(), `Permissions Violation for Publish to "toolmesh.tasks.call.submit.fs.wipe"`) {
				return true
			}
		}
		return false
	})
	alice := m.caller(t, "alice")
	if list, err := tasks.NewClient(alice).List(context.Background(), "", 0); err != nil || len(list) != 0 {
		t.Fatalf("alice's tasks %+v, %v; want none", list, err)
	}
}

// rawSubmit sends one raw unary submit of tool on subject and reads its
// terminal event.
func rawSubmit(nc *nats.Conn, subject, tool string) (envelope.ToolEvent, error) {
	var ev envelope.ToolEvent
	body, _ := json.Marshal(map[string]any{"args": map[string]any{"tool": tool, "args": map[string]any{}}})
	msg, err := nc.Request(subject, append([]byte("tm2 mode=unary\n"), body...), time.Minute)
	if err != nil {
		return ev, err
	}
	err = json.Unmarshal(msg.Data, &ev)
	return ev, err
}
