package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/problembase"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// defaultQuestionTimeout is how long a question waits for its answer when
// neither the handler nor Config.Liveness.QuestionTimeout says otherwise.
const defaultQuestionTimeout = 5 * time.Minute

// Question is what a handler asks its caller mid-call (docs/protocol.md
// §23): a message for a person and the JSON Schema of the answer.
type Question struct {
	// Message is the text shown to whoever answers.
	Message string
	// Schema is the JSON Schema of the answer's content, an object
	// schema; MCP's restricted form (an object of primitive properties)
	// renders everywhere, MCP clients included.
	Schema json.RawMessage
	// Timeout bounds the wait (0: Config.QuestionTimeout). An unanswered
	// question ends the call with input_timeout.
	Timeout time.Duration
	// Sampling makes it a sampling question (docs/protocol.md §23.11):
	// MCP's sampling/createMessage params, asking the caller for a
	// model's completion. Schema is then envelope.SamplingAnswerSchema.
	Sampling json.RawMessage
}

// Answer is how the caller settled a question: Action is
// envelope.ActionAccept (Content holds the answer, valid against the
// question's schema), envelope.ActionDecline or envelope.ActionCancel.
type Answer struct {
	Action  string
	Content json.RawMessage
}

// Ask asks the call's caller q and waits for the answer. The error is a
// *envelope.Problem when the caller cannot answer (input_required, with
// the question in its "question" extension), when the question went
// unanswered past its timeout (input_timeout: the call is ending), or
// when the call ended while waiting; a handler returns it as it is.
// Decline and cancel are answers, not errors: see Answer.Action, or use
// AskAs, which turns them into declined and cancelled Problems.
func (r *Request) Ask(ctx context.Context, q Question) (Answer, error) {
	if r.call == nil {
		return Answer{}, envelope.NewProblem(envelope.CodeInputRequired, "this request is not a live call: nobody can answer").
			WithExtension("question", questionInfo("", q.Message, q.Schema, nil))
	}
	return r.call.ask(ctx, q, nil)
}

// AskAs asks the caller for a T: the answer's schema is inferred from T
// as AddTool infers In (T must be a struct), and an accepted answer is
// decoded into it. A decline is the Problem declined and a cancel the
// Problem cancelled, so a handler that cannot go on without an answer
// just returns the error.
func AskAs[T any](ctx context.Context, req *Request, message string) (T, error) {
	var zero T
	schema, err := InferSchema[T]()
	if err != nil {
		return zero, fmt.Errorf("ask: the answer's schema: %w", err)
	}
	a, err := req.Ask(ctx, Question{Message: message, Schema: schema})
	if err != nil {
		return zero, err
	}
	switch a.Action {
	case envelope.ActionDecline:
		return zero, envelope.NewProblem(envelope.CodeDeclined, fmt.Sprintf("the caller declined: %s", message))
	case envelope.ActionCancel:
		return zero, envelope.NewProblem(envelope.CodeCancelled, fmt.Sprintf("the caller dismissed the question: %s", message))
	}
	var v T
	if err := json.Unmarshal(a.Content, &v); err != nil {
		return zero, fmt.Errorf("ask: decode the answer: %w", err)
	}
	return v, nil
}

// openQuestion is a question sent and not yet settled.
type openQuestion struct {
	schema   *envelope.Schema
	answer   chan Answer // buffered: the one answer taken
	approval bool        // the worker's own approval question
}

// inputTimeoutError is the cancel cause of a call whose question went
// unanswered: the call ends input_timeout.
type inputTimeoutError struct {
	id, message string
	after       time.Duration
}

func (e inputTimeoutError) Error() string {
	return fmt.Sprintf("question %s (%q) was not answered within %s", e.id, e.message, e.after)
}

// ask sends one question (an approval when approval is set) and waits.
func (c *call) ask(ctx context.Context, q Question, approval *envelope.Approval) (Answer, error) {
	schema, err := envelope.CompileSchema(q.Schema)
	if err != nil || !wire.IsObject(q.Schema) {
		return Answer{}, fmt.Errorf("ask: the question's schema must be a JSON Schema object: %v", err)
	}
	if !c.ask1 {
		return Answer{}, c.w.problems.New(envelope.CodeInputRequired,
			fmt.Sprintf("tool %s asked a question this call cannot answer (the caller did not declare %s=1): %s", c.tool.spec.Name, wire.MetaAsk, q.Message)).
			WithExtension("question", questionInfo("", q.Message, q.Schema, approval))
	}
	timeout := c.questionTimeout(q)
	id, oq, err := c.open(q, schema, approval, timeout)
	if err != nil {
		return Answer{}, err
	}
	span := trace.SpanFromContext(ctx)
	attrs := []attribute.KeyValue{attribute.String("toolmesh.question_id", id)}
	if approval != nil {
		attrs = append(attrs, attribute.String("toolmesh.approval.tool", approval.Tool))
	}
	span.AddEvent("toolmesh.question", trace.WithAttributes(attrs...))
	return c.await(ctx, id, q.Message, oq, timeout)
}

