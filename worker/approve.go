package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"path"

	"github.com/toolmesh/toolmesh/envelope"
)

// Approvals is a worker's approval policy (docs/protocol.md §23.7): the
// worker asks the caller to approve every call of a matching tool before
// its handler runs, and runs it only when approved. The caller cannot
// skip it; only an answer from the call's own identity settles it.
type Approvals struct {
	// Tools are path.Match patterns over whole tool names ("fs.*" matches
	// "fs.delete").
	Tools []string
	// Destructive requires approval for every tool that is not read-only
	// and whose destructive hint is set or left at MCP's default (true).
	Destructive bool
}

// approvalSchema is the answer to an approval question.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve"}},"required":["approve"]}`)

// check refuses a malformed pattern.
func (a Approvals) check() error {
	for _, p := range a.Tools {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("approvals: pattern %q: %w", p, err)
		}
	}
	return nil
}

// requires reports whether calls of spec need approval.
func (a Approvals) requires(spec envelope.ToolSpec) bool {
	if a.Destructive && !spec.Annotations.IsReadOnly() && spec.Annotations.IsDestructive() {
		return true
	}
	for _, p := range a.Tools {
		if ok, _ := path.Match(p, spec.Name); ok {
			return true
		}
	}
	return false
}

// approve asks the caller to approve this call and returns nil only when
// it did; any other outcome is the call's terminal Problem and the
// handler never runs.
func (c *call) approve(ctx context.Context, args json.RawMessage) *envelope.Problem {
	name := c.tool.spec.Name
	q := Question{Message: fmt.Sprintf("Approve running %s?", name), Schema: approvalSchema}
	a, err := c.ask(ctx, q, &envelope.Approval{Tool: name, Args: args})
	if err != nil {
		if ctx.Err() != nil {
			return c.contextProblem(ctx)
		}
		return c.w.problems.Rebase(envelope.AsProblem(err, envelope.CodeInternal))
	}
	switch a.Action {
	case envelope.ActionCancel:
		return c.w.problems.New(envelope.CodeCancelled, fmt.Sprintf("the caller dismissed the approval of %s; it did not run", name))
	case envelope.ActionAccept:
		var v struct{ Approve bool }
		if json.Unmarshal(a.Content, &v) == nil && v.Approve {
			return nil
		}
	}
	return c.w.problems.New(envelope.CodeDeclined, fmt.Sprintf("the caller did not approve running %s; it did not run", name))
}
