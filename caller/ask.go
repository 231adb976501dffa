package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// maxOpenQuestions bounds the questions of one call waiting for an
// answer: a worker cannot grow a caller's memory with questions either.
const maxOpenQuestions = 64

// Question is one question a tool (or its worker's approval policy) asked
// this caller mid-call (docs/protocol.md §23).
type Question struct {
	// ID names the question within its call; answers name it.
	ID string
	// CallID and Tool name the call that asks.
	CallID, Tool string
	// Message is the text to show a person.
	Message string
	// Schema is the JSON Schema the answer's content must satisfy.
	Schema json.RawMessage
	// Timeout is how long the worker waits for the answer (0: unstated).
	Timeout time.Duration
	// Approval is set when the worker asks to approve running a tool.
	Approval *envelope.Approval
	// Sampling is set on a sampling question (docs/protocol.md §23.11):
	// MCP's sampling/createMessage params. An answerer that can ask a
	// model does; any other answers the form (Schema) as for any question.
	Sampling json.RawMessage

	workerID string
}

// Answer settles a question: Action is envelope.ActionAccept (Content
// holds the answer), envelope.ActionDecline or envelope.ActionCancel.
type Answer struct {
	Action  string
	Content json.RawMessage
}

// Accept is the answer v (any JSON-marshalable object).
func Accept(v any) (Answer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Answer{}, fmt.Errorf("answer: %w", err)
	}
	return Answer{Action: envelope.ActionAccept, Content: b}, nil
}

// Decline says no to a question.
func Decline() Answer { return Answer{Action: envelope.ActionDecline} }

// Dismiss leaves a question without choosing (MCP's cancel).
func Dismiss() Answer { return Answer{Action: envelope.ActionCancel} }

// AnswerFunc answers one question of a call; ctx ends when the call does.
// A *envelope.Problem error ends the call with that Problem (the worker is
// told to cancel it): input_required is how an answerer with nobody to ask
// says so (docs/protocol.md §23.5). Any other error is sent as a cancel
// (the question dismissed). An answer its question's schema refuses ends
// the call with invalid_input.
type AnswerFunc func(ctx context.Context, q Question) (Answer, error)

// OnQuestion declares that the call answers questions and answers each
// one with fn, on a goroutine of its own, while the call goes on being
// read. Without it (or Answering) a call declares nothing, and a tool's
// question ends it with input_required.
func OnQuestion(fn AnswerFunc) Option {
	return func(o *callOptions) { o.ask, o.onQuestion = true, fn }
}

// Answering declares that the call answers questions without a callback:
// a Stream's reader sees each question event (QuestionOf) and answers it
// with Stream.Answer.
func Answering() Option { return func(o *callOptions) { o.ask = true } }

// QuestionOf returns the question a question event asks.
func QuestionOf(ev envelope.ToolEvent) (Question, bool) {
	if ev.Type != envelope.EventQuestion || ev.Question == nil {
		return Question{}, false
	}
	q := ev.Question
	return Question{ID: q.ID, Message: ev.Message, Schema: q.Schema, Approval: q.Approval, Sampling: q.Sampling,
		Timeout: time.Duration(q.TimeoutMS) * time.Millisecond, workerID: q.WorkerID}, true
}

// isAsk reports whether ev belongs to asking (needs no credit).
func isAsk(ev envelope.ToolEvent) bool {
	return ev.Type == envelope.EventQuestion || ev.Type == envelope.EventAnswered
}

// askState is a call's side of asking.
type askState struct {
	on        bool       // the call declared ask=1
	fn        AnswerFunc // answers each question, or nil
	ctx       context.Context
	stop      context.CancelFunc
	questions map[string]Question // asked and not yet answered by this side
}

// askLocked takes a question or answered event off the wire; p.mu held.
func (p *pending) askLocked(ev envelope.ToolEvent) *envelope.Problem {
	if p.ask() == nil || !p.ask().on {
		return p.c.problems.New(envelope.CodeInternal, fmt.Sprintf("the worker sent a %s event on call %s, which did not declare that it answers questions", ev.Type, p.id))
	}
	if ev.Type == envelope.EventAnswered {
		delete(p.ask().questions, ev.Question.ID)
		p.span().AddEvent("toolmesh.answered", trace.WithAttributes(
			attribute.String("toolmesh.question_id", ev.Question.ID), attribute.String("toolmesh.answer.action", ev.Question.Action)))
		return nil
	}
	q, _ := QuestionOf(ev)
	if len(p.ask().questions) >= maxOpenQuestions {
		return p.c.problems.New(envelope.CodeInternal, fmt.Sprintf("the worker asked more than %d questions at once on call %s", maxOpenQuestions, p.id))
	}
	q.CallID, q.Tool = p.id, p.tool
	if p.ask().questions == nil {
		p.ask().questions = map[string]Question{}
	}
	p.ask().questions[q.ID] = q
	if p.workerID == "" && wire.ValidWorkerID(q.workerID) {
		p.workerID = q.workerID
	}
	p.span().AddEvent("toolmesh.question", trace.WithAttributes(attribute.String("toolmesh.question_id", q.ID)))
	return nil
}

