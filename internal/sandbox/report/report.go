package report

import (
	"fmt"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/sandbox"
)

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

// Problem is the registry Problem of a sandbox's refusal d of tool:
// its code by rule, the rule, how it was attributed, and the path,
// address or limit.
func Problem(tool string, d *sandbox.Denial) *envelope.Problem {
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

// Summary is what a tool's spec shows of its sandbox: counts,
// never paths (mcp/bridge shows bridged servers' the same way).
func Summary(p *sandbox.Policy) *envelope.SandboxSummary {
	l := p.Limits
	return &envelope.SandboxSummary{Confined: true, ReadPaths: len(p.Read), WritePaths: len(p.Write),
		Network: p.Network.NetworkText(),
		Limits:  envelope.SandboxLimits{CPUSeconds: l.CPUSeconds, MemoryMB: l.MemoryMB, Files: l.Files, Processes: l.Processes}}
}
