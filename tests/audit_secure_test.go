package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/workermw"
)

// argDigests remembers the sha256 of each call's arguments as the
// handler received them, keyed by call id.
type argDigests struct {
	mu sync.Mutex
	m  map[string]string
}

func (d *argDigests) note(req *worker.Request) {
	sum := sha256.Sum256(req.Args)
	d.mu.Lock()
	d.m[req.CallID] = hex.EncodeToString(sum[:])
	d.mu.Unlock()
}

func (d *argDigests) of(id string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m[id]
}

// Under deploy/secure verbatim: the operator's user creates the audit
// stream; a demo worker and the task service run with workermw.Audit;
// `toolmesh audit` then shows alice's and bob's calls and alice's task
// action with the right person, the args' digest (never the args), the
// outcome and ran. Neither tenant can read the trail (subscribe or
// $JS.API) nor write to it, nor can `toolmesh audit` run as alice.
func TestSecureAuditTrailNamesEachPerson(t *testing.T) {
	m := startSecure(t)
	url := m.srv.ClientURL()
	asOperator := []string{"--server", url, "--user", "tasks", "--password", m.passwords["tasks"]}
	if r := runCmd(t, "", append([]string{"audit", "init", "--max-age", "1h"}, asOperator...)...); r.code != 0 ||
		!strings.Contains(r.stdout, "TOOLMESH_AUDIT") {
		t.Fatalf("audit init: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	digests := &argDigests{m: map[string]string{}}
	toolsNC, _ := m.dial(t, "tools")
	ac := workermw.AuditConfig{Prefix: "toolmesh", Worker: "demo-1"}
	w := meshtest.NewWorker(t, toolsNC, worker.Config{Pool: "demo", Approvals: worker.Approvals{Tools: []string{"demo.risky"}},
		Middleware: []worker.Middleware{workermw.Audit(toolsNC, ac)}, OnAnswer: workermw.AuditAnswers(toolsNC, ac)})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, func(ctx context.Context, req *worker.Request, e worker.Emitter) (any, error) {
		digests.note(req)
		return echo(ctx, req, e)
	})
	register(t, w, envelope.ToolSpec{Name: "demo.fail"}, func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		digests.note(req)
		return nil, envelope.NewProblem(envelope.CodeToolFailed, "it fails")
	})
	register(t, w, envelope.ToolSpec{Name: "demo.risky"}, func(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		return worker.AskAs[map[string]string](ctx, req, "Your name?")
	})
	tasksNC, _ := m.dial(t, "tasks")
	startService(t, tasksNC, tasks.Config{Middleware: []worker.Middleware{
		workermw.Audit(tasksNC, workermw.AuditConfig{Prefix: "toolmesh", Worker: "tasks", ToolPrefix: "tasks."})}})

	alice := m.caller(t, "alice")
	bob := m.caller(t, "bob")
	ctx := context.Background()
	aliceRes, err := alice.Call(ctx, "demo.echo", map[string]any{"secret": "alice-s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bob.Call(ctx, "demo.fail", map[string]any{"secret": "bob-s3cret"})
	if p := envelope.AsProblem(err, ""); p == nil || p.Code != envelope.CodeToolFailed {
		t.Fatalf("bob's demo.fail: %v, want tool_failed", err)
	}
	if _, err := tasks.NewClient(alice).Run(ctx, "demo.echo", map[string]any{"secret": "alice-task-s3cret"}); err != nil {
		t.Fatal(err)
	}
	bobAnswers := caller.OnQuestion(func(_ context.Context, q caller.Question) (caller.Answer, error) {
		if q.Approval != nil {
			return caller.Accept(map[string]bool{"approve": true})
		}
		return caller.Accept(map[string]string{"name": "bob-s3cret-answer"})
	})
	if _, err := bob.Call(ctx, "demo.risky", map[string]any{}, bobAnswers); err != nil {
		t.Fatal(err)
	}
	_, err = alice.Call(ctx, "demo.risky", map[string]any{}, caller.OnQuestion(func(context.Context, caller.Question) (caller.Answer, error) {
		return caller.Decline(), nil
	}))
	wantCode(t, err, envelope.CodeDeclined)
	// Alice's and bob's calls, the task's run, alice's submit, bob's
	// approval, answer and call, alice's refusal.
	waitAuditRecords(t, tasksNC, 8)

	recs := auditJSON(t, asOperator)
	echoRec := findRecord(t, recs, func(r wire.AuditRecord) bool { return r.CallID == aliceRes.ID })
	wantRecord(t, echoRec, wire.AuditRecord{Kind: "call", Identity: "ALICE/alice", Tenant: "ALICE", Person: "alice", Tool: "demo.echo",
		Worker: "demo-1", ArgsSHA256: digests.of(aliceRes.ID), Outcome: "ok", Ran: "yes"})
	failRec := findRecord(t, recs, func(r wire.AuditRecord) bool { return r.Tool == "demo.fail" })
	wantRecord(t, failRec, wire.AuditRecord{Kind: "call", Identity: "BOB/bob", Tenant: "BOB", Person: "bob", Tool: "demo.fail",
		Worker: "demo-1", ArgsSHA256: digests.of(failRec.CallID), Outcome: "tool_failed", Ran: "yes"})
	submit := findRecord(t, recs, func(r wire.AuditRecord) bool { return r.Tool == "tasks.submit.demo.echo" })
	if submit.Identity != "ALICE/alice" || submit.Outcome != "ok" || len(submit.ArgsSHA256) != 64 {
		t.Fatalf("alice's submit is recorded as %+v", submit)
	}

	bobRisky := findRecord(t, recs, func(r wire.AuditRecord) bool { return r.Kind == "call" && r.Tool == "demo.risky" })
	approved := findRecord(t, recs, func(r wire.AuditRecord) bool { return r.Kind == "approval" && r.Identity == "BOB/bob" })
	answered := findRecord(t, recs, func(r wire.AuditRecord) bool { return r.Kind == "answer" })
	refused := findRecord(t, recs, func(r wire.AuditRecord) bool { return r.Kind == "approval" && r.Identity == "ALICE/alice" })
	if bobRisky.Identity != "BOB/bob" || bobRisky.Outcome != "ok" || approved.Outcome != "approved" || approved.CallID != bobRisky.CallID ||
		answered.Identity != "BOB/bob" || answered.Outcome != "accept" || answered.CallID != bobRisky.CallID || len(answered.AnswerSHA256) != 64 ||
		refused.Outcome != "refused" || refused.Tool != "demo.risky" {
		t.Fatalf("approvals and answers recorded as\ncall %+v\napproval %+v\nanswer %+v\nrefusal %+v", bobRisky, approved, answered, refused)
	}

	// Filtered, as text: only bob's calls of demo.fail, and never an argument.
	r := runCmd(t, "", append([]string{"audit", "--identity", "bob", "--tool", "demo.fail"}, asOperator...)...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 1 || !strings.Contains(lines[0], "BOB/bob call demo.fail demo-1 outcome=tool_failed ran=yes args=") {
		t.Fatalf("audit --identity bob --tool demo.fail: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	all := runCmd(t, "", append([]string{"audit"}, asOperator...)...)
	if strings.Contains(all.stdout, "s3cret") || len(strings.Split(strings.TrimSpace(all.stdout), "\n")) != len(recs) {
		t.Fatalf("audit prints %q; want one line a record and no arguments", all.stdout)
	}

	tenantsCannotTouchTheTrail(t, m, url)
}

// tenantsCannotTouchTheTrail checks that alice can neither subscribe to
// the audit subjects, publish a forged record, reach the stream through
// $JS.API, nor run `toolmesh audit`.
func tenantsCannotTouchTheTrail(t *testing.T, m *secureMesh, url string) {
	t.Helper()
	nc, errs := m.dial(t, "alice")
	wantDenied(t, nc, "", "toolmesh.audit.>")
	if err := nc.Publish("toolmesh.audit.demo.echo", []byte(`{"tool":"demo.echo","identity":"BOB/bob"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "alice's forged record to be refused", func() bool {
		for _, e := range errs.all() {
			if op, subj, ok := wire.Violation(e); ok && op == wire.OpPublish && subj == "toolmesh.audit.demo.echo" {
				return true
			}
		}
		return false
	})
	noJetStream(t, "alice", nc, errs)
	r := runCmd(t, "", "audit", "--server", url, "--user", "alice", "--password", m.passwords["alice"])
	if r.code == 0 || !strings.Contains(r.stderr, "forbidden") || strings.Contains(r.stdout, "demo.") {
		t.Fatalf("toolmesh audit as alice: code %d stdout %q stderr %q; want forbidden", r.code, r.stdout, r.stderr)
	}
}

// waitAuditRecords waits until the audit stream holds at least n records.
func waitAuditRecords(t *testing.T, nc *nats.Conn, n uint64) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the audit records", func() bool {
		s, err := js.Stream(context.Background(), "TOOLMESH_AUDIT")
		return err == nil && s.CachedInfo().State.Msgs >= n
	})
}

// auditJSON runs `toolmesh audit --json` with args and decodes its lines.
func auditJSON(t *testing.T, args []string) []wire.AuditRecord {
	t.Helper()
	r := runCmd(t, "", append([]string{"audit", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("audit --json: code %d stderr %q", r.code, r.stderr)
	}
	return ndjson[wire.AuditRecord](t, r.stdout)
}

func findRecord(t *testing.T, recs []wire.AuditRecord, match func(wire.AuditRecord) bool) wire.AuditRecord {
	t.Helper()
	for _, r := range recs {
		if match(r) {
			return r
		}
	}
	t.Fatalf("no such audit record in %+v", recs)
	return wire.AuditRecord{}
}

// wantRecord compares rec with want, leaving out the time, call id and duration.
func wantRecord(t *testing.T, rec, want wire.AuditRecord) {
	t.Helper()
	if rec.Time.IsZero() || rec.CallID == "" || want.ArgsSHA256 == "" {
		t.Fatalf("record %+v has no time or call id (or the handler saw no args)", rec)
	}
	want.Time, want.CallID, want.DurationMS = rec.Time, rec.CallID, rec.DurationMS
	if rec != want {
		t.Fatalf("audit record\n got %+v\nwant %+v", rec, want)
	}
}

// The same on the stock nats-server loading deploy/secure verbatim: the
// operator creates the trail and reads alice's call with her identity;
// alice may not subscribe to it.
func TestSecureStockAuditTrail(t *testing.T) {
	m := startSecureStock(t)
	asOperator := []string{"--server", m.url, "--user", "tasks", "--password", m.passwords["tasks"]}
	if r := runCmd(t, "", append([]string{"audit", "init"}, asOperator...)...); r.code != 0 {
		t.Fatalf("audit init: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	toolsNC := m.dial(t, "tools")
	w := meshtest.NewWorker(t, toolsNC, worker.Config{Pool: "demo", Middleware: []worker.Middleware{
		workermw.Audit(toolsNC, workermw.AuditConfig{Prefix: "toolmesh", Worker: "demo-1"})}})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	aliceNC := m.dial(t, "alice")
	res, err := meshtest.NewCaller(t, aliceNC, caller.Config{}).Call(context.Background(), "demo.echo", map[string]any{"secret": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	waitAuditRecords(t, m.dial(t, "tasks"), 1)
	rec := findRecord(t, auditJSON(t, asOperator), func(r wire.AuditRecord) bool { return r.CallID == res.ID })
	if rec.Identity != "ALICE/alice" || rec.Outcome != "ok" || rec.Ran != "yes" || len(rec.ArgsSHA256) != 64 {
		t.Fatalf("alice's call is recorded as %+v", rec)
	}
	if _, err := aliceNC.Subscribe("toolmesh.audit.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := aliceNC.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "alice's subscription to the trail to be refused", func() bool {
		op, subj, ok := wire.Violation(aliceNC.LastError())
		return ok && op == wire.OpSubscribe && subj == "toolmesh.audit.>"
	})
}
