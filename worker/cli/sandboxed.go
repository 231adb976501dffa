package cli

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/internal/sandbox/report"
)

// prepareSandbox resolves t's sandbox for its program, or refuses the
// tool when this host cannot enforce it — unless the operator allowed
// running it unconfined, which is then logged as a warning. A nil Plan
// means the tool runs unconfined.
func prepareSandbox(t fileTool, support *sandbox.Support, log *slog.Logger) (*sandbox.Plan, error) {
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
	path, err := exec.LookPath(t.Binding.Cmd)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "tool %s: field binding.cli.cmd: %v", t.Spec.Name, err)
	}
	plan, err := sandbox.Prepare(t.Sandbox, path, support.Helper)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "tool %s: field %v", t.Spec.Name, err)
	}
	return plan, nil
}

// sandboxProblem is the Problem of a confined program that failed because
// of its sandbox (nil when nothing points at the sandbox).
func (h *toolHandler) sandboxProblem(waitErr error, code int, stderr *tailBuffer) *envelope.Problem {
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
	return report.Problem(h.spec.Name, d).WithExtension("program_exit_code", code).WithExtension("stderr_tail", tail)
}
