package workercall

import "encoding/json"

// Answered is an answer that settled a question of a call, as a worker's
// Config.OnAnswer hears of it: workermw.AuditAnswers records it in the
// audit trail. Only the call's own identity can answer (docs/protocol.md
// §23), so Identity is who answered as well as who called.
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
