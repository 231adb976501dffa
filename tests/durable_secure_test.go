package tests

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// taskService runs a task service configured by cfg as deploy/secure's
// tasks user, stopped when t ends.
func (m *secureMesh) taskService(t *testing.T, cfg tasks.Config) *tasks.Service {
	t.Helper()
	nc, _ := m.dial(t, "tasks")
	return startService(t, nc, cfg)
}

// Under deploy/secure verbatim: a task belongs to its submitter; bob can
// neither list, get, watch nor cancel alice's task, and neither tenant
// reaches the JetStream API.
func TestSecureTasksBelongToTheirSubmitter(t *testing.T) {
	m := startSecure(t)
	m.taskService(t, tasks.Config{})
	started, ended := make(chan string, 1), make(chan error, 1)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.park"}, parkTool(started, ended))
	aliceNC, aliceErrs := m.dial(t, "alice")
	bobNC, bobErrs := m.dial(t, "bob")
	alice := meshtest.NewCaller(t, aliceNC, caller.Config{})
	bob := meshtest.NewCaller(t, bobNC, caller.Config{})
	ctx := context.Background()
	id, err := tasks.NewClient(alice).Submit(ctx, "demo.park", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	bobCannotTouch(t, bob, id)
	if list, err := tasks.NewClient(alice).List(ctx, "", 0); err != nil || len(list) != 1 || list[0].TaskID != id {
		t.Fatalf("alice lists %+v, %v; want her one task", list, err)
	}
	rec, err := tasks.NewClient(alice).Cancel(ctx, id)
	if err != nil || rec.State != tasks.Cancelled {
		t.Fatalf("alice's cancel: %+v, %v", rec, err)
	}
	if err := <-ended; err == nil {
		t.Fatal("the handler was not cancelled")
	}
	noJetStream(t, "alice", aliceNC, aliceErrs)
	noJetStream(t, "bob", bobNC, bobErrs)
}

// noJetStream checks that a tenant's request to the JetStream API is
// refused by the server (the permissions violation it reports) and gets
// no answer. The request is abandoned once the refusal is in, rather
// than waited out to a timeout.
func noJetStream(t *testing.T, name string, nc *nats.Conn, tenant *asyncErrs) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	jctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answered := make(chan error, 1)
	go func() {
		_, err := js.AccountInfo(jctx)
		answered <- err
	}()
	waitFor(t, name+"'s $JS.API publish to be refused", func() bool {
		for _, e := range tenant.all() {
			if strings.Contains(e.Error(), `Permissions Violation for Publish to "$JS.API.INFO"`) {
				return true
			}
		}
		return false
	})
	cancel()
	if err := <-answered; err == nil {
		t.Fatalf("%s reached the JetStream API", name)
	}
}

// bobCannotTouch checks that alice's task is invisible to bob: he can
// neither read, cancel, answer, watch nor list it.
func bobCannotTouch(t *testing.T, bob *caller.Caller, id string) {
	t.Helper()
	ctx := context.Background()
	_, err := tasks.NewClient(bob).Get(ctx, id, false)
	wantCode(t, err, envelope.CodeTaskNotFound)
	_, err = tasks.NewClient(bob).Cancel(ctx, id)
	wantCode(t, err, envelope.CodeTaskNotFound)
	_, err = tasks.NewClient(bob).Answer(ctx, id, "", caller.Decline())
	wantCode(t, err, envelope.CodeTaskNotFound)
	ts, err := tasks.NewClient(bob).Attach(ctx, id, 1)
	if err == nil {
		_, err = ts.Next()
		ts.Close()
	}
	if errors.Is(err, io.EOF) {
		t.Fatal("bob attached to alice's task")
	}
	wantCode(t, err, envelope.CodeTaskNotFound)
	if list, err := tasks.NewClient(bob).List(ctx, "", 0); err != nil || len(list) != 0 {
		t.Fatalf("bob lists %+v, %v; want none", list, err)
	}
}
