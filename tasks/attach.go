package tasks

import (
	"context"
	"encoding/json"
	"io"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
)

// Stream is an attached task: every event from the first, in order,
// then the live ones, then the final record.
type Stream struct {
	s      *caller.Stream
	record Record
	done   bool
}

// Attach follows a task by id from its first event (from > 1 starts later).
func (c *Client) Attach(ctx context.Context, id string, from int) (*Stream, error) {
	api, err := c.c.Service("tasks")
	if err != nil {
		return nil, err
	}
	args := map[string]any{"task_id": id}
	if from > 1 {
		args["from"] = from
	}
	s, err := api.Stream(ctx, "watch", args)
	if err != nil {
		return nil, err
	}
	return &Stream{s: s}, nil
}

// Next returns the task's next event; io.EOF after the task's terminal
// event has been returned (Record then holds the final record). A failure
// of the attachment itself (task_not_found, task_expired, …) is returned
// as a *envelope.Problem.
func (t *Stream) Next() (Event, error) {
	for !t.done {
		ev, err := t.s.Next()
		if err != nil {
			return Event{}, err
		}
		switch ev.Type {
		case envelope.EventDelta:
			var te Event
			if err := json.Unmarshal(ev.Data, &te); err != nil {
				return Event{}, envelope.Problemf(envelope.CodeInternal, "task event: %v", err)
			}
			return te, nil
		case envelope.EventResult:
			t.done = true
			if err := json.Unmarshal(ev.Data, &t.record); err != nil {
				return Event{}, envelope.Problemf(envelope.CodeInternal, "task record: %v", err)
			}
		case envelope.EventError:
			t.done = true
			return Event{}, ev.Problem()
		}
	}
	return Event{}, io.EOF
}

// Record is the task's final record, once Next has returned io.EOF.
func (t *Stream) Record() Record { return t.record }

// Close detaches (the task goes on).
func (t *Stream) Close() error { return t.s.Close() }