// questionTimeout is q's wait: its own, else the worker's, never past the
// call's deadline (the budget then ends the call first, as timeout).
func (c *call) questionTimeout(q Question) time.Duration {
	d := q.Timeout
	if d <= 0 {
		d = c.w.cfg.Liveness.QuestionTimeout
	}
	if !c.deadline.IsZero() {
		d = min(d, max(time.Until(c.deadline), time.Millisecond))
	}
	return d
}

// open registers a question and sends its event (it needs no credit).
func (c *call) open(q Question, schema *envelope.Schema, approval *envelope.Approval, timeout time.Duration) (string, *openQuestion, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return "", nil, errCallEnded
	}
	c.qseq++
	id := "Q" + strconv.Itoa(int(c.qseq))
	ev := envelope.ToolEvent{Type: envelope.EventQuestion, Message: q.Message, Question: &envelope.Question{ID: id, Schema: q.Schema,
		WorkerID: c.w.cfg.ID, TimeoutMS: max(timeout.Milliseconds(), 1), Approval: approval, Sampling: q.Sampling}}
	if err := c.enqueueFreeLocked(ev); err != nil {
		return "", nil, err
	}
	oq := &openQuestion{schema: schema, answer: make(chan Answer, 1), approval: approval != nil}
	if c.questions == nil {
		c.questions = map[string]*openQuestion{}
	}
	c.questions[id] = oq
	return id, oq, nil
}

// enqueueFreeLocked queues a question or answered event, in unary mode
// too (from then on every message of the call is a numbered frame), and
// without spending the caller's credit. c.mu must be held.
func (c *call) enqueueFreeLocked(ev envelope.ToolEvent) error {
	if c.out == nil {
		c.out = &outbox{}
	}
	c.asked = true
	if err := c.enqueueLocked(ev); err != nil {
		return err
	}
	c.sent--
	return nil
}

// await waits for q's answer, the call's end or q's timeout, which ends
// the call with input_timeout.
func (c *call) await(ctx context.Context, id, message string, oq *openQuestion, timeout time.Duration) (Answer, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-oq.answer:
		return a, nil
	case <-ctx.Done():
		c.forget(id)
		return Answer{}, context.Cause(ctx)
	case <-timer.C:
		c.forget(id)
		cause := inputTimeoutError{id: id, message: message, after: timeout}
		c.cancel(cause)
		return Answer{}, c.w.problems.New(envelope.CodeInputTimeout, cause.Error())
	}
}

// forget closes a question nobody will answer any more.
func (c *call) forget(id string) {
	c.mu.Lock()
	delete(c.questions, id)
	c.mu.Unlock()
}

// answer settles an open question from an answer control message; the
// caller has already matched the sender's identity with the call's. A
// message for no open question, with an unknown action, or with content
// the schema refuses is dropped and the question stays open.
func (c *call) answer(ctl wire.Control) {
	c.mu.Lock()
	oq := c.questions[ctl.QuestionID]
	reason := answerFault(oq, ctl)
	if c.ended {
		reason = "the call has ended"
	}
	if reason == "" {
		delete(c.questions, ctl.QuestionID)
		_ = c.enqueueFreeLocked(envelope.ToolEvent{Type: envelope.EventAnswered, Question: &envelope.Question{ID: ctl.QuestionID, Action: ctl.Action}})
	}
	c.mu.Unlock()
	span := trace.SpanFromContext(c.ctx)
	qid := attribute.String("toolmesh.question_id", ctl.QuestionID)
	if reason != "" {
		c.w.log.Debug("answer dropped", "call_id", c.key.id, "question_id", ctl.QuestionID, "reason", reason)
		span.AddEvent("toolmesh.answer.dropped", trace.WithAttributes(qid, attribute.String("toolmesh.answer.reason", reason)))
		return
	}
	span.AddEvent("toolmesh.answer", trace.WithAttributes(qid, attribute.String("toolmesh.answer.action", ctl.Action)))
	a := Answer{Action: ctl.Action}
	if ctl.Action == envelope.ActionAccept {
		a.Content = append(json.RawMessage(nil), ctl.Content...)
	}
	c.observeAnswer(ctl.QuestionID, oq.approval, a)
	oq.answer <- a
}

// answerFault says why an answer cannot settle oq ("" when it can).
func answerFault(oq *openQuestion, ctl wire.Control) string {
	switch {
	case oq == nil:
		return "no such open question"
	case !wire.ValidAction(ctl.Action):
		return "unknown action"
	case ctl.Action != envelope.ActionAccept:
		return ""
	case !wire.IsObject(ctl.Content):
		return "accept without an object content"
	case len(oq.schema.Validate(ctl.Content)) > 0:
		return "content does not match the question's schema"
	}
	return ""
}

// askProblem is the terminal of a call ended by an unanswered question
// (nil for any other cause).
func askProblem(cause error, r problembase.Registry) *envelope.Problem {
	var te inputTimeoutError
	if errors.As(cause, &te) {
		return r.New(envelope.CodeInputTimeout, te.Error())
	}
	return nil
}

// questionInfo is the "question" extension of an input_required Problem:
// what was asked.
func questionInfo(id, message string, schema json.RawMessage, approval *envelope.Approval) map[string]any {
	m := map[string]any{"message": message, "schema": schema}
	if id != "" {
		m["question_id"] = id
	}
	if approval != nil {
		m["approval"] = approval
	}
	return m
}
