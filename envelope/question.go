package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// The event types of asking (docs/protocol.md §23): a worker sends them only
// on calls whose caller declared that it answers questions.
const (
	// EventQuestion asks the caller for input mid-call.
	EventQuestion EventType = "question"
	// EventAnswered records how the worker settled a question.
	EventAnswered EventType = "answered"
)

// Answer actions, MCP's three elicitation actions.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Question is the body of a question or answered event. A question event
// carries its text in ToolEvent.Message and the rest here; an answered
// event only ID and Action.
type Question struct {
	// ID names the question within its call.
	ID string
	// Schema is the JSON Schema of the answer's content (question only).
	Schema json.RawMessage
	// WorkerID is where the answer goes (question only).
	WorkerID string
	// TimeoutMS is how long the worker waits for the answer (0: unstated).
	TimeoutMS int64
	// Approval is set on the worker's approval questions (§23.7).
	Approval *Approval
	// Sampling, on a sampling question (§23.11), is the request for a
	// model's completion: MCP's sampling/createMessage params, verbatim.
	Sampling json.RawMessage
	// Action is how the question was settled (answered only).
	Action string
}

// Approval names the tool whose run an approval question asks about, with
// the arguments it would run with.
type Approval struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
}

// appendQuestion writes the members of a question or answered event.
func (e ToolEvent) appendQuestion(b []byte) ([]byte, error) {
	q := e.Question
	if q == nil || q.ID == "" {
		return nil, fmt.Errorf("%s event: question_id is required", e.Type)
	}
	b = appendString(b, "question_id", q.ID)
	if e.Type == EventAnswered {
		if !wire.ValidAction(q.Action) {
			return nil, fmt.Errorf("answered event: action %q is not accept, decline or cancel", q.Action)
		}
		return appendString(b, "action", q.Action), nil
	}
	if len(q.Schema) == 0 || !wire.IsObject(q.Schema) {
		return nil, errors.New("question event: schema must be a JSON object")
	}
	b = appendString(b, "message", e.Message)
	b = append(append(b, `,"schema":`...), q.Schema...)
	b = appendString(b, "worker_id", q.WorkerID)
	if q.TimeoutMS > 0 {
		b = strconv.AppendInt(append(b, `,"timeout_ms":`...), q.TimeoutMS, 10)
	}
	if q.Approval != nil {
		enc, err := json.Marshal(q.Approval)
		if err != nil {
			return nil, fmt.Errorf("question event approval: %w", err)
		}
		b = append(append(b, `,"approval":`...), enc...)
	}
	if len(q.Sampling) > 0 {
		if !wire.IsObject(q.Sampling) || !wire.Valid(q.Sampling) {
			return nil, errors.New("question event: sampling must be a JSON object")
		}
		b = append(append(b, `,"sampling":`...), q.Sampling...)
	}
	return b, nil
}

// questionWrites reports whether a question or answered event's typed
// fields write member name.
func (e ToolEvent) questionWrites(name string) bool {
	if e.Type == EventAnswered {
		return name == "question_id" || name == "action"
	}
	switch name {
	case "question_id", "message", "schema", "worker_id":
		return true
	case "timeout_ms":
		return e.Question != nil && e.Question.TimeoutMS > 0
	case "approval":
		return e.Question != nil && e.Question.Approval != nil
	case "sampling":
		return e.Question != nil && len(e.Question.Sampling) > 0
	}
	return false
}

// parseQuestion reads a question or answered event's members, which the
// scanner left among the unknown ones.
func (ev *ToolEvent) parseQuestion(m *eventMembers) error {
	obj := "event " + string(ev.Type)
	raw := map[string][]byte{}
	for _, u := range m.unknown {
		raw[u.name] = u.value
	}
	q := &Question{}
	var err error
	if q.ID, err = optString(obj, "question_id", raw["question_id"]); err != nil {
		return err
	}
	if q.ID == "" {
		return fmt.Errorf("%s: field question_id is required", obj)
	}
	ev.Question = q
	if ev.Type == EventAnswered {
		if q.Action, err = optString(obj, "action", raw["action"]); err != nil {
			return err
		}
		if !wire.ValidAction(q.Action) {
			return fmt.Errorf("%s: field action: want accept, decline or cancel, got %q", obj, q.Action)
		}
		return nil
	}
	return ev.parseQuestionBody(obj, m, raw)
}

// parseQuestionBody reads a question's message, schema, worker, timeout
// and approval.
func (ev *ToolEvent) parseQuestionBody(obj string, m *eventMembers, raw map[string][]byte) error {
	q := ev.Question
	var err error
	if ev.Message, err = optString(obj, "message", m.message); err != nil {
		return err
	}
	if s := raw["schema"]; len(s) > 0 && wire.IsObject(s) {
		q.Schema = append(json.RawMessage(nil), s...)
	} else {
		return fmt.Errorf("%s: field schema is required and must be an object", obj)
	}
	if q.WorkerID, err = optString(obj, "worker_id", raw["worker_id"]); err != nil {
		return err
	}
	if t := raw["timeout_ms"]; t != nil && !wire.IsNull(t) {
		if q.TimeoutMS, err = strconv.ParseInt(string(t), 10, 64); err != nil || q.TimeoutMS < 0 {
			return fieldError(obj, "timeout_ms", errors.New("want a non-negative integer"))
		}
	}
	if a := raw["approval"]; a != nil && !wire.IsNull(a) {
		q.Approval = &Approval{}
		if err := json.Unmarshal(a, q.Approval); err != nil {
			return fieldError(obj, "approval", err)
		}
	}
	if sp := raw["sampling"]; sp != nil && !wire.IsNull(sp) {
		if !wire.IsObject(sp) {
			return fieldError(obj, "sampling", errors.New("want an object"))
		}
		q.Sampling = append(json.RawMessage(nil), sp...)
	}
	return nil
}
