package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/audit"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/workermw"
)

// Under deploy/secure verbatim: calls the worker refuses before any
// middleware sees them — bob's call finding the one slot taken
// (overloaded) and his call validated against another spec of the tool
// (tool_conflict) — show in `toolmesh audit` as bob's, ran "no", with
// their args' digest; alice's task submit and cancel show as task
// actions of hers, the task's owner; and neither tenant can touch the
// trail.
func TestSecureAuditRecordsRefusedCallsAndTaskActions(t *testing.T) {
	m := startSecure(t)
	url := m.srv.ClientURL()
	asOperator := []string{"--server", url, "--user", "tasks", "--password", m.passwords["tasks"]}
	if r := runCmd(t, "", append([]string{"audit", "init"}, asOperator...)...); r.code != 0 {
		t.Fatalf("audit init: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	toolsNC, _ := m.dial(t, "tools")
	bobNC, _ := m.dial(t, "bob")
	tasksNC, _ := m.dial(t, "tasks")
	tac := workermw.AuditConfig{Prefix: "toolmesh", Worker: "tasks", ToolPrefix: "tasks.", Kind: "task"}
	startService(t, tasksNC, tasks.Config{Middleware: []worker.Middleware{workermw.Audit(tasksNC, tac)},
		OnRefused: workermw.AuditRefused(tasksNC, tac)})
	alice := m.caller(t, "alice")
	overArgs, conflictArgs := refuseBobsCalls(t, toolsNC, alice, bobNC)
	ctx := context.Background()
	tc := tasks.NewClient(alice)
	id, err := tc.Submit(ctx, "demo.echo", map[string]any{"secret": "alice-task-s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}

	want := map[string]func(wire.AuditRecord) bool{
		"alice's submit": func(r wire.AuditRecord) bool { return r.Tool == "tasks.submit.demo.echo" },
		"alice's cancel": func(r wire.AuditRecord) bool { return r.Tool == "tasks.cancel" },
	}
	maps.Copy(want, bobsRefusedCalls())
	waitForAuditRecords(t, tasksNC, want)
	recs := auditJSON(t, asOperator)
	wantBobsRefusedCalls(t, recs, overArgs, conflictArgs)
	for _, action := range []string{"alice's submit", "alice's cancel"} {
		r := findRecord(t, recs, want[action])
		if r.Kind != "task" || r.Identity != "ALICE/alice" || r.Tenant != "ALICE" || r.Person != "alice" || r.Worker != "tasks" ||
			r.Outcome != "ok" || r.Ran != "yes" || len(r.ArgsSHA256) != 64 {
			t.Fatalf("%s is recorded as %+v", action, r)
		}
	}
	tenantsCannotTouchTheTrail(t, m, url)
}

// refuseBobsCalls starts a demo worker (pool demo, one slot, no queue)
// recording every call's end, and has the worker refuse two of bob's
// calls before any middleware sees them: one while alice's call holds
// the slot (overloaded), one validated against another spec of the tool
// (tool_conflict). It returns the args of each.
func refuseBobsCalls(t *testing.T, toolsNC *nats.Conn, alice *caller.Caller, bobNC *nats.Conn) (overArgs, conflictArgs json.RawMessage) {
	t.Helper()
	ac := workermw.AuditConfig{Prefix: "toolmesh", Worker: "demo-1"}
	w := meshtest.NewWorker(t, toolsNC, worker.Config{Pool: "demo", Limits: worker.Limits{MaxConcurrent: 1, MaxQueued: worker.NoQueue},
		Middleware: []worker.Middleware{workermw.Audit(toolsNC, ac)}, OnRefused: workermw.AuditRefused(toolsNC, ac)})
	entered, release := make(chan struct{}), make(chan struct{})
	register(t, w, envelope.ToolSpec{Name: "demo.hold"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "held", nil
	})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	bob := meshtest.NewCaller(t, bobNC, caller.Config{Retries: caller.NoRetries})
	ctx := context.Background()
	held := make(chan error, 1)
	go func() {
		_, err := alice.Call(ctx, "demo.hold", json.RawMessage(`{"n":1}`))
		held <- err
	}()
	<-entered
	overArgs, conflictArgs = json.RawMessage(`{"n":2}`), json.RawMessage(`{"secret":"bob-s3cret"}`)
	_, err := bob.Call(ctx, "demo.hold", overArgs)
	wantCode(t, err, envelope.CodeOverloaded)
	_, err = bob.Call(ctx, "demo.echo", conflictArgs, caller.WithSpec(envelope.ToolSpec{Name: "demo.echo", Description: "a stale spec"}))
	wantCode(t, err, envelope.CodeToolConflict)
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	return overArgs, conflictArgs
}

// bobsRefusedCalls matches the records refuseBobsCalls leads to.
func bobsRefusedCalls() map[string]func(wire.AuditRecord) bool {
	return map[string]func(wire.AuditRecord) bool{
		"bob's overloaded call":  func(r wire.AuditRecord) bool { return r.Tool == "demo.hold" && r.Outcome == "overloaded" },
		"bob's conflicting call": func(r wire.AuditRecord) bool { return r.Outcome == "tool_conflict" },
	}
}

// wantBobsRefusedCalls checks the records of refuseBobsCalls' calls in recs.
func wantBobsRefusedCalls(t *testing.T, recs []wire.AuditRecord, overArgs, conflictArgs json.RawMessage) {
	t.Helper()
	wantRecord(t, findRecord(t, recs, bobsRefusedCalls()["bob's overloaded call"]), wire.AuditRecord{Kind: "call", Identity: "BOB/bob",
		Tenant: "BOB", Person: "bob", Tool: "demo.hold", Worker: "demo-1", ArgsSHA256: sha256Hex(overArgs), Outcome: "overloaded", Ran: "no"})
	wantRecord(t, findRecord(t, recs, bobsRefusedCalls()["bob's conflicting call"]), wire.AuditRecord{Kind: "call", Identity: "BOB/bob",
		Tenant: "BOB", Person: "bob", Tool: "demo.echo", Worker: "demo-1", ArgsSHA256: sha256Hex(conflictArgs), Outcome: "tool_conflict", Ran: "no"})
	held := findRecord(t, recs, func(r wire.AuditRecord) bool { return r.Tool == "demo.hold" && r.Outcome == "ok" })
	if held.Identity != "ALICE/alice" || held.Ran != "yes" {
		t.Fatalf("alice's held call is recorded as %+v", held)
	}
}

// The same on the stock nats-server loading deploy/secure verbatim: bob's
// calls refused before any middleware show as his, unrun.
func TestSecureStockAuditRecordsRefusedCalls(t *testing.T) {
	m := startSecureStock(t)
	asOperator := []string{"--server", m.url, "--user", "tasks", "--password", m.passwords["tasks"]}
	if r := runCmd(t, "", append([]string{"audit", "init"}, asOperator...)...); r.code != 0 {
		t.Fatalf("audit init: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	alice := meshtest.NewCaller(t, m.dial(t, "alice"), caller.Config{})
	overArgs, conflictArgs := refuseBobsCalls(t, m.dial(t, "tools"), alice, m.dial(t, "bob"))
	waitForAuditRecords(t, m.dial(t, "tasks"), bobsRefusedCalls())
	wantBobsRefusedCalls(t, auditJSON(t, asOperator), overArgs, conflictArgs)
}

// waitForAuditRecords waits until the audit stream holds a record that
// each of want matches.
func waitForAuditRecords(t *testing.T, nc *nats.Conn, want map[string]func(wire.AuditRecord) bool) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the audit records", func() bool {
		found := map[string]bool{}
		err := audit.Read(context.Background(), js, "toolmesh", audit.Filter{}, false, func(r wire.AuditRecord) error {
			for name, match := range want {
				if match(r) {
					found[name] = true
				}
			}
			return nil
		}, nil)
		return err == nil && len(found) == len(want)
	})
}

// sha256Hex is the hex sha256 of b.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
