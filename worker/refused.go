package worker

import (
	"context"

	"github.com/toolmesh/toolmesh/envelope"
)

// observeRefused tells Config.OnRefused of a call that ended with p
// before its handler and middleware saw it. Only then is the call's
// body read again, for its args: a worker with no hook pays nothing.
func (c *call) observeRefused(ctx context.Context, p *envelope.Problem) {
	f := c.w.cfg.OnRefused
	if f == nil {
		return
	}
	req := &Request{Tool: c.toolCalled(), CallID: c.key.id, Identity: c.key.identity,
		Deadline: c.deadline, Streaming: c.stream && !c.fold, Spec: &c.tool.spec}
	if body, err := parseCallBody(c.body); err == nil {
		req.Args = body.Args
	}
	f(ctx, req, c.redactor().Problem(p.WithRan(envelope.RanNo)))
}
