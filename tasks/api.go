package tasks

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/workercall"
	"github.com/toolmesh/toolmesh/worker"
)

// apiSpecs are the task API's tools (§22.4) and their input schemas.
func apiSpecs() []envelope.ToolSpec {
	return []envelope.ToolSpec{
		{Name: "submit", Description: "Submit a durable call of a tool; called as submit.<tool>, answers the task record.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"tool":{"type":"string"},"args":{"type":"object"},"mode":{"enum":["unary","stream"]},"timeout_ms":{"type":"integer","minimum":1},"idempotency_key":{"type":"string","maxLength":256},"idempotent":{"type":"boolean"},"submit_id":{"type":"string","maxLength":128},"wait":{"type":"boolean"}},"required":["tool","args"]}`)},
		{Name: "watch", Streaming: true, Annotations: readOnly(), Description: "Every event of a task from the first, in order, then live.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"string"},"from":{"type":"integer","minimum":1}},"required":["task_id"]}`)},
		{Name: "get", Annotations: readOnly(), Description: "A task's record, its terminal included once ended.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"string"},"wait":{"type":"boolean"}},"required":["task_id"]}`)},
		{Name: "answer", Description: "Answer the open question of a task waiting for input (state input_required).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"string"},"question_id":{"type":"string"},"action":{"enum":["accept","decline","cancel"]},"content":{"type":"object"}},"required":["task_id","action"]}`)},
		{Name: "cancel", Description: "Cancel a task.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"string"}},"required":["task_id"]}`)},
		{Name: "ls", Annotations: readOnly(), Description: "The caller's own tasks, newest first.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"state":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":1000}}}`)},
	}
}

// readOnly annotates a task API tool that changes nothing.
func readOnly() *envelope.Annotations {
	yes := true
	return &envelope.Annotations{ReadOnly: &yes}
}

// startAPI starts the worker that hosts the task API under <p>.tasks.
func (s *Service) startAPI() error {
	w, err := worker.New(s.nc, worker.Config{Prefix: s.names.base, Name: "toolmesh-tasks",
		Description: "toolmesh task service (durable calls)", Logger: s.log, Limits: worker.Limits{MaxConcurrent: s.cfg.maxConcurrent}, Liveness: worker.Liveness{Heartbeat: s.cfg.Heartbeat},
		Middleware: s.cfg.Middleware, OnRefused: s.cfg.OnRefused})
	if err != nil {
		return err
	}
	s.api = w
	handlers := map[string]worker.Handler{"submit": submitFamily(s.submit), "watch": worker.HandlerFunc(s.watch),
		"get": worker.HandlerFunc(s.get), "cancel": worker.HandlerFunc(s.cancelTask), "ls": worker.HandlerFunc(s.list),
		"answer": worker.HandlerFunc(s.answer)}
	for _, spec := range apiSpecs() {
		if err := w.Register(spec, handlers[spec.Name]); err != nil {
			return err
		}
	}
	return nil
}

// submitFamily is the submit tool, which serves a family of names
// (workercall.Family): a task of a tool is submitted as submit.<tool>, on
// <p>.tasks.call.submit.<tool>, so the server's permission to publish that
// subject decides which tools a caller may submit, as its permission on
// <p>.call.<tool> decides which it may call. The service calls the tool
// itself, so without this a caller could run through it a tool it may
// not call.
type submitFamily worker.HandlerFunc

// Handle submits the task.
func (f submitFamily) Handle(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
	return f(ctx, req, emit)
}

// ServesFamily marks the submit tool as serving submit.<tool>.
func (submitFamily) ServesFamily(workercall.Key) {}

// submitReq is the submit tool's args.
type submitReq struct {
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Mode       string          `json:"mode"`
	TimeoutMS  int64           `json:"timeout_ms"`
	IdemKey    string          `json:"idempotency_key"`
	Idempotent bool            `json:"idempotent"`
	SubmitID   string          `json:"submit_id"`
	Wait       bool            `json:"wait"`
}

// submit records a task and queues its call (§22.6).
func (s *Service) submit(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	var a submitReq
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := envelope.ValidateToolName(a.Tool); err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidInput, "submit: %v", err).WithExtension("pointer", "/tool")
	}
	if req.Tool != "submit."+a.Tool {
		return nil, envelope.Problemf(envelope.CodeForbidden, "submit: a task of %s is submitted as submit.%s, the name the server's permissions let through; this call named %s", a.Tool, a.Tool, req.Tool).
			WithExtension("pointer", "/tool")
	}
	q := s.newQueued(req, a)
	if err := s.admit(&q); err != nil {
		return nil, err
	}
	// Charged before anything is written, so that a refusal leaves nothing
	// behind; a submission that makes no task is refunded.
	if err := s.charge(ctx, q.Owner, 1, int64(len(a.Args)), true); err != nil {
		s.forget(q.Owner, q.Tool, q.TaskID)
		return nil, err
	}
	var changed <-chan notice
	if a.Wait {
		// Waiting from before the task can run: its end cannot be missed,
		// and a task just queued need not be read before it has changed.
		var stop func()
		changed, stop = s.awaitChange(s.names.doneSubject(q.Owner, q.TaskID))
		defer stop()
	}
	id := q.TaskID
	rec, dup, err := s.recordQueued(ctx, &q, dedupeID(q.Owner, a))
	if err != nil || dup {
		s.forget(q.Owner, q.Tool, id)
		s.refund(q.Owner, a)
	}
	if err != nil {
		return nil, storeFull(err)
	}
	rec.Deduplicated = dup && a.IdemKey != "" // a repeated submit_id is the same submission
	if dup {
		if a.Wait {
			return s.waitEnded(ctx, q.Owner, rec.TaskID)
		}
		return rec, nil
	}
	if !a.Wait {
		return rec, nil
	}
	return s.waitLoop(ctx, q.Owner, q.TaskID, changed, true)
}

// refund takes back the charge of a submission that made no task.
func (s *Service) refund(owner string, a submitReq) {
	if !s.quotas() {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := s.charge(ctx, owner, -1, -int64(len(a.Args)), false); err != nil {
		s.log.Warn("task usage: a refund was lost; the owner's usage reads high until the retention passes", "err", err)
	}
}

// newQueued makes a new task's queued call.
func (s *Service) newQueued(req *worker.Request, a submitReq) queuedCall {
	now := time.Now()
	budget := s.cfg.maxTaskTimeout
	if a.TimeoutMS > 0 {
		budget = min(budget, time.Duration(a.TimeoutMS)*time.Millisecond)
	}
	mode := a.Mode
	if mode == "" {
		mode = "stream"
	}
	return queuedCall{TaskID: ulid.MustNew(ulid.Timestamp(now), rand.Reader).String(), Owner: ownerKey(req.Identity),
		Tool: a.Tool, Args: a.Args, Mode: mode, Bearer: req.Bearer, IdemKey: a.IdemKey, Idempotent: a.Idempotent,
		Created: now, Deadline: now.Add(budget)}
}

// recordQueued writes the task's submit entry, which is its record and its
// queue item at once; with an idempotency key (or a submit id), a task
// already submitted under it is answered instead (dup).
func (s *Service) recordQueued(ctx context.Context, q *queuedCall, msgID string) (rec Record, dup bool, err error) {
	r := q.record(Queued, 0, 0)
	e := &entry{Kind: kindTask, Record: r, Call: q}
	ack, err := s.appendEntry(ctx, s.names.queueSubject(q.Owner, q.TaskID, q.Tool), e, msgID, 0)
	if err != nil {
		return Record{}, false, err
	}
	if !ack.Duplicate {
		return r, false, nil
	}
	first, err := s.entryAt(ctx, ack.Sequence, "")
	if err != nil {
		return Record{}, false, err
	}
	if first == nil {
		return Record{}, false, envelope.NewProblem(envelope.CodeOverloaded,
			"the task first submitted under this key is gone; submit again").WithRetryAfter(1)
	}
	found, prob := s.lookup(ctx, q.Owner, first.TaskID, false)
	if prob != nil {
		return Record{}, false, prob
	}
	found.Deduplicated = true
	q.TaskID = found.TaskID
	return found, true, nil
}

// dedupeID is the JetStream message id a submission is deduplicated by
// (§22.6): its idempotency key's, else its submit id's (a repeated
// submission, not a second task), else none.
func dedupeID(owner string, a submitReq) string {
	switch {
	case a.IdemKey != "":
		sum := sha256.Sum256([]byte(a.IdemKey))
		return owner + "." + hex.EncodeToString(sum[:16])
	case a.SubmitID != "":
		sum := sha256.Sum256([]byte(a.SubmitID))
		return owner + ".s." + hex.EncodeToString(sum[:16])
	}
	return ""
}

// taskIDReq is the args of get, cancel and watch.
type taskIDReq struct {
	TaskID string `json:"task_id"`
	Wait   bool   `json:"wait"`
	From   int    `json:"from"`
}

// get answers a task's record (§22.4).
func (s *Service) get(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	var a taskIDReq
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	owner := ownerKey(req.Identity)
	if a.Wait {
		return s.waitEnded(ctx, owner, a.TaskID)
	}
	rec, prob := s.lookup(ctx, owner, a.TaskID, true)
	if prob != nil {
		return nil, prob
	}
	return rec, nil
}

// waitEnded answers a task's record once the task has ended.
func (s *Service) waitEnded(ctx context.Context, owner, id string) (any, error) {
	changed, stop := s.awaitChange(s.names.doneSubject(owner, id))
	defer stop()
	return s.waitLoop(ctx, owner, id, changed, false)
}

// waitLoop answers a task's record once it has ended: from the notice of
// its end, which carries the record, else read each time the task
// changes. pending says the task is known not to have ended, so the next
// read waits for a notice.
func (s *Service) waitLoop(ctx context.Context, owner, id string, changed <-chan notice, pending bool) (any, error) {
	for {
		if !pending {
			rec, prob := s.lookup(ctx, owner, id, true)
			if prob != nil {
				return nil, prob
			}
			if rec.TerminalSeq != 0 {
				return rec, nil
			}
		}
		select {
		case n := <-changed:
			if n.final {
				return json.RawMessage(n.record), nil // the final record, as it is
			}
			var rec Record
			pending = json.Unmarshal(n.record, &rec) == nil && rec.TaskID != "" && !terminal(rec.State)
		case <-ctx.Done():
			return nil, ctxProblem(ctx, ctx.Err())
		}
	}
}

// ctxProblem is the Problem of a wait its context ended.
func ctxProblem(ctx context.Context, err error) *envelope.Problem {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return envelope.NewProblem(envelope.CodeTimeout, "the wait's budget ran out; the task goes on")
	}
	return envelope.Problemf(envelope.CodeCancelled, "the wait ended (%v); the task goes on", err)
}
