package tasks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// asking reports whether ev belongs to a question (§23.2): recorded in
// every mode, since the task's owner answers from the log.
func asking(ev envelope.ToolEvent) bool {
	return ev.Type == envelope.EventQuestion || ev.Type == envelope.EventAnswered
}

// askState moves the task between running and input_required as its
// attempt asks and its questions are settled (§23.9).
func (s *Service) askState(ctx context.Context, r *attemptRun, ev envelope.ToolEvent) error {
	if !asking(ev) {
		return nil
	}
	rec := r.q.record(Running, r.attempt, r.events)
	rec.WorkerID = r.worker
	if ev.Type == envelope.EventQuestion {
		data, err := ev.AppendJSON(nil)
		if err != nil {
			return err
		}
		rec.State, rec.Question = InputRequired, data
	}
	r.mu.Lock()
	// From here the task reads input_required or running as its questions
	// go: a unary attempt's running mark, due runningGrace after its
	// start, must not come after a question and overwrite input_required
	// (the question could then not be answered).
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	err := s.appendELocked(ctx, r, &entry{Kind: kindTask, Record: rec}, "")
	if err == nil {
		r.running = true
	}
	r.mu.Unlock()
	if err == nil {
		s.notify(r.q.Owner, &rec, noticeChanged)
	}
	return err
}

// answerReq is the answer tool's args (§23.9).
type answerReq struct {
	TaskID     string          `json:"task_id"`
	QuestionID string          `json:"question_id"`
	Action     string          `json:"action"`
	Content    json.RawMessage `json:"content,omitempty"`
}

// answer answers the open question of one of the caller's own tasks: the
// instance running the task's attempt sends it to the worker that asked.
func (s *Service) answer(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	var a answerReq
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	owner := ownerKey(req.Identity)
	rec, prob := s.lookup(ctx, owner, a.TaskID, false)
	if prob != nil {
		return nil, prob
	}
	q, ok := rec.OpenQuestion()
	if rec.State != InputRequired || !ok {
		return nil, envelope.Problemf(envelope.CodeInvalidInput, "task %s is %s: it asks no question now", a.TaskID, rec.State).
			WithExtension("pointer", "/task_id")
	}
	if a.QuestionID == "" {
		a.QuestionID = q.ID
	}
	if err := s.relayAnswer(ctx, a); err != nil {
		return nil, err
	}
	rec, prob = s.lookup(ctx, owner, a.TaskID, false)
	if prob != nil {
		return nil, prob
	}
	return rec, nil
}

// relayAnswer hands an answer to the instance running the task and
// returns its verdict.
func (s *Service) relayAnswer(ctx context.Context, a answerReq) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := s.nc.RequestWithContext(rctx, s.names.answerSubject(a.TaskID), data)
	if err != nil {
		return envelope.Problemf(envelope.CodeOverloaded, "the instance running task %s did not take the answer (%v); answer again", a.TaskID, err).WithRetryAfter(1)
	}
	if len(m.Data) == 0 {
		return nil
	}
	ev, err := envelope.ParseEvent(m.Data)
	if err != nil {
		return err
	}
	if p := ev.Problem(); p != nil {
		return p
	}
	return nil
}

// onAnswer takes an answer for a task whose attempt runs here and sends
// it to the worker (caller.Stream.Answer checks it against the question's
// schema). Other instances stay silent.
func (s *Service) onAnswer(m *nats.Msg) {
	var a answerReq
	if json.Unmarshal(m.Data, &a) != nil {
		return
	}
	s.mu.Lock()
	r := s.running[a.TaskID]
	var st *caller.Stream
	if r != nil {
		st = r.st
	}
	s.mu.Unlock()
	if st == nil {
		return
	}
	var reply []byte
	if err := st.Answer(a.QuestionID, caller.Answer{Action: a.Action, Content: a.Content}); err != nil {
		reply, _ = envelope.ErrorEvent(asProblem(err)).AppendJSON(nil)
	}
	_ = m.Respond(reply)
}
