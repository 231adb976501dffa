package tests

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

type deleteIn struct {
	Path string `json:"path"`
}

type confirmAnswer struct {
	Confirm bool   `json:"confirm"`
	Reason  string `json:"reason,omitempty"`
}

type deleteOut struct {
	Deleted bool   `json:"deleted"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// askingTool registers "rm", which asks for a typed confirmAnswer and
// reports how its question was settled: the answer's value, or the
// Problem a decline or cancel became.
func askingTool(t *testing.T, w *worker.Worker) {
	t.Helper()
	err := worker.AddTool(w, envelope.ToolSpec{Name: "rm"}, func(ctx context.Context, req *worker.Request, in deleteIn) (deleteOut, error) {
		a, err := worker.AskAs[confirmAnswer](ctx, req, "Delete "+in.Path+"?")
		var p *envelope.Problem
		if errors.As(err, &p) && (p.Code == envelope.CodeDeclined || p.Code == envelope.CodeCancelled) {
			return deleteOut{Outcome: string(p.Code)}, nil
		}
		if err != nil {
			return deleteOut{}, err
		}
		return deleteOut{Deleted: a.Confirm, Outcome: "answered", Reason: a.Reason}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAskAnswerReachesHandler: a Go handler asks mid-call, the Go caller
// answers through a callback, in unary and in stream mode; the handler
// gets the typed value, a decline and a cancel (each as its own
// outcome), and a stream shows the question and the answered event.
func TestAskAnswerReachesHandler(t *testing.T) {
	m := meshtest.New(t)
	askingTool(t, m.Worker)
	cases := []struct {
		name   string
		answer func(q caller.Question) (caller.Answer, error)
		want   deleteOut
	}{
		{"accept", func(q caller.Question) (caller.Answer, error) {
			return caller.Accept(confirmAnswer{Confirm: true, Reason: "asked in " + q.Tool})
		}, deleteOut{Deleted: true, Outcome: "answered", Reason: "asked in rm"}},
		{"decline", func(caller.Question) (caller.Answer, error) { return caller.Decline(), nil }, deleteOut{Outcome: "declined"}},
		{"cancel", func(caller.Question) (caller.Answer, error) { return caller.Dismiss(), nil }, deleteOut{Outcome: "cancelled"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked atomic.Value
			fn := func(_ context.Context, q caller.Question) (caller.Answer, error) {
				asked.Store(q)
				return c.answer(q)
			}
			got, err := caller.CallAs[deleteOut](context.Background(), m.Caller, "rm", deleteIn{Path: "/tmp/x"}, caller.OnQuestion(fn))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("handler saw %+v, want %+v", got, c.want)
			}
			q, _ := asked.Load().(caller.Question)
			if q.Message != "Delete /tmp/x?" || q.Tool != "rm" || !json.Valid(q.Schema) || q.Timeout <= 0 {
				t.Errorf("question as the caller saw it: %+v", q)
			}
		})
	}
	t.Run("stream", func(t *testing.T) {
		s, err := m.Caller.Stream(context.Background(), "rm", deleteIn{Path: "/a"}, caller.Answering())
		if err != nil {
			t.Fatal(err)
		}
		var types []envelope.EventType
		eachEvent(t, s, func(ev envelope.ToolEvent) {
			types = append(types, ev.Type)
			if q, ok := caller.QuestionOf(ev); ok {
				if err := s.Answer(q.ID, caller.Answer{Action: envelope.ActionAccept, Content: json.RawMessage(`{"confirm":"yes"}`)}); err == nil {
					t.Error("an answer the schema refuses was sent")
				}
				a, _ := caller.Accept(confirmAnswer{Confirm: true})
				if err := s.Answer(q.ID, a); err != nil {
					t.Fatal(err)
				}
			}
			if ev.Type == envelope.EventResult && string(ev.Data) != `{"deleted":true,"outcome":"answered"}` {
				t.Errorf("result %s", ev.Data)
			}
		})
		want := []envelope.EventType{envelope.EventStart, envelope.EventQuestion, envelope.EventAnswered, envelope.EventResult}
		if !equalTypes(types, want) {
			t.Errorf("events %v, want %v", types, want)
		}
	})
}

func equalTypes(a, b []envelope.EventType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAskWithoutAnswerer: a call that did not declare it answers gets
// input_required carrying what was asked, and the handler's question goes
// nowhere (no question event reaches a caller that cannot read it).
func TestAskWithoutAnswerer(t *testing.T) {
	m := meshtest.New(t)
	askingTool(t, m.Worker)
	_, err := m.Caller.Call(context.Background(), "rm", deleteIn{Path: "/x"})
	p := wantCode(t, err, envelope.CodeInputRequired)
	q, _ := p.Extensions["question"].(map[string]any)
	if q["message"] != "Delete /x?" || q["schema"] == nil {
		t.Errorf("the Problem does not say what was asked: %v", p.Extensions)
	}
}

// TestAskDeadline: a question nobody answers ends the call with
// input_timeout once its timeout passes, and the handler's context ends.
func TestAskDeadline(t *testing.T) {
	m := meshtest.NewWith(t, meshtest.Config{Worker: worker.Config{Liveness: worker.Liveness{QuestionTimeout: 200 * time.Millisecond}}})
	handlerDone := make(chan error, 1)
	err := m.Worker.Register(envelope.ToolSpec{Name: "ask"}, worker.HandlerFunc(
		func(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
			_, err := req.Ask(ctx, worker.Question{Message: "anyone?", Schema: json.RawMessage(`{"type":"object"}`)})
			<-ctx.Done()
			handlerDone <- context.Cause(ctx)
			return nil, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{})
	never := func(ctx context.Context, _ caller.Question) (caller.Answer, error) {
		close(seen)
		<-ctx.Done() // a person who never answers; released when the call ends
		return caller.Answer{}, ctx.Err()
	}
	_, err = m.Caller.Call(context.Background(), "ask", nil, caller.OnQuestion(never))
	wantCode(t, err, envelope.CodeInputTimeout)
	<-seen
	if cause := <-handlerDone; cause == nil {
		t.Error("the handler's context did not end")
	}
}

// approvalMesh hosts "fs.delete" (destructive), "fs.read" (read-only) and
// "other" (read-only) behind an approval policy: every destructive tool
// and every tool matching "fs.*". It returns the count of handler runs.
func approvalMesh(t *testing.T, w *worker.Worker) *atomic.Int64 {
	t.Helper()
	var runs atomic.Int64
	ro, destructive := true, true
	h := func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		runs.Add(1)
		return map[string]string{"ran": req.Tool}, nil
	}
	register(t, w, envelope.ToolSpec{Name: "fs.delete", Annotations: &envelope.Annotations{Destructive: &destructive}}, h)
	register(t, w, envelope.ToolSpec{Name: "fs.read", Annotations: &envelope.Annotations{ReadOnly: &ro}}, h)
	register(t, w, envelope.ToolSpec{Name: "other", Annotations: &envelope.Annotations{ReadOnly: &ro}}, h)
	return &runs
}

var approvalPolicy = worker.Approvals{Tools: []string{"fs.*"}, Destructive: true}

// TestApprovalPolicy: the worker asks before an approval-bound tool runs;
// the question names the tool and shows its args, and the handler has
// not run when it is asked; approved calls run, every other outcome ends
// the call without running the handler; a tool outside the policy is
// never asked about.
func TestApprovalPolicy(t *testing.T) {
	m := meshtest.NewWith(t, meshtest.Config{Worker: worker.Config{Approvals: approvalPolicy}})
	runs := approvalMesh(t, m.Worker)
	approve := func(v bool) caller.AnswerFunc {
		return func(_ context.Context, q caller.Question) (caller.Answer, error) {
			if n := runs.Load(); n != 0 {
				t.Errorf("the handler ran %d times before the approval", n)
			}
			if q.Approval == nil || q.Approval.Tool != q.Tool || string(q.Approval.Args) != `{"path":"/etc"}` {
				t.Errorf("approval question %+v does not name the tool and its args", q.Approval)
			}
			return caller.Accept(map[string]bool{"approve": v})
		}
	}
	decline := func(context.Context, caller.Question) (caller.Answer, error) { return caller.Decline(), nil }
	dismiss := func(context.Context, caller.Question) (caller.Answer, error) { return caller.Dismiss(), nil }
	cases := []struct {
		name, tool string
		opts       []caller.Option
		code       envelope.Code // "" for a result
		runs       int64
	}{
		{"approved destructive", "fs.delete", []caller.Option{caller.OnQuestion(approve(true))}, "", 1},
		{"approved by pattern", "fs.read", []caller.Option{caller.OnQuestion(approve(true))}, "", 1},
		{"refused", "fs.delete", []caller.Option{caller.OnQuestion(approve(false))}, envelope.CodeDeclined, 0},
		{"declined", "fs.delete", []caller.Option{caller.OnQuestion(decline)}, envelope.CodeDeclined, 0},
		{"dismissed", "fs.delete", []caller.Option{caller.OnQuestion(dismiss)}, envelope.CodeCancelled, 0},
		{"nobody to ask", "fs.delete", nil, envelope.CodeInputRequired, 0},
		{"outside the policy", "other", []caller.Option{caller.OnQuestion(decline)}, "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs.Store(0)
			_, err := m.Caller.Call(context.Background(), c.tool, map[string]string{"path": "/etc"}, c.opts...)
			if c.code == "" && err != nil {
				t.Fatal(err)
			}
			if c.code != "" {
				wantCode(t, err, c.code)
			}
			if n := runs.Load(); n != c.runs {
				t.Errorf("handler ran %d times, want %d", n, c.runs)
			}
		})
	}
}

// TestApprovalPolicyRefusesBadPattern: a malformed pattern is refused
// when the worker is made, not silently never matched.
func TestApprovalPolicyRefusesBadPattern(t *testing.T) {
	m := meshtest.New(t)
	_, err := worker.New(m.Connect(t), worker.Config{Approvals: worker.Approvals{Tools: []string{"fs.["}}})
	wantCode(t, err, envelope.CodeInvalidConfig)
}

// TestSecureForgedAnswerIsRefused: under deploy/secure, bob — another
// tenant who somehow learned alice's call id and question id — answers
// alice's approval question "approve". The worker does not hear it: the
// call stays unanswered and its handler does not run; alice's own
// decline then ends it declined, still without running the handler.
func TestSecureForgedAnswerIsRefused(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{Approvals: worker.Approvals{Tools: []string{"demo.*"}}})
	var runs atomic.Int64
	register(t, w, envelope.ToolSpec{Name: "demo.rm"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		runs.Add(1)
		return map[string]bool{"deleted": true}, nil
	})
	bnc, _ := m.dial(t, "bob")
	alice := m.caller(t, "alice")
	bob := meshtest.NewCaller(t, bnc, caller.Config{})
	ctx := context.Background()

	s, err := alice.Stream(ctx, "demo.rm", map[string]string{"path": "/"}, caller.Answering())
	if err != nil {
		t.Fatal(err)
	}
	var q caller.Question
	for { // Next, not a range: leaving a range would close the stream
		ev, err := s.Next()
		if err != nil || ev.IsTerminal() {
			t.Fatalf("before the question: %+v %v", ev, err)
		}
		var ok bool
		if q, ok = caller.QuestionOf(ev); ok {
			break
		}
	}
	forged := wire.Control{Op: wire.OpAnswer, CallID: s.CallID(), QuestionID: q.ID, Action: envelope.ActionAccept,
		Content: json.RawMessage(`{"approve":true}`)}
	workerID := w.ID()
	if err := bnc.Publish(wire.Subjects{}.Control(workerID), forged.Encode()); err != nil {
		t.Fatal(err)
	}
	// Bob's own approved call travels the same connection after the
	// forgery, so once it is done the worker has handled the forgery.
	yes := func(context.Context, caller.Question) (caller.Answer, error) {
		return caller.Accept(map[string]bool{"approve": true})
	}
	if _, err := bob.Call(ctx, "demo.rm", map[string]string{"path": "/bob"}, caller.OnQuestion(yes)); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times after bob's forgery and bob's own call, want 1 (bob's)", n)
	}
	if err := s.Answer(q.ID, caller.Decline()); err != nil {
		t.Fatal(err)
	}
	var types []envelope.EventType
	for ev, err := range s.Events() {
		if err != nil && !ev.IsTerminal() {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		if ev.IsTerminal() {
			wantCode(t, ev.Problem(), envelope.CodeDeclined)
		}
	}
	if want := []envelope.EventType{envelope.EventAnswered, envelope.EventError}; !equalTypes(types, want) {
		t.Errorf("alice's events after the forgery %v, want %v (the forged answer was taken)", types, want)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("alice's handler ran (%d runs in all)", n)
	}
}

// TestApprovalInSpans: the worker's server span and the caller's client
// span record the approval question (naming the tool) and its answer.
func TestApprovalInSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	m := meshtest.NewWith(t, meshtest.Config{Worker: worker.Config{Approvals: approvalPolicy, Tracing: worker.Tracing{TracerProvider: tp}},
		Caller: caller.Config{TracerProvider: tp}})
	approvalMesh(t, m.Worker)
	yes := func(context.Context, caller.Question) (caller.Answer, error) {
		return caller.Accept(map[string]bool{"approve": true})
	}
	if _, err := m.Caller.Call(context.Background(), "fs.delete", map[string]string{"path": "/x"}, caller.OnQuestion(yes)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both spans to end", func() bool { return len(rec.Ended()) == 2 })
	for _, s := range rec.Ended() {
		events := map[string]map[string]string{}
		for _, ev := range s.Events() {
			attrs := map[string]string{}
			for _, kv := range ev.Attributes {
				attrs[string(kv.Key)] = kv.Value.Emit()
			}
			events[ev.Name] = attrs
		}
		q, a := events["toolmesh.question"], events["toolmesh.answer"]
		if q["toolmesh.question_id"] == "" || a["toolmesh.answer.action"] != "accept" {
			t.Errorf("%s span events %v lack the question or the accepted answer", s.SpanKind(), events)
		}
		if s.SpanKind() == trace.SpanKindServer && q["toolmesh.approval.tool"] != "fs.delete" {
			t.Errorf("server span's question does not name the tool: %v", q)
		}
	}
}
