package workermw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// A refused call's record is kind "call", ran "no", with the Problem's
// code as its outcome, the identity split, and the args digested.
func TestAuditRefusedRecord(t *testing.T) {
	var got []wire.AuditRecord
	f := auditRefusedFunc("w1", "tasks.", func(_ context.Context, r wire.AuditRecord) { got = append(got, r) })
	args := json.RawMessage(`{"secret":"x"}`)
	f(context.Background(), &worker.Request{Tool: "submit", CallID: "C1", Identity: "ALICE/alice", Args: args},
		envelope.NewProblem(envelope.CodeOverloaded, "busy").WithRan(envelope.RanNo))
	f(context.Background(), &worker.Request{Tool: "submit", CallID: "C2"}, envelope.NewProblem(envelope.CodeInvalidInput, "bad"))
	if len(got) != 2 {
		t.Fatalf("%d records", len(got))
	}
	r := got[0]
	if r.Kind != "call" || r.Tool != "tasks.submit" || r.Worker != "w1" || r.CallID != "C1" || r.Outcome != "overloaded" || r.Ran != "no" ||
		r.Tenant != "ALICE" || r.Person != "alice" || r.ArgsSHA256 != digestOf(args) || r.Time.IsZero() {
		t.Errorf("refused record %+v", r)
	}
	if r := got[1]; r.Outcome != "invalid_input" || r.Ran != "no" || r.ArgsSHA256 != "" || r.Person != "" {
		t.Errorf("refused record without args or identity %+v", r)
	}
}

// On a real worker, every call's end is recorded exactly once: a call
// refused overloaded, one validated against another spec, and one with
// args the input schema refuses through OnRefused (ran "no", the args'
// digest), and a call that ran through the middleware only.
func TestAuditRefusedSeesWhatMiddlewareDoesNot(t *testing.T) {
	s := meshtest.StartServer(t, embedded.Config{})
	nc := meshtest.Connect(t, s)
	recs := make(chan wire.AuditRecord, 16)
	record := func(_ context.Context, r wire.AuditRecord) { recs <- r }
	w := meshtest.NewWorker(t, nc, worker.Config{ID: "w-refuse", Limits: worker.Limits{MaxConcurrent: 1, MaxQueued: worker.NoQueue},
		Middleware: []worker.Middleware{auditFunc("w-refuse", "", record)},
		OnRefused:  auditRefusedFunc("w-refuse", "", record)})
	release := make(chan struct{})
	defer close(release)
	spec := envelope.ToolSpec{Name: "demo.hold", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
	if err := w.Register(spec, worker.HandlerFunc(func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "done", nil
	})); err != nil {
		t.Fatal(err)
	}
	held := rawCall(t, nc, "demo.hold", "01HELD", "", `{"n":1}`) // takes the one slot until release
	overloaded := rawCall(t, nc, "demo.hold", "01OVER", "", `{"n":2}`)
	wantRefused(t, <-overloaded, recs, "demo.hold", "01OVER", `{"n":2}`, envelope.CodeOverloaded)
	wantRefused(t, <-rawCall(t, nc, "demo.hold", "01CONF", "spec="+wire.SpecDigest(envelope.ToolSpec{Name: "demo.hold"}), `{"n":3}`),
		recs, "demo.hold", "01CONF", `{"n":3}`, envelope.CodeToolConflict)
	release <- struct{}{}
	if ev := <-held; ev.Problem() != nil {
		t.Fatalf("the held call ended %+v", ev.Problem())
	}
	if r := nextRecord(t, recs); r.CallID != "01HELD" || r.Outcome != "ok" || r.Ran != "yes" {
		t.Fatalf("the call that ran is recorded as %+v", r)
	}
	// Another worker, so that the held call's slot need not be free yet.
	w2 := meshtest.NewWorker(t, nc, worker.Config{ID: "w-refuse",
		Middleware: []worker.Middleware{auditFunc("w-refuse", "", record)},
		OnRefused:  auditRefusedFunc("w-refuse", "", record)})
	strict := spec
	strict.Name = "demo.strict"
	if err := w2.Register(strict, worker.HandlerFunc(func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return "ran", nil
	})); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, <-rawCall(t, nc, "demo.strict", "01BADA", "", `{"n":"x"}`), recs, "demo.strict", "01BADA", `{"n":"x"}`, envelope.CodeInvalidInput)
	select {
	case r := <-recs:
		t.Fatalf("a record too many: %+v", r)
	default:
	}
}

