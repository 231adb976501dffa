package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/audit"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/worker/workermw"
)

// newAuditCmd is `toolmesh audit`: it prints the operator's audit trail,
// and `toolmesh audit init` creates the stream that keeps it.
func newAuditCmd(g *globals) *cobra.Command {
	var f audit.Filter
	var since time.Duration
	var follow, asJSON bool
	cmd := usage.Command("audit", "Print the audit trail: who called which tool, when, and how it ended (operator only)",
		func(cmd *cobra.Command) error {
			ctx := cmd.Context()
			if since > 0 {
				f.Since = time.Now().Add(-since)
			}
			js, closeNC, err := g.auditJetStream(ctx)
			if err != nil {
				return err
			}
			defer closeNC()
			enc := json.NewEncoder(g.stdout)
			err = audit.Read(ctx, js, g.prefix, f, follow, func(r wire.AuditRecord) error {
				if asJSON {
					return enc.Encode(r)
				}
				_, err := fmt.Fprintln(g.stdout, auditLine(r))
				return err
			}, func(_ string, err error) {
				fmt.Fprintf(g.stderr, "toolmesh audit: skipped: %v\n", err)
			})
			if follow && ctx.Err() != nil {
				return nil
			}
			return auditProblem(err)
		})
	fl := cmd.Flags()
	fl.StringVar(&f.Tool, "tool", "", "only this tool (a subject pattern: demo.echo, demo.*, demo.>; the task API is tasks.*)")
	fl.StringVar(&f.Identity, "identity", "", "only this caller: ACCOUNT/user, a tenant (ACCOUNT/) or a person (user)")
	fl.DurationVar(&since, "since", 0, "only records of the last D (e.g. 1h)")
	fl.BoolVar(&follow, "follow", false, "go on printing new records until interrupted")
	fl.BoolVar(&asJSON, "json", false, "print one JSON record a line")
	cmd.AddCommand(newAuditInitCmd(g))
	return cmd
}

// newAuditInitCmd is `toolmesh audit init`, which creates the audit stream.
func newAuditInitCmd(g *globals) *cobra.Command {
	var lim audit.Limits
	cmd := usage.Command("init", "Create the append-only audit stream ("+audit.StreamName+") if it is not there",
		func(cmd *cobra.Command) error {
			ctx := cmd.Context()
			js, closeNC, err := g.auditJetStream(ctx)
			if err != nil {
				return err
			}
			defer closeNC()
			cfg, err := audit.EnsureStream(ctx, js, g.prefix, lim)
			if err != nil {
				return auditProblem(err)
			}
			fmt.Fprintf(g.stdout, "toolmesh audit: stream %s keeps %s (max age %s, max bytes %d; no deletes, no purges)\n",
				cfg.Name, cfg.Subjects[0], cfg.MaxAge, cfg.MaxBytes)
			return nil
		})
	cmd.Flags().DurationVar(&lim.MaxAge, "max-age", 0, "how long records are kept (0: until max-bytes)")
	cmd.Flags().Int64Var(&lim.MaxBytes, "max-bytes", 0, "how many bytes of records are kept, the oldest going first (0: no bound)")
	cmd.Flags().IntVar(&lim.Replicas, "replicas", 1, "replicas of the stream (3 on a 3-node JetStream cluster)")
	return cmd
}

// auditJetStream connects for the audit commands.
func (g *globals) auditJetStream(ctx context.Context) (jetstream.JetStream, func(), error) {
	nc, err := g.dial(ctx, "audit")
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, envelope.Problemf(envelope.CodeInternal, "jetstream: %v", err)
	}
	return js, nc.Close, nil
}

// auditProblem names what an audit read or setup failed on.
func auditProblem(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return envelope.NewProblem(envelope.CodeInvalidConfig, "there is no audit stream "+audit.StreamName).
			WithFix("Create it as the operator: toolmesh audit init --max-age 2160h; then run workers with --audit.", envelope.MaybeIncorrect)
	case errors.Is(err, nats.ErrPermissionViolation), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, context.DeadlineExceeded):
		return envelope.Problemf(envelope.CodeForbidden, "the audit stream is not reachable with these credentials: %v", err).
			WithFix("Connect as the operator's user that owns the audit stream (deploy/secure: tasks).", envelope.MaybeIncorrect)
	}
	return envelope.Problemf(envelope.CodeInternal, "audit: %v", err)
}

// auditLine is one record as `toolmesh audit` prints it: when, who,
// what kind, which tool on which worker, and how it ended; an argument's
// or answer's digest is cut to 12 hex digits.
func auditLine(r wire.AuditRecord) string {
	line := fmt.Sprintf("%s %s %s %s %s outcome=%s", r.Time.Format(time.RFC3339Nano), orDash(r.Identity), r.Kind, r.Tool, orDash(r.Worker), r.Outcome)
	if r.Ran != "" {
		line += " ran=" + r.Ran
	}
	if r.ArgsSHA256 != "" {
		line += fmt.Sprintf(" args=%.12s", r.ArgsSHA256)
	}
	if r.QuestionID != "" {
		line += " question=" + r.QuestionID
	}
	if r.AnswerSHA256 != "" {
		line += fmt.Sprintf(" answer=%.12s", r.AnswerSHA256)
	}
	return line + " call=" + r.CallID
}

// orDash is s, or "-" when it is empty (a single-account mesh has no identities).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// auditConfig is where a command's worker sends its audit records when
// --audit is on: on nc under the mesh's prefix, naming the pool and host.
func auditConfig(g *globals, pool, toolPrefix string) workermw.AuditConfig {
	host, _ := os.Hostname()
	if pool != "" {
		host = pool + "@" + host
	}
	return workermw.AuditConfig{Prefix: g.prefix, Worker: host, ToolPrefix: toolPrefix, Logger: g.log}
}
