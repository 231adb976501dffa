package tasks

import (
	"encoding/json"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
)

// Task states (docs/protocol.md §22.3).
const (
	Queued        = "queued"
	Running       = "running"
	InputRequired = "input_required"
	Succeeded     = "succeeded"
	Failed        = "failed"
	Cancelled     = "cancelled"
)

// terminal reports whether a task state is final.
func terminal(state string) bool {
	return state == Succeeded || state == Failed || state == Cancelled
}

// Record is what the task service says about one task (§22.5).
type Record struct {
	TaskID       string          `json:"task_id"`
	Tool         string          `json:"tool"`
	State        string          `json:"state"`
	Mode         string          `json:"mode,omitempty"`
	Attempt      int             `json:"attempt"`
	Created      string          `json:"created,omitempty"`
	Updated      string          `json:"updated,omitempty"`
	Deadline     string          `json:"deadline,omitempty"`
	Idempotent   bool            `json:"idempotent,omitempty"`
	Rerunnable   bool            `json:"rerunnable,omitempty"`
	WorkerID     string          `json:"worker_id,omitempty"`
	Events       int             `json:"events"`
	Code         string          `json:"code,omitempty"`
	Terminal     json.RawMessage `json:"terminal,omitempty"`
	TerminalSeq  uint64          `json:"terminal_seq,omitempty"`
	Deduplicated bool            `json:"deduplicated,omitempty"`
	// Waiting says, while the task is queued, why no attempt runs yet: no
	// worker hosts its tool, or its workers were too busy to take it.
	Waiting string `json:"waiting,omitempty"`
	// Question is the question event the task waits on while its state is
	// input_required (§23.9); see OpenQuestion.
	Question json.RawMessage `json:"question,omitempty"`
}

// OpenQuestion is the question a task in state input_required waits on
// (ok=false when it waits on none); answer it with Client.Answer.
func (r Record) OpenQuestion() (caller.Question, bool) {
	if len(r.Question) == 0 {
		return caller.Question{}, false
	}
	ev, err := envelope.ParseEvent(r.Question)
	if err != nil {
		return caller.Question{}, false
	}
	q, ok := caller.QuestionOf(ev)
	q.Tool = r.Tool
	return q, ok
}

// TerminalEvent decodes the record's terminal event (ok=false before the
// task has ended, or when the answer did not carry it).
func (r Record) TerminalEvent() (envelope.ToolEvent, bool) {
	if len(r.Terminal) == 0 {
		return envelope.ToolEvent{}, false
	}
	ev, err := envelope.ParseEvent(r.Terminal)
	return ev, err == nil
}

// Event is one event of a task as Attach delivers it: its number
// (1, 2, … across attempts), the attempt it belongs to, and the event.
type Event struct {
	N       int                `json:"n"`
	Attempt int                `json:"attempt"`
	Event   envelope.ToolEvent `json:"event"`
}
