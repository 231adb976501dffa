package tests

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// Under deploy/secure verbatim: a task belongs to its submitter; bob can
// neither list, get, watch nor cancel alice's task, and neither tenant
// reaches the JetStream API.
func TestSecureTasksBelongToTheirSubmitter(t *testing.T) {
	m := startSecure(t)
	tasksNC, _ := m.dial(t, "tasks")
	svc, err := tasks.New(context.Background(), tasksNC, tasks.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	started, ended := make(chan string, 1), make(chan error, 1)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.park"}, parkTool(started, ended))
	aliceNC, aliceErrs := m.dial(t, "alice")
	bobNC, bobErrs := m.dial(t, "bob")
	alice := meshtest.NewCaller(t, aliceNC, caller.Config{})
	bob := meshtest.NewCaller(t, bobNC, caller.Config{})
	ctx := context.Background()
	id, err := alice.Submit(ctx, "demo.park", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	bobCannotTouch(t, bob, id)
	if list, err := alice.Tasks(ctx, "", 0); err != nil || len(list) != 1 || list[0].TaskID != id {
		t.Fatalf("alice lists %+v, %v; want her one task", list, err)
	}
	rec, err := alice.CancelTask(ctx, id)
	if err != nil || rec.State != caller.TaskCancelled {
		t.Fatalf("alice's cancel: %+v, %v", rec, err)
	}
	if err := <-ended; err == nil {
		t.Fatal("the handler was not cancelled")
	}
	for name, tenant := range map[string]*asyncErrs{"alice": aliceErrs, "bob": bobErrs} {
		nc := aliceNC
		if name == "bob" {
			nc = bobNC
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		jctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = js.AccountInfo(jctx)
		cancel()
		if err == nil {
			t.Fatalf("%s reached the JetStream API", name)
		}
		waitFor(t, name+"'s $JS.API publish to be refused", func() bool {
			for _, e := range tenant.all() {
				if strings.Contains(e.Error(), `Permissions Violation for Publish to "$JS.API.INFO"`) {
					return true
				}
			}
			return false
		})
	}
}

// bobCannotTouch checks that alice's task is invisible to bob: he can
// neither read, cancel, answer, watch nor list it.
func bobCannotTouch(t *testing.T, bob *caller.Caller, id string) {
	t.Helper()
	ctx := context.Background()
	_, err := bob.Task(ctx, id, false)
	wantCode(t, err, envelope.CodeTaskNotFound)
	_, err = bob.CancelTask(ctx, id)
	wantCode(t, err, envelope.CodeTaskNotFound)
	_, err = bob.AnswerTask(ctx, id, "", caller.Decline())
	wantCode(t, err, envelope.CodeTaskNotFound)
	ts, err := bob.Attach(ctx, id, 1)
	if err == nil {
		_, err = ts.Next()
		ts.Close()
	}
	if errors.Is(err, io.EOF) {
		t.Fatal("bob attached to alice's task")
	}
	wantCode(t, err, envelope.CodeTaskNotFound)
	if list, err := bob.Tasks(ctx, "", 0); err != nil || len(list) != 0 {
		t.Fatalf("bob lists %+v, %v; want none", list, err)
	}
}
