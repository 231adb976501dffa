package workermw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/internal/workercall"
	"github.com/toolmesh/toolmesh/worker"
)

// AuditConfig says where Audit sends its records and how it names them.
type AuditConfig struct {
	// Prefix is the mesh's subject prefix: records go to
	// <Prefix>.audit.<tool>, which the operator's audit stream captures.
	Prefix string
	// Worker names the worker (or service) in each record.
	Worker string
	// ToolPrefix is put before each tool's name in records and subjects
	// ("tasks." for the task service's API), so a service's own tools do
	// not read as mesh tools of the same name.
	ToolPrefix string
	// Kind, when set, replaces the kind "call" of the records Audit and
	// AuditRefused publish: the task service's API calls are task actions
	// (submit, cancel, answer…), kind "task", taken by the task's owner.
	Kind string
	// Logger receives publish failures (default slog.Default()).
	Logger *slog.Logger
}

// Audit publishes an audit record of every call that reaches it on nc,
// after the handler returns. Put it first in worker.Config.Middleware so
// it also records what later middleware refuses. The connection must be
// allowed to publish <Prefix>.audit.> (deploy/secure grants it to the
// tool pools and the task service only, so tenants cannot forge records).
// A lost record is logged, never fails the call.
func Audit(nc *nats.Conn, cfg AuditConfig) worker.Middleware {
	return auditFunc(cfg.Worker, cfg.ToolPrefix, auditPublisher(nc, cfg))
}

// AuditAnswers is Audit for the answers to calls' questions and
// approvals, which no middleware sees: set it as worker.Config.OnAnswer.
// The answer's content is digested, never kept.
func AuditAnswers(nc *nats.Conn, cfg AuditConfig) func(context.Context, workercall.Answered) {
	return auditAnswersFunc(cfg.Worker, cfg.ToolPrefix, auditPublisher(nc, cfg))
}

// auditAnswersFunc is AuditAnswers with the record handed to record.
func auditAnswersFunc(workerName, toolPrefix string, record func(context.Context, wire.AuditRecord)) func(context.Context, workercall.Answered) {
	return func(ctx context.Context, a workercall.Answered) {
		rec := wire.AuditRecord{Time: time.Now().UTC(), Kind: "answer", Worker: workerName, Identity: a.Identity,
			Tool: toolPrefix + a.Tool, CallID: a.CallID, QuestionID: a.QuestionID, Outcome: a.Action}
		rec.Tenant, rec.Person = splitIdentity(a.Identity)
		if a.Content != nil {
			rec.AnswerSHA256 = digest(a.Content)
		}
		if a.Approval {
			rec.Kind = "approval"
			switch {
			case a.Approved:
				rec.Outcome = "approved"
			case a.Action != envelope.ActionCancel:
				rec.Outcome = "refused"
			}
		}
		record(ctx, rec)
	}
}

// AuditRefused is Audit for the calls the worker ends before any
// middleware sees them (overloaded, a spec conflict, too late for their
// pickup, bad metadata or args…): set it as worker.Config.OnRefused.
// Each is a record of kind "call" whose Outcome is the Problem's code and
// Ran "no", with the identity the server stamped and the args' digest.
func AuditRefused(nc *nats.Conn, cfg AuditConfig) func(context.Context, *worker.Request, *envelope.Problem) {
	return auditRefusedFunc(cfg.Worker, cfg.ToolPrefix, auditPublisher(nc, cfg))
}

// auditRefusedFunc is AuditRefused with the record handed to record.
func auditRefusedFunc(workerName, toolPrefix string, record func(context.Context, wire.AuditRecord)) func(context.Context, *worker.Request, *envelope.Problem) {
	return func(ctx context.Context, req *worker.Request, p *envelope.Problem) {
		rec := wire.AuditRecord{Time: time.Now().UTC(), Kind: "call", Worker: workerName, Identity: req.Identity,
			Tool: toolPrefix + req.Tool, CallID: req.CallID, Ran: string(envelope.RanNo)}
		rec.Tenant, rec.Person = splitIdentity(req.Identity)
		if req.Args != nil {
			rec.ArgsSHA256 = digest(req.Args)
		}
		if p != nil {
			rec.Outcome = string(p.Code)
			if r := p.Ran(); r != "" {
				rec.Ran = string(r)
			}
		}
		record(ctx, rec)
	}
}

// auditPublisher publishes records on nc; a failure is logged.
func auditPublisher(nc *nats.Conn, cfg AuditConfig) func(context.Context, wire.AuditRecord) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, rec wire.AuditRecord) {
		if cfg.Kind != "" && rec.Kind == "call" {
			rec.Kind = cfg.Kind
		}
		data, err := json.Marshal(rec)
		if err == nil {
			err = nc.Publish(cfg.Prefix+".audit."+rec.Tool, data)
		}
		if err != nil {
			log.WarnContext(ctx, "audit record not published", "tool", rec.Tool, "call_id", rec.CallID, "err", err)
		}
	}
}

// digest is the hex sha256 of b.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// splitIdentity is an "acc/user" identity's tenant and person.
func splitIdentity(id string) (tenant, person string) {
	tenant, person, _ = strings.Cut(id, "/")
	if person == "" {
		return "", ""
	}
	return tenant, person
}

// auditFunc is Audit with the record handed to record instead of
// published: for a trail kept elsewhere, or a test.
func auditFunc(workerName, toolPrefix string, record func(context.Context, wire.AuditRecord)) worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
			start := time.Now()
			res, err := next.Handle(ctx, req, emit)
			rec := auditRecord(ctx, req, err)
			rec.Time, rec.Worker, rec.Tool = start.UTC(), workerName, toolPrefix+req.Tool
			rec.DurationMS = time.Since(start).Milliseconds()
			record(ctx, rec)
			return res, err
		})
	}
}

// auditRecord is who, what and how of one call ended by err.
func auditRecord(ctx context.Context, req *worker.Request, err error) wire.AuditRecord {
	rec := wire.AuditRecord{Kind: "call", Identity: req.Identity, CallID: req.CallID,
		ArgsSHA256: digest(req.Args), Outcome: "ok", Ran: string(envelope.RanYes)}
	rec.Tenant, rec.Person = splitIdentity(req.Identity)
	switch {
	case err == nil:
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		rec.Outcome = string(envelope.CodeTimeout) // as the worker answers it
	case ctx.Err() != nil:
		rec.Outcome = string(envelope.CodeCancelled)
	default:
		p := envelope.AsProblem(err, envelope.CodeToolFailed)
		rec.Outcome = string(p.Code)
		if r := p.Ran(); r != "" {
			rec.Ran = string(r)
		}
	}
	return rec
}
