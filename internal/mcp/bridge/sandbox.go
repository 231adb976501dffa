package bridge

import (
	"context"
	"errors"
	"os/exec"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/internal/sandbox/report"
)

// prepareSandbox resolves the entry's sandbox for its server command, or
// refuses the entry when this host cannot enforce it (unless
// AllowUnconfined, which is logged as a warning).
func (b *Bridge) prepareSandbox(ctx context.Context) error {
	box, sc := b.cfg.Entry.Sandbox, b.cfg.Entry.Server
	if box == nil || sc.Command == "" {
		return nil
	}
	support := b.cfg.Sandbox
	if support == nil {
		s := sandbox.Probe(ctx)
		support = &s
	}
	if err := support.Check(box); err != nil {
		if b.cfg.AllowUnconfined {
			b.log.Warn("sandbox cannot be enforced here; running the MCP server UNCONFINED because the operator allowed it", "reason", err.Error())
			return nil
		}
		return envelope.Problemf(envelope.CodeInvalidConfig, "mcp namespace %s: field sandbox: this host cannot enforce it: %v", b.cfg.Entry.Namespace, err)
	}
	path, err := exec.LookPath(sc.Command)
	if err != nil {
		return envelope.Problemf(envelope.CodeInvalidConfig, "mcp namespace %s: field binding.mcp.command: %v", b.cfg.Entry.Namespace, err)
	}
	plan, err := sandbox.Prepare(box, path, support.Helper)
	if err != nil {
		return envelope.Problemf(envelope.CodeInvalidConfig, "mcp namespace %s: field %v", b.cfg.Entry.Namespace, err)
	}
	b.plan = plan
	return nil
}

// sandboxed turns a tool error of a sandboxed server that reports a
// refusal of its sandbox ("EACCES: permission denied, open '/etc/x'")
// into that refusal's Problem; anything else passes unchanged.
func (b *Bridge) sandboxed(res any, err error) (any, error) {
	var p *envelope.Problem
	if b.plan == nil || !errors.As(err, &p) || p.Code != envelope.CodeToolFailed {
		return res, err
	}
	d := sandbox.Classify(b.plan.Policy, nil, p.Detail)
	if d == nil {
		return res, err
	}
	return nil, report.Problem(b.cfg.Entry.Namespace, d).WithExtension("mcp_content", p.Extensions["mcp_content"])
}
