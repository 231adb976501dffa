package caller

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/toolmesh/toolmesh/envelope"
)

// Task states (docs/protocol.md §22.3).
const (
	TaskQueued        = "queued"
	TaskRunning       = "running"
	TaskInputRequired = "input_required"
	TaskSucceeded     = "succeeded"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// TaskTerminal reports whether a task state is final.
func TaskTerminal(state string) bool {
	return state == TaskSucceeded || state == TaskFailed || state == TaskCancelled
}

// TaskRecord is what the task service says about one task (§22.5).
type TaskRecord struct {
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
// (ok=false when it waits on none); answer it with Caller.AnswerTask.
func (r TaskRecord) OpenQuestion() (Question, bool) {
	if len(r.Question) == 0 {
		return Question{}, false
	}
	ev, err := envelope.ParseEvent(r.Question)
	if err != nil {
		return Question{}, false
	}
	q, ok := QuestionOf(ev)
	q.Tool = r.Tool
	return q, ok
}

// TerminalEvent decodes the record's terminal event (ok=false before the
// task has ended, or when the answer did not carry it).
func (r TaskRecord) TerminalEvent() (envelope.ToolEvent, bool) {
	if len(r.Terminal) == 0 {
		return envelope.ToolEvent{}, false
	}
	ev, err := envelope.ParseEvent(r.Terminal)
	return ev, err == nil
}

// TaskEvent is one event of a task as Attach delivers it: its number
// (1, 2, … across attempts), the attempt it belongs to, and the event.
type TaskEvent struct {
	N       int                `json:"n"`
	Attempt int                `json:"attempt"`
	Event   envelope.ToolEvent `json:"event"`
}

// taskClient is the Caller the task API is called through: the task
// service is a worker under the prefix <p>.tasks (§22).
type taskClient struct {
	once sync.Once
	c    *Caller
	err  error
}

// tasksCaller returns (making it on first use) the caller of the task API.
func (c *Caller) tasksCaller() (*Caller, error) {
	c.tasks.once.Do(func() {
		cfg := c.cfg
		cfg.ID, cfg.Prefix, cfg.Middleware = "", c.subjects.Root()+".tasks", nil
		cfg.Retries = NoRetries
		c.tasks.c, c.tasks.err = New(c.nc, cfg)
	})
	return c.tasks.c, c.tasks.err
}

// WithTaskMode sets a task's mode (Submit): "stream" (the default) records
// every event of the call, "unary" only its terminal.
func WithTaskMode(mode string) Option { return func(o *callOptions) { o.taskMode = mode } }

// Folded makes a Stream call return what a unary call of the tool
// returns (docs/protocol.md §4.1 fold): the worker still sends the start
// event and questions, but the handler runs as for a unary call, so a
// tool that streams its output (a CLI tool's lines or NDJSON items)
// gathers it into its result, and progress and deltas are not sent. The
// task service runs the attempts of a unary task so.
func Folded() Option { return func(o *callOptions) { o.fold = true } }

// submitArgs builds the args of the task service's submit tool.
func submitArgs(tool string, args any, o callOptions, wait bool) (map[string]any, error) {
	raw, err := encodeArgs(args)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidInput, "args: %v", err)
	}
	m := map[string]any{"tool": tool, "args": raw}
	if o.taskMode != "" {
		m["mode"] = o.taskMode
	}
	if o.timeout > 0 {
		m["timeout_ms"] = o.timeout.Milliseconds()
	}
	if o.idempotencyKey != "" {
		m["idempotency_key"] = o.idempotencyKey
	}
	if o.idempotent {
		m["idempotent"] = true
	}
	if o.idempotencyKey == "" {
		// Dedupes this submission, so that taskCall may repeat it.
		m["submit_id"] = ulid.Make().String()
	}
	if wait {
		m["wait"] = true
	}
	return m, nil
}

