package workermw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/internal/workercall"
	"github.com/toolmesh/toolmesh/worker"
)

// Each call's record names the identity split into tenant and person,
// digests the args, and says how the call ended and whether it ran.
func TestAuditRecordsOutcomeAndRan(t *testing.T) {
	args := json.RawMessage(`{"secret":"x"}`)
	sum := sha256.Sum256(args)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name           string
		ctx            context.Context
		err            error
		outcome, ran   string
		tenant, person string
	}{
		{"ok", context.Background(), nil, "ok", "yes", "ALICE", "alice"},
		{"problem", context.Background(), envelope.NewProblem(envelope.CodeOverloaded, "busy").WithRan(envelope.RanNo), "overloaded", "no", "ALICE", "alice"},
		{"plain error", context.Background(), errors.New("boom"), "tool_failed", "yes", "ALICE", "alice"},
		{"cancelled", ctx, context.Canceled, "cancelled", "yes", "ALICE", "alice"},
	}
	for _, tc := range cases {
		var got []wire.AuditRecord
		mw := auditFunc("w1", "tasks.", func(_ context.Context, r wire.AuditRecord) { got = append(got, r) })
		h := mw(worker.HandlerFunc(func(context.Context, *worker.Request, worker.Emitter) (any, error) { return nil, tc.err }))
		_, _ = h.Handle(tc.ctx, &worker.Request{Tool: "submit", CallID: "C1", Args: args, Identity: "ALICE/alice"}, nil)
		if len(got) != 1 {
			t.Fatalf("%s: %d records", tc.name, len(got))
		}
		r := got[0]
		if r.Kind != "call" || r.Tool != "tasks.submit" || r.Worker != "w1" || r.CallID != "C1" || r.Outcome != tc.outcome || r.Ran != tc.ran ||
			r.Tenant != tc.tenant || r.Person != tc.person || r.ArgsSHA256 != hex.EncodeToString(sum[:]) || r.Time.IsZero() {
			t.Errorf("%s: record %+v", tc.name, r)
		}
	}
}

// An approval's record says approved or refused; an answer's keeps a
// digest of the content, never the content.
func TestAuditAnswers(t *testing.T) {
	var got []wire.AuditRecord
	f := auditAnswersFunc("w1", "", func(_ context.Context, r wire.AuditRecord) { got = append(got, r) })
	ctx := context.Background()
	f(ctx, workercall.Answered{Tool: "fs.rm", CallID: "C1", Identity: "BOB/bob", QuestionID: "Q1", Action: envelope.ActionAccept, Approval: true, Approved: true, Content: json.RawMessage(`{"approve":true}`)})
	f(ctx, workercall.Answered{Tool: "fs.rm", CallID: "C2", Identity: "BOB/bob", QuestionID: "Q1", Action: envelope.ActionDecline, Approval: true})
	f(ctx, workercall.Answered{Tool: "fs.rm", CallID: "C3", Identity: "", QuestionID: "Q2", Action: envelope.ActionAccept, Content: json.RawMessage(`{"name":"x"}`)})
	want := []struct{ kind, outcome, person string }{{"approval", "approved", "bob"}, {"approval", "refused", "bob"}, {"answer", "accept", ""}}
	for i, w := range want {
		if r := got[i]; r.Kind != w.kind || r.Outcome != w.outcome || r.Person != w.person || r.ArgsSHA256 != "" {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
	}
	if len(got[2].AnswerSHA256) != 64 || got[1].AnswerSHA256 != "" {
		t.Errorf("answer digests: %q, %q", got[2].AnswerSHA256, got[1].AnswerSHA256)
	}
}
