package worker

import (
	"encoding/json"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/workercall"
)

// observeAnswer tells Config.OnAnswer of an answer that settles a question.
func (c *call) observeAnswer(questionID string, approval bool, a Answer) {
	f := c.w.cfg.OnAnswer
	if f == nil {
		return
	}
	ans := workercall.Answered{Tool: c.tool.spec.Name, CallID: c.key.id, Identity: c.key.identity, QuestionID: questionID,
		Action: a.Action, Approval: approval, Content: a.Content}
	if approval && a.Action == envelope.ActionAccept {
		var v struct{ Approve bool }
		ans.Approved = json.Unmarshal(a.Content, &v) == nil && v.Approve
	}
	f(c.ctx, ans)
}
