package worker

import (
	"encoding/json"

	"github.com/toolmesh/toolmesh/envelope"
)

// Answered is an answer that settled a question of a call, as
// Config.OnAnswer hears of it. Only the call's own identity can answer
// (docs/protocol.md §23), so Identity is who answered as well as who
// called.
type Answered struct {
	Tool       string
	CallID     string
	Identity   string
	QuestionID string
	// Action is envelope.ActionAccept, ActionDecline or ActionCancel.
	Action string
	// Approval is true for the worker's own approval question
	// (Config.Approvals); Approved then says whether the caller approved.
	Approval bool
	Approved bool
	// Content is the accepted answer (nil otherwise): the caller's data,
	// to digest rather than to keep.
	Content json.RawMessage
}

// observeAnswer tells Config.OnAnswer of an answer that settles a question.
func (c *call) observeAnswer(questionID string, approval bool, a Answer) {
	f := c.w.cfg.OnAnswer
	if f == nil {
		return
	}
	ans := Answered{Tool: c.tool.spec.Name, CallID: c.key.id, Identity: c.key.identity, QuestionID: questionID,
		Action: a.Action, Approval: approval, Content: a.Content}
	if approval && a.Action == envelope.ActionAccept {
		var v struct{ Approve bool }
		ans.Approved = json.Unmarshal(a.Content, &v) == nil && v.Approve
	}
	f(c.ctx, ans)
}
