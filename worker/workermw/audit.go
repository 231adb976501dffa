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
	"github.com/toolmesh/toolmesh/worker"
)

// AuditRecord is one call as the audit trail keeps it: who made it (the
// identity the NATS server stamped, split into tenant and person), what
// (the tool and a digest of its arguments, never the arguments), when, and
// how it ended (outcome "ok" or the Problem's code, and whether the
// handler ran). Records travel as JSON on <prefix>.audit.<tool>.
type AuditRecord struct {
	Time       time.Time `json:"time"`
	Worker     string    `json:"worker,omitempty"`
	Identity   string    `json:"identity,omitempty"`
	Tenant     string    `json:"tenant,omitempty"`
	Person     string    `json:"person,omitempty"`
	Tool       string    `json:"tool"`
	CallID     string    `json:"call_id"`
	ArgsSHA256 string    `json:"args_sha256"`
	Outcome    string    `json:"outcome"`
	Ran        string    `json:"ran"`
	// DurationMS is how long the handler (and the middleware inside this
	// one) took, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
}

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
	// Logger receives publish failures (default slog.Default()).
	Logger *slog.Logger
}

// Audit publishes an AuditRecord of every call that reaches it on nc,
// after the handler returns. Put it first in worker.Config.Middleware so
// it also records what later middleware refuses. The connection must be
// allowed to publish <Prefix>.audit.> (deploy/secure grants it to the
// tool pools and the task service only, so tenants cannot forge records).
// A lost record is logged, never fails the call.
func Audit(nc *nats.Conn, cfg AuditConfig) worker.Middleware {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return AuditFunc(cfg.Worker, cfg.ToolPrefix, func(ctx context.Context, rec AuditRecord) {
		data, err := json.Marshal(rec)
		if err == nil {
			err = nc.Publish(cfg.Prefix+".audit."+rec.Tool, data)
		}
		if err != nil {
			log.WarnContext(ctx, "audit record not published", "tool", rec.Tool, "call_id", rec.CallID, "err", err)
		}
	})
}

// AuditFunc is Audit with the record handed to record instead of
// published: for a trail kept elsewhere, or a test.
func AuditFunc(workerName, toolPrefix string, record func(context.Context, AuditRecord)) worker.Middleware {
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
func auditRecord(ctx context.Context, req *worker.Request, err error) AuditRecord {
	sum := sha256.Sum256(req.Args)
	rec := AuditRecord{Identity: req.Identity, CallID: req.CallID,
		ArgsSHA256: hex.EncodeToString(sum[:]), Outcome: "ok", Ran: string(envelope.RanYes)}
	if acc, user, ok := strings.Cut(req.Identity, "/"); ok {
		rec.Tenant, rec.Person = acc, user
	}
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