// startAsking readies a call that declared ask=1.
func (p *pending) startAsking(ctx context.Context, o callOptions) {
	if !o.ask && o.onQuestion == nil {
		return // a call that answers nothing carries no asking state
	}
	a := &askState{on: o.ask, fn: o.onQuestion}
	if o.onQuestion != nil {
		a.ctx, a.stop = context.WithCancel(ctx)
	}
	if p.extra == nil {
		p.extra = &pendingExtra{}
	}
	p.extra.asking = a
}

// stopAsking ends the answer callbacks' context once the call is over.
func (p *pending) stopAsking() {
	if p.ask() != nil && p.ask().stop != nil {
		p.ask().stop()
	}
}

// handOver answers a question the reader just took, when the call has a
// callback.
func (p *pending) handOver(ev envelope.ToolEvent) {
	if ev.Type != envelope.EventQuestion || p.ask() == nil || p.ask().fn == nil {
		return
	}
	q, _ := QuestionOf(ev)
	q.CallID, q.Tool = p.id, p.tool
	go func() {
		a, err := p.ask().fn(p.ask().ctx, q)
		if p.ask().ctx.Err() != nil {
			return // the call ended meanwhile: nobody waits for it
		}
		var prob *envelope.Problem
		switch {
		case errors.As(err, &prob):
		case err != nil:
			a = Dismiss()
		}
		if prob == nil {
			if err := p.answer(q.ID, a); err != nil {
				prob = envelope.AsProblem(err, envelope.CodeInvalidInput)
			}
		}
		if prob != nil {
			p.stopAsking()
			p.fail(p.c.problems.Rebase(prob), true)
		}
	}()
}

// answer sends a to the worker that asked question id, refusing an
// unknown question, an unknown action and content its schema refuses.
func (p *pending) answer(id string, a Answer) error {
	var q Question
	ok := false
	p.mu.Lock()
	if p.ask() != nil {
		q, ok = p.ask().questions[id]
	}
	p.mu.Unlock()
	if !ok {
		return p.c.problems.New(envelope.CodeInvalidInput, fmt.Sprintf("call %s has no open question %q", p.id, id))
	}
	if err := checkAnswer(q, a); err != nil {
		return p.c.problems.Rebase(err)
	}
	ctl := wire.Control{Op: wire.OpAnswer, CallID: p.id, QuestionID: id, Action: a.Action}
	if a.Action == envelope.ActionAccept {
		ctl.Content = a.Content
	}
	// The span hears of the answer before the worker can: once published,
	// the call may end, and its span with it, before this goroutine runs
	// again, and an ended span drops events.
	p.span().AddEvent("toolmesh.answer", trace.WithAttributes(
		attribute.String("toolmesh.question_id", id), attribute.String("toolmesh.answer.action", a.Action)))
	if err := p.c.nc.Publish(p.c.subjects.Control(q.workerID), ctl.Encode()); err != nil {
		return p.c.sendProblem(err)
	}
	return nil
}

// checkAnswer is the invalid_input Problem of an answer q cannot take.
func checkAnswer(q Question, a Answer) *envelope.Problem {
	if !wire.ValidAction(a.Action) {
		return envelope.Problemf(envelope.CodeInvalidInput, "answer action %q: want accept, decline or cancel", a.Action)
	}
	if !wire.ValidWorkerID(q.workerID) {
		return envelope.Problemf(envelope.CodeInternal, "question %s names no valid worker to answer", q.ID)
	}
	if a.Action != envelope.ActionAccept {
		return nil
	}
	if !wire.IsObject(a.Content) {
		return envelope.Problemf(envelope.CodeInvalidInput, "the answer to question %s must be a JSON object", q.ID)
	}
	schema, err := envelope.CompileSchema(q.Schema)
	if err != nil {
		return envelope.Problemf(envelope.CodeInternal, "question %s has a schema that does not compile: %v", q.ID, err)
	}
	if v := schema.Validate(a.Content); len(v) > 0 {
		return envelope.ValidationProblem(envelope.CodeInvalidInput, "answer", v)
	}
	return nil
}

// Answer answers question id of the stream's call (the question arrived
// as an event; see QuestionOf). An answer that does not fit the question's
// schema is refused with invalid_input and nothing is sent.
func (s *Stream) Answer(id string, a Answer) error {
	p := s.attempt()
	if p == nil {
		return s.c.problems.New(envelope.CodeInvalidInput, "question "+id+": the stream's call was never sent")
	}
	return p.answer(id, a)
}
