package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/callsettings"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Client is the client side of durable tasks: it submits, follows,
// answers and cancels tasks through the task API a Service hosts under
// <prefix>.tasks (§22). It calls through the caller it was made from,
// whose connection, prefix, identity and options it shares.
type Client struct {
	c *caller.Caller
}

// NewClient returns the task client of c. It holds no resources of its
// own: the caller of the task API is c's (caller.Caller.Service), made on
// first use and closed with c.
func NewClient(c *caller.Caller) *Client { return &Client{c: c} }

// Unary makes a submitted task unary: only its terminal is recorded, and
// each attempt runs folded (caller.Folded), returning what a plain call
// returns. Without it a task is a stream task, every event recorded.
func Unary() caller.Option { return caller.Folded() }

// Submit submits tool with args as a durable task and returns its id as
// soon as the task service has recorded it; the task runs whether or not
// this process lives. Options: caller.WithIdempotencyKey (one task per
// key), caller.Idempotent (re-run on worker loss), caller.WithTimeout
// (the task's budget), Unary, caller.WithBearer.
func (c *Client) Submit(ctx context.Context, tool string, args any, opts ...caller.Option) (string, error) {
	rec, err := c.SubmitRecord(ctx, tool, args, opts...)
	return rec.TaskID, err
}

// SubmitRecord is Submit returning the whole task record (Deduplicated
// says an idempotency key found an existing task).
func (c *Client) SubmitRecord(ctx context.Context, tool string, args any, opts ...caller.Option) (Record, error) {
	return c.submit(ctx, tool, args, opts, false)
}

// Run submits a durable task and waits for its end in one round trip;
// the record carries the terminal event. The task outlives this call, but
// its id arrives only with the answer: use Submit when a process that may
// die must be able to find the task again.
func (c *Client) Run(ctx context.Context, tool string, args any, opts ...caller.Option) (Record, error) {
	return c.submit(ctx, tool, args, opts, true)
}

// submit calls the task API's submit tool; with wait it answers once the
// task has ended.
func (c *Client) submit(ctx context.Context, tool string, args any, opts []caller.Option, wait bool) (Record, error) {
	var rec Record
	o := c.c.Settings(opts...)
	m, err := submitArgs(tool, args, o, wait)
	if err != nil {
		return rec, err
	}
	// The bearer travels with the submit call itself: it becomes the
	// task's (§22.4).
	var callOpts []caller.Option
	if o.Bearer != "" {
		callOpts = append(callOpts, caller.WithBearer(o.Bearer))
	}
	// The submission is deduplicated by its key (or submit_id), so the
	// submit call is safe to repeat: with that key the task service starts
	// it without first having the server confirm a heartbeat naming it
	// (§8.2), one message and one round trip fewer per task.
	callOpts = append(callOpts, caller.WithIdempotencyKey(submissionKey(m)))
	// Submitted as submit.<tool>: the server lets the call through only
	// where this identity may submit that tool (§22.10).
	err = c.call(ctx, "submit."+tool, m, &rec, callOpts...)
	return rec, err
}

// submissionKey is what a submission is deduplicated by: its idempotency
// key, else its submit_id.
func submissionKey(m map[string]any) string {
	if k, ok := m["idempotency_key"].(string); ok {
		return k
	}
	id, _ := m["submit_id"].(string)
	return id
}

// submitArgs builds the args of the task service's submit tool.
func submitArgs(tool string, args any, o callsettings.Settings, wait bool) (map[string]any, error) {
	raw, err := wire.Args(args)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidInput, "args: %v", err)
	}
	m := map[string]any{"tool": tool, "args": raw}
	if o.Folded {
		m["mode"] = "unary"
	}
	if o.Timeout > 0 {
		m["timeout_ms"] = o.Timeout.Milliseconds()
	}
	if o.IdempotencyKey != "" {
		m["idempotency_key"] = o.IdempotencyKey
	}
	if o.Idempotent {
		m["idempotent"] = true
	}
	if o.IdempotencyKey == "" {
		// Dedupes this submission, so that call may repeat it.
		m["submit_id"] = ulid.Make().String()
	}
	if wait {
		m["wait"] = true
	}
	return m, nil
}

// Get returns a task's record, its terminal event included once it has
// ended. With wait it returns only once the task has ended (or ctx ends).
func (c *Client) Get(ctx context.Context, id string, wait bool) (Record, error) {
	var rec Record
	err := c.call(ctx, "get", map[string]any{"task_id": id, "wait": wait}, &rec)
	return rec, err
}

// Cancel cancels a task: a queued one never runs; a running one's
// handler (and a CLI tool's processes) is cancelled wherever it runs.
func (c *Client) Cancel(ctx context.Context, id string) (Record, error) {
	var rec Record
	err := c.call(ctx, "cancel", map[string]any{"task_id": id}, &rec)
	return rec, err
}

// Answer answers the question a task of this identity waits on (state
// input_required, docs/protocol.md §23.9), from any process: the task
// service hands the answer to the worker that asked. questionID ""
// answers the open question. It returns the task's record after the
// answer; an answer the question's schema refuses is invalid_input.
func (c *Client) Answer(ctx context.Context, id, questionID string, a caller.Answer) (Record, error) {
	var rec Record
	args := map[string]any{"task_id": id, "action": a.Action}
	if questionID != "" {
		args["question_id"] = questionID
	}
	if a.Action == envelope.ActionAccept {
		args["content"] = a.Content
	}
	err := c.call(ctx, "answer", args, &rec)
	return rec, err
}

// List lists this identity's tasks, newest first; state filters ("" all).
func (c *Client) List(ctx context.Context, state string, limit int) ([]Record, error) {
	var out struct {
		Tasks []Record `json:"tasks"`
	}
	args := map[string]any{}
	if state != "" {
		args["state"] = state
	}
	if limit > 0 {
		args["limit"] = limit
	}
	err := c.call(ctx, "ls", args, &out)
	return out.Tasks, err
}

// call calls one tool of the task API and decodes its result into v.
// Every op may be repeated (submit carries a submit_id the task service
// dedupes; get, ls and watch read; cancel twice is cancel once), so a
// call lost with its connection, or lost with a task-service instance, or
// that no instance answered (one may be reconnecting after losing its
// server, §22.9) is tried again while such failures last no longer than
// the caller's PickupTimeout.
func (c *Client) call(ctx context.Context, op string, args any, v any, opts ...caller.Option) error {
	api, err := c.c.Service("tasks")
	if err != nil {
		return err
	}
	var failing time.Time
	pause := 50 * time.Millisecond
	for {
		resp, err := api.Call(ctx, op, args, opts...)
		if !repeatable(err) {
			if err != nil {
				return err
			}
			return json.Unmarshal(resp.Data, v)
		}
		if failing.IsZero() {
			failing = time.Now()
		}
		if time.Since(failing)+pause > c.c.Settings().PickupTimeout {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// repeatable reports whether a task API call failed in a way that asking
// again may cure: no instance answered, or the call was lost in transit.
func repeatable(err error) bool {
	var p *envelope.Problem
	if !errors.As(err, &p) {
		return false
	}
	switch p.Code {
	case envelope.CodeToolNotFound, envelope.CodeConnectionLost, envelope.CodeWorkerLost:
		return true
	}
	return false
}