// taskCall calls one tool of the task API and decodes its result into v.
// Every op may be repeated (submit carries a submit_id the task service
// dedupes; get, ls and watch read; cancel twice is cancel once), so a
// call lost with its connection, or lost with a task-service instance, or
// that no instance answered (one may be reconnecting after losing its
// server, §22.9) is tried again while such failures last no longer than
// PickupTimeout.
func (c *Caller) taskCall(ctx context.Context, op string, args any, v any, opts ...Option) error {
	tc, err := c.tasksCaller()
	if err != nil {
		return err
	}
	var failing time.Time
	pause := 50 * time.Millisecond
	for {
		resp, err := tc.Call(ctx, op, args, opts...)
		if !repeatable(err) {
			if err != nil {
				return err
			}
			return json.Unmarshal(resp.Data, v)
		}
		if failing.IsZero() {
			failing = time.Now()
		}
		if time.Since(failing)+pause > c.cfg.PickupTimeout {
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

// taskOptions keeps of a call's options what travels with the submit call
// itself: the bearer (it becomes the task's, §22.4).
func taskOptions(o callOptions) []Option {
	if o.bearer == "" {
		return nil
	}
	return []Option{WithBearer(o.bearer)}
}

// Submit submits tool with args as a durable task and returns its id as
// soon as the task service has recorded it; the task runs whether or not
// this process lives. Options: WithIdempotencyKey (one task per key),
// Idempotent (re-run on worker loss), WithTimeout (the task's budget),
// WithTaskMode, WithBearer.
func (c *Caller) Submit(ctx context.Context, tool string, args any, opts ...Option) (string, error) {
	rec, err := c.SubmitRecord(ctx, tool, args, opts...)
	return rec.TaskID, err
}

// SubmitRecord is Submit returning the whole task record (Deduplicated
// says an idempotency key found an existing task).
func (c *Caller) SubmitRecord(ctx context.Context, tool string, args any, opts ...Option) (TaskRecord, error) {
	var rec TaskRecord
	o := c.options(opts)
	m, err := submitArgs(tool, args, o, false)
	if err != nil {
		return rec, err
	}
	err = c.taskCall(ctx, "submit", m, &rec, taskOptions(o)...)
	return rec, err
}

// RunTask submits a durable task and waits for its end in one round trip;
// the record carries the terminal event. The task outlives this call, but
// its id arrives only with the answer: use Submit when a process that may
// die must be able to find the task again.
func (c *Caller) RunTask(ctx context.Context, tool string, args any, opts ...Option) (TaskRecord, error) {
	var rec TaskRecord
	o := c.options(opts)
	m, err := submitArgs(tool, args, o, true)
	if err != nil {
		return rec, err
	}
	err = c.taskCall(ctx, "submit", m, &rec, taskOptions(o)...)
	return rec, err
}

// Task returns a task's record, its terminal event included once it has
// ended. With wait it returns only once the task has ended (or ctx ends).
func (c *Caller) Task(ctx context.Context, id string, wait bool) (TaskRecord, error) {
	var rec TaskRecord
	err := c.taskCall(ctx, "get", map[string]any{"task_id": id, "wait": wait}, &rec)
	return rec, err
}

// CancelTask cancels a task: a queued one never runs; a running one's
// handler (and a CLI tool's processes) is cancelled wherever it runs.
func (c *Caller) CancelTask(ctx context.Context, id string) (TaskRecord, error) {
	var rec TaskRecord
	err := c.taskCall(ctx, "cancel", map[string]any{"task_id": id}, &rec)
	return rec, err
}

// AnswerTask answers the question a task of this identity waits on
// (state input_required, docs/protocol.md §23.9), from any process: the
// task service hands the answer to the worker that asked. questionID ""
// answers the open question. It returns the task's record after the
// answer; an answer the question's schema refuses is invalid_input.
func (c *Caller) AnswerTask(ctx context.Context, id, questionID string, a Answer) (TaskRecord, error) {
	var rec TaskRecord
	args := map[string]any{"task_id": id, "action": a.Action}
	if questionID != "" {
		args["question_id"] = questionID
	}
	if a.Action == envelope.ActionAccept {
		args["content"] = a.Content
	}
	err := c.taskCall(ctx, "answer", args, &rec)
	return rec, err
}

// Tasks lists this identity's tasks, newest first; state filters ("" all).
func (c *Caller) Tasks(ctx context.Context, state string, limit int) ([]TaskRecord, error) {
	var out struct {
		Tasks []TaskRecord `json:"tasks"`
	}
	args := map[string]any{}
	if state != "" {
		args["state"] = state
	}
	if limit > 0 {
		args["limit"] = limit
	}
	err := c.taskCall(ctx, "ls", args, &out)
	return out.Tasks, err
}

// TaskStream is an attached task: every event from the first, in order,
// then the live ones, then the final record.
type TaskStream struct {
	s      *Stream
	record TaskRecord
	done   bool
}

// Attach follows a task by id from its first event (from > 1 starts later).
func (c *Caller) Attach(ctx context.Context, id string, from int) (*TaskStream, error) {
	tc, err := c.tasksCaller()
	if err != nil {
		return nil, err
	}
	args := map[string]any{"task_id": id}
	if from > 1 {
		args["from"] = from
	}
	s, err := tc.Stream(ctx, "watch", args)
	if err != nil {
		return nil, err
	}
	return &TaskStream{s: s}, nil
}

// Next returns the task's next event; io.EOF after the task's terminal
// event has been returned (Record then holds the final record). A failure
// of the attachment itself (task_not_found, task_expired, …) is returned
// as a *envelope.Problem.
func (t *TaskStream) Next() (TaskEvent, error) {
	for !t.done {
		ev, err := t.s.Next()
		if err != nil {
			return TaskEvent{}, err
		}
		switch ev.Type {
		case envelope.EventDelta:
			var te TaskEvent
			if err := json.Unmarshal(ev.Data, &te); err != nil {
				return TaskEvent{}, envelope.Problemf(envelope.CodeInternal, "task event: %v", err)
			}
			return te, nil
		case envelope.EventResult:
			t.done = true
			if err := json.Unmarshal(ev.Data, &t.record); err != nil {
				return TaskEvent{}, envelope.Problemf(envelope.CodeInternal, "task record: %v", err)
			}
		case envelope.EventError:
			t.done = true
			return TaskEvent{}, ev.Problem()
		}
	}
	return TaskEvent{}, io.EOF
}

// Events ranges over the task's events up to and including its terminal.
func (t *TaskStream) Events() iter.Seq2[TaskEvent, error] {
	return func(yield func(TaskEvent, error) bool) {
		for {
			ev, err := t.Next()
			if errors.Is(err, io.EOF) || !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// Record is the task's final record, once Next has returned io.EOF.
func (t *TaskStream) Record() TaskRecord { return t.record }

// Close detaches (the task goes on).
func (t *TaskStream) Close() error { return t.s.Close() }