// wantRefused checks a call's answer and its one record: refused unrun with code.
func wantRefused(t *testing.T, ev envelope.ToolEvent, recs <-chan wire.AuditRecord, tool, id, args string, code envelope.Code) {
	t.Helper()
	if p := ev.Problem(); p == nil || p.Code != code || p.Ran() != envelope.RanNo {
		t.Fatalf("call %s answered %+v, want %s unrun", id, p, code)
	}
	r := nextRecord(t, recs) // recorded before the answer went out, or just after
	if r.Kind != "call" || r.CallID != id || r.Tool != tool || r.Worker != "w-refuse" || r.Outcome != string(code) ||
		r.Ran != "no" || r.ArgsSHA256 != digestOf(json.RawMessage(args)) {
		t.Fatalf("call %s is recorded as %+v, want %s, ran no, its args' digest", id, r, code)
	}
}

// nextRecord is the next record, failing t when none comes at all.
func nextRecord(t *testing.T, recs <-chan wire.AuditRecord) wire.AuditRecord {
	t.Helper()
	select {
	case r := <-recs:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no audit record")
		return wire.AuditRecord{}
	}
}

// rawCall sends a unary call with metadata extra and args, and hands on
// its terminal event.
func rawCall(t *testing.T, nc *nats.Conn, tool, id, extra, args string) <-chan envelope.ToolEvent {
	t.Helper()
	reply := nats.NewInbox()
	sub, err := nc.SubscribeSync(reply)
	if err != nil {
		t.Fatal(err)
	}
	line := "tm2 id=" + id
	if extra != "" {
		line += " " + extra
	}
	if err := nc.PublishRequest(wire.Subjects{}.Call(tool), reply, []byte(line+"\n"+`{"args":`+args+`}`)); err != nil {
		t.Fatal(err)
	}
	out := make(chan envelope.ToolEvent, 1)
	go func() {
		defer func() { _ = sub.Unsubscribe() }()
		for {
			m, err := sub.NextMsg(30 * time.Second)
			if err != nil {
				t.Errorf("call %s: no answer: %v", id, err)
				close(out)
				return
			}
			f, err := wire.ParseFrame(m.Data)
			if err != nil || f.Kind == wire.FrameBeat {
				continue
			}
			ev, err := envelope.ParseEvent(f.Payload)
			if err != nil {
				t.Errorf("call %s: %v", id, err)
				close(out)
				return
			}
			out <- ev
			return
		}
	}()
	return out
}

// digestOf is the hex sha256 of b, as records digest args.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// With AuditConfig.Kind, Audit and AuditRefused publish their records of
// calls under that kind (the task service's "task") on
// <prefix>.audit.<tool prefix><tool>.
func TestAuditKindNamesTaskActions(t *testing.T) {
	s := meshtest.StartServer(t, embedded.Config{})
	nc := meshtest.Connect(t, s)
	sub, err := nc.SubscribeSync("toolmesh.audit.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ac := AuditConfig{Prefix: "toolmesh", Worker: "tasks", ToolPrefix: "tasks.", Kind: "task"}
	req := &worker.Request{Tool: "cancel", CallID: "C1", Identity: "ALICE/alice", Args: json.RawMessage(`{"task_id":"T1"}`)}
	h := Audit(nc, ac)(worker.HandlerFunc(func(context.Context, *worker.Request, worker.Emitter) (any, error) { return "ok", nil }))
	if _, err := h.Handle(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	AuditRefused(nc, ac)(context.Background(), req, envelope.NewProblem(envelope.CodeInvalidInput, "bad"))
	for _, want := range []struct{ outcome, ran string }{{"ok", "yes"}, {"invalid_input", "no"}} {
		m, err := sub.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var r wire.AuditRecord
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		if m.Subject != "toolmesh.audit.tasks.cancel" || r.Kind != "task" || r.Tool != "tasks.cancel" || r.Person != "alice" ||
			r.Outcome != want.outcome || r.Ran != want.ran {
			t.Fatalf("record on %s: %+v, want kind task, %s, ran %s", m.Subject, r, want.outcome, want.ran)
		}
	}
}
