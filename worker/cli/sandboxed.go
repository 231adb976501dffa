package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/sandbox"
)

// prepareSandbox resolves t's sandbox for its program, or refuses the
// tool when this host cannot enforce it — unless the operator allowed
// running it unconfined, which is then logged as a warning. A nil Plan
// means the tool runs unconfined.
func prepareSandbox(t Tool, support *sandbox.Support, log *slog.Logger) (*sandbox.Plan, error) {
	if t.Sandbox == nil {
		return nil, nil
	}
	if support == nil {
		s := sandbox.Probe(context.Background())
		support = &s
	}
	if err := support.Check(t.Sandbox); err != nil {
		if t.AllowUnconfined {
			log.Warn("sandbox cannot be enforced here; running the tool UNCONFINED because the operator allowed it", "tool", t.Spec.Name, "reason", err.Error())
			return nil, nil
		}
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "tool %s: field sandbox: this host cannot enforce it: %v", t.Spec.Name, err).
			WithFix("Run the worker on Linux with Landlock and unprivileged user namespaces, or remove the tool's sandbox, or start the worker with --allow-unconfined to run sandboxed tools unconfined (loudly).", envelope.MaybeIncorrect)
	}
	path, err := exec.LookPath(t.Spec.Binding.CLI.Cmd)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "tool %s: field binding.cli.cmd: %v", t.Spec.Name, err)
	}
	plan, err := sandbox.Prepare(t.Sandbox, path, support.Helper)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "tool %s: field %v", t.Spec.Name, err)
	}
	return plan, nil
}

// sandboxCode maps a Denial's rule to its registry code.
func sandboxCode(rule string) envelope.Code {
	switch rule {
	case sandbox.RuleRead:
		return envelope.CodeSandboxReadDenied
	case sandbox.RuleWrite:
		return envelope.CodeSandboxWriteDenied
	case sandbox.RuleExec:
		return envelope.CodeSandboxExecDenied
	case sandbox.RuleNetwork:
		return envelope.CodeSandboxConnectDenied
	}
	return envelope.CodeSandboxLimit
}

// sandboxProblem is the Problem of a confined program that failed because
// of its sandbox (nil when nothing points at the sandbox).
func (h *Handler) sandboxProblem(waitErr error, code int, stderr *tailBuffer) *envelope.Problem {
	var ee *sandbox.ExitError
	if h.plan == nil || !errors.As(waitErr, &ee) {
		return nil
	}
	end := &ee.Exit
	tail := stderr.String()
	if msg, ok := sandbox.SetupFailure(end, tail); ok {
		return envelope.Problemf(envelope.CodeToolFailed, "tool %s: its sandbox could not be set up, so the program did not run: %s", h.spec.Name, msg).
			WithExtension("stderr_tail", tail)
	}
	evidence := tail
	if head := stderr.Head(); head != "" {
		evidence = head + "\n" + tail // the cause a runtime names first, beyond the tail
	}
	d := sandbox.Classify(h.plan.Policy, end, evidence)
	if d == nil {
		return nil
	}
	return SandboxProblem(h.spec.Name, d).WithExtension("program_exit_code", code).WithExtension("stderr_tail", tail)
}

// SandboxProblem is the registry Problem of a sandbox's refusal d of tool:
// its code by rule, the rule, how it was attributed, and the path,
// address or limit.
func SandboxProblem(tool string, d *sandbox.Denial) *envelope.Problem {
	p := envelope.Problemf(sandboxCode(d.Rule), "tool %s: %s", tool, denialText(d)).
		WithExtension("sandbox_rule", d.Rule).WithExtension("attribution", d.Attribution)
	for _, kv := range []struct{ name, value string }{{"path", d.Path}, {"address", d.Address}, {"limit", d.Limit}, {"evidence", d.Evidence}} {
		if kv.value != "" {
			p.WithExtension(kv.name, kv.value)
		}
	}
	if d.Limit != "" {
		p.WithExtension("limit_value", d.Value)
	}
	return p
}

// denialText says what the sandbox refused, in one sentence.
func denialText(d *sandbox.Denial) string {
	how := "as its stderr reports"
	switch d.Attribution {
	case sandbox.BySignal, sandbox.ByCPUTime:
		how = "the kernel stopped it"
	case sandbox.ByExit:
		how = "the sandbox helper could not exec it"
	}
	switch d.Rule {
	case sandbox.RuleLimit:
		return fmt.Sprintf("the program hit its sandbox limit %s=%d (%s)", d.Limit, d.Value, how)
	case sandbox.RuleNetwork:
		if d.Address != "" {
			return fmt.Sprintf("the sandbox refused a connection to %s (%s)", d.Address, how)
		}
		return fmt.Sprintf("the sandbox refused a network connection (%s)", how)
	}
	return fmt.Sprintf("the sandbox refused to let the program %s %s (%s)", d.Rule, d.Path, how)
}

// SandboxSummary is what a tool's spec shows of its sandbox: counts,
// never paths (mcp/bridge shows bridged servers' the same way).
func SandboxSummary(p *sandbox.Policy) *envelope.SandboxSummary {
	l := p.Limits
	return &envelope.SandboxSummary{Confined: true, ReadPaths: len(p.Read), WritePaths: len(p.Write),
		Network: p.Network.NetworkText(),
		Limits:  envelope.SandboxLimits{CPUSeconds: l.CPUSeconds, MemoryMB: l.MemoryMB, Files: l.Files, Processes: l.Processes}}
}
