package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/tasks"
)

// This file is the gateway's only use of the durable task API (the task
// service's client, docs/protocol.md §22.4): the MCP tasks extension
// (tasks.go) is served by these calls and the records they return.

// taskRecord is what the task service says about one task.
type taskRecord = tasks.Record

// The durable states the MCP task statuses are read from (§22.3).
const (
	durableInputRequired = tasks.InputRequired
	durableSucceeded     = tasks.Succeeded
	durableCancelled     = tasks.Cancelled
)

// durableTerminal reports whether a durable state is final: succeeded,
// failed or cancelled (docs/protocol.md §22.3).
func durableTerminal(state string) bool {
	return state == durableSucceeded || state == tasks.Failed || state == durableCancelled
}

// durable is the task API as the gateway's identity calls it: every task
// belongs to that identity (§22.1), and the task service finds no other.
type durable struct{ c *tasks.Client }

// durableOf is the task API on c, the caller of the gateway's identity.
func durableOf(c *caller.Caller) durable { return durable{tasks.NewClient(c)} }

// submit records a unary task of tool (its result is what a plain call
// returns) with the client's bearer, if it presented one.
func (d durable) submit(ctx context.Context, tool string, args json.RawMessage, bearer string) (taskRecord, error) {
	opts := []caller.Option{tasks.Unary()}
	if bearer != "" {
		opts = append(opts, caller.WithBearer(bearer))
	}
	return d.c.SubmitRecord(ctx, tool, args, opts...)
}

// get reads a task's record, its terminal event included once it ended.
func (d durable) get(ctx context.Context, id string) (taskRecord, error) {
	return d.c.Get(ctx, id, false)
}

// cancel cancels a task (one already ended stays as it is).
func (d durable) cancel(ctx context.Context, id string) error {
	_, err := d.c.Cancel(ctx, id)
	return err
}

// answer answers the question questionID of a task in input_required.
func (d durable) answer(ctx context.Context, id, questionID string, a caller.Answer) error {
	_, err := d.c.Answer(ctx, id, questionID, a)
	return err
}

// firstAsk follows a task until it asks its first question (asked) or
// ends (not asked).
func (d durable) firstAsk(ctx context.Context, id string) (q caller.Question, asked bool, err error) {
	ts, err := d.c.Attach(ctx, id, 1)
	if err != nil {
		return q, false, err
	}
	defer ts.Close()
	for {
		ev, err := ts.Next()
		if errors.Is(err, io.EOF) {
			return q, false, nil
		}
		if err != nil {
			return q, false, err
		}
		if q, ok := caller.QuestionOf(ev.Event); ok {
			return q, true, nil
		}
	}
}

// openQuestion is the question a task in input_required waits on.
func openQuestion(rec taskRecord) (caller.Question, bool) { return rec.OpenQuestion() }
