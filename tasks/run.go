package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// queuedCall is a queue message: everything an attempt needs. It is the
// only place the task's bearer is kept (§22.4).
type queuedCall struct {
	TaskID     string          `json:"task_id"`
	Owner      string          `json:"owner"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Mode       string          `json:"mode"`
	Bearer     string          `json:"bearer,omitempty"`
	IdemKey    string          `json:"idempotency_key,omitempty"`
	Idempotent bool            `json:"idempotent,omitempty"`
	Created    time.Time       `json:"created"`
	Deadline   time.Time       `json:"deadline"`
	// Seq is the log sequence of the task's queued record: a first
	// delivery starts from it without reading the log (a cancel that came
	// first makes the dispatch mark's append fail, and the log is read).
	Seq uint64 `json:"seq,omitempty"`
}

// record is the task's record as the queue message knows it.
func (q *queuedCall) record(state string, attempt, events int) caller.TaskRecord {
	return caller.TaskRecord{TaskID: q.TaskID, Tool: q.Tool, State: state, Mode: q.Mode, Attempt: attempt,
		Created: stamp(q.Created), Updated: stamp(time.Now()), Deadline: stamp(q.Deadline),
		Idempotent: q.Idempotent, Rerunnable: q.Idempotent || q.IdemKey != "", Events: events}
}

// startRunners makes the shared pull consumer and starts consuming.
func (s *Service) startRunners(ctx context.Context) error {
	cons, err := s.queue.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: s.names.consumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: s.cfg.AckWait,
		MaxDeliver: -1, MaxAckPending: 100000, Replicas: s.cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("task queue consumer: %w", err)
	}
	s.wg.Add(1)
	go s.keepHeld()
	s.cons, err = cons.Consume(s.take, jetstream.PullMaxMessages(256))
	return err
}

// attemptRun is where one task's attempts stand while a runner holds it.
type attemptRun struct {
	m       jetstream.Msg
	q       queuedCall
	subject string
	attempt int   // the attempt running or last run
	events  int   // events recorded so far
	bytes   int64 // bytes of the events this runner recorded
	worker  string
	mark    uint64                  // the sequence of the attempt's dispatch mark
	picked  bool                    // a worker took the attempt up: the task reads running
	cancel  context.CancelCauseFunc // cancels the attempt's call
	st      *caller.Stream          // the attempt's call, once made (Service.mu)
}

// handle takes one queued call: settles a task already ended, ends one
// whose deadline passed, judges a lost attempt, or runs the next attempt.
func (s *Service) handle(m jetstream.Msg) {
	ctx := s.ctx
	r := &attemptRun{m: m}
	if err := json.Unmarshal(m.Data(), &r.q); err != nil {
		_ = m.Term()
		return
	}
	r.subject = s.names.logSubject(r.q.Owner, r.q.TaskID)
	last, err := s.startingEntry(ctx, r)
	if err != nil {
		_ = m.Nak()
		return
	}
	if last == nil { // the log is past its retention
		_ = m.Term()
		return
	}
	stop := s.keepAlive(m)
	defer stop()
	r.attempt, r.events = last.Attempt, max(last.Events, last.N)
	s.proceed(ctx, r, last)
}

// startingEntry is the log entry a delivered queued call is judged from:
// on its first delivery the queued record it was published after, else
// the task's last entry, read.
func (s *Service) startingEntry(ctx context.Context, r *attemptRun) (*stored, error) {
	if md, err := r.m.Metadata(); err == nil && md.NumDelivered == 1 && r.q.Seq != 0 {
		return &stored{entry: entry{Kind: kindTask, TaskRecord: r.q.record(caller.TaskQueued, 0, 0)}, seq: r.q.Seq}, nil
	}
	return s.lastEntry(ctx, r.subject)
}

// proceed decides what a delivered task needs (§22.6).
func (s *Service) proceed(ctx context.Context, r *attemptRun, last *stored) {
	if ev, ok := last.terminal(); ok { // ended
		s.settleEnded(ctx, r, last, ev)
		return
	}
	if last.Kind == kindTask && caller.TaskTerminal(last.State) {
		s.settle(r)
		return
	}
	if time.Now().After(r.q.Deadline) {
		s.finish(ctx, r, envelope.ErrorEvent(envelope.NewProblem(envelope.CodeTimeout,
			"the task's deadline passed before it could run")))
		return
	}
	if last.State == caller.TaskRunning || last.Kind == kindEvent || last.Dispatched > 0 {
		// Redelivered while an attempt was offered or running: its runner
		// died, and the attempt may have run.
		r.attempt = max(r.attempt, last.Dispatched)
		lost := envelope.Problemf(envelope.CodeWorkerLost,
			"the task service instance running attempt %d stopped", r.attempt)
		s.afterAttempt(ctx, r, envelope.ErrorEvent(lost))
		return
	}
	s.runFrom(ctx, r, last.seq)
}

// runFrom runs attempts from a queued state whose last entry is seq. The
// task stays queued until a worker takes the call up (its first event):
// first a dispatch mark records that attempt A has been offered, so that
// an instance dying now leaves a lost attempt, never a second run; then,
// once a worker's start arrives, the task reads running (§22.6).
func (s *Service) runFrom(ctx context.Context, r *attemptRun, seq uint64) {
	// Registered before the dispatch mark, so a cancel that reads the mark
	// or running always finds this attempt (§22.6 cancel).
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.mu.Lock()
	r.cancel, r.st = cancel, nil
	s.running[r.q.TaskID] = r
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, r.q.TaskID)
		s.mu.Unlock()
	}()
	mark := &entry{Kind: kindTask, TaskRecord: r.q.record(caller.TaskQueued, r.attempt, r.events), Dispatched: r.attempt + 1}
	ack, err := s.appendEntry(ctx, r.subject, mark, "", seq)
	if err != nil {
		_ = r.m.Nak() // cancelled meanwhile, or JetStream is away: judge again
		return
	}
	r.attempt++
	r.mark, r.picked = ack.Sequence, false
	ev := s.attempt(ctx, actx, r)
	if errors.Is(context.Cause(actx), errMoved) {
		s.rejudge(ctx, r)
		return
	}
	s.afterAttempt(ctx, r, ev)
}

// errMoved cancels an attempt whose task another party moved on before a
// worker took it up (a cancel of the queued task won the race).
var errMoved = errors.New("the task moved on before a worker took it up")

// rejudge reads a task's log again after its attempt was cut short and
// settles it as the log says.
func (s *Service) rejudge(ctx context.Context, r *attemptRun) {
	last, err := s.lastEntry(ctx, r.subject)
	if err != nil || last == nil {
		_ = r.m.Nak()
		return
	}
	if ev, ok := last.terminal(); ok {
		s.settleEnded(ctx, r, last, ev)
		return
	}
	if last.Kind == kindTask && caller.TaskTerminal(last.State) {
		s.settle(r)
		return
	}
	_ = r.m.Nak()
}

// pickedUp records that a worker took the attempt up: the task reads
// running from now on. A task that moved on meanwhile cancels the call.
func (s *Service) pickedUp(ctx context.Context, r *attemptRun) error {
	r.picked = true
	rec := r.q.record(caller.TaskRunning, r.attempt, r.events)
	rec.WorkerID = r.worker
	_, err := s.appendEntry(ctx, r.subject, &entry{Kind: kindTask, TaskRecord: rec}, "", r.mark)
	if errors.Is(err, errConflict) {
		r.cancel(errMoved)
		return nil
	}
	return err
}

// afterAttempt acts on an attempt's terminal: requeue on no worker, retry
// or fail a lost attempt, or finish the task.
func (s *Service) afterAttempt(ctx context.Context, r *attemptRun, ev envelope.ToolEvent) {
	switch {
	case ctx.Err() != nil: // this instance is stopping: another judges the attempt
		_ = r.m.Nak()
	case unrun(ev):
		s.requeue(ctx, r, ev)
	case ev.Code == envelope.CodeWorkerLost || ev.Code == envelope.CodeConnectionLost || ev.Code == envelope.CodeStreamGap:
		s.lost(ctx, r, ev)
	default:
		s.finish(ctx, r, ev)
	}
}

// unrun reports whether an attempt's terminal says its handler never ran
// and the task should wait for a worker: none hosts the tool (503), the
// connection was away when the call was to be sent, or the worker was
// too busy to take it.
func unrun(ev envelope.ToolEvent) bool {
	p := ev.Problem()
	if p == nil || ev.Code == envelope.CodeToolNotFound {
		return p != nil
	}
	return p.Ran() == envelope.RanNo && (p.Code == envelope.CodeConnectionLost || p.Code == envelope.CodeOverloaded)
}

// requeue puts a task no worker took back in the queue: the handler did
// not run, so the attempt does not count (§22.6).
func (s *Service) requeue(ctx context.Context, r *attemptRun, ev envelope.ToolEvent) {
	r.attempt--
	rec := r.q.record(caller.TaskQueued, r.attempt, r.events)
	rec.Waiting = waitingFor(r.q.Tool, ev)
	if _, err := s.appendEntry(ctx, r.subject, &entry{Kind: kindTask, TaskRecord: rec}, "", 0); err != nil {
		_ = r.m.Nak()
		return
	}
	n := uint64(1)
	if md, err := r.m.Metadata(); err == nil {
		n = md.NumDelivered
	}
	delay := 250 * time.Millisecond << min(n-1, 5)
	_ = r.m.NakWithDelay(min(delay, 5*time.Second))
	s.changed(r)
}

// waitingFor says why a task whose attempt did not run waits (the
// record's waiting).
func waitingFor(tool string, ev envelope.ToolEvent) string {
	switch ev.Code {
	case envelope.CodeToolNotFound:
		return fmt.Sprintf("no worker hosts tool %s; the task waits for one", tool)
	case envelope.CodeOverloaded:
		return fmt.Sprintf("the workers of tool %s were too busy to take it (%s); the task waits", tool, ev.Message)
	}
	return fmt.Sprintf("the call to tool %s could not be sent (%s); the task waits", tool, ev.Message)
}

// lost handles a lost attempt: another attempt when the task is
// re-runnable and attempts remain, else the terminal worker_lost.
func (s *Service) lost(ctx context.Context, r *attemptRun, ev envelope.ToolEvent) {
	if !s.rerunnable(ctx, &r.q) || r.attempt >= s.cfg.MaxAttempts {
		s.finish(ctx, r, ev)
		return
	}
	delay := min(s.cfg.RetryBackoff<<(r.attempt-1), 30*time.Second)
	msg := fmt.Sprintf("attempt %d ended %s (%s); attempt %d in %s", r.attempt, ev.Code, ev.Message, r.attempt+1, delay)
	if err := s.record(ctx, r, envelope.ToolEvent{Type: envelope.EventProgress, Message: msg}); err != nil {
		_ = r.m.Nak()
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(delay):
	}
	last, err := s.lastEntry(ctx, r.subject)
	if err != nil || last == nil {
		_ = r.m.Nak()
		return
	}
	s.runFrom(ctx, r, last.seq)
}

// rerunnable says whether a task may run again after a lost attempt.
func (s *Service) rerunnable(ctx context.Context, q *queuedCall) bool {
	if q.Idempotent || q.IdemKey != "" {
		return true
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	spec, err := s.call.Catalog().Describe(dctx, q.Tool)
	return err == nil && spec.Annotations.IsIdempotent()
}

// attempt runs one attempt as a stream-mode call and records its events;
// it returns the attempt's terminal, not yet recorded.
func (s *Service) attempt(ctx, actx context.Context, r *attemptRun) envelope.ToolEvent {
	// The service answers questions on the task's behalf, with the
	// answers its owner gives through the task API (§23.9).
	opts := []caller.Option{caller.WithTimeout(time.Until(r.q.Deadline)), caller.Answering()}
	if r.q.Bearer != "" {
		opts = append(opts, caller.WithBearer(r.q.Bearer))
	}
	if r.q.IdemKey != "" {
		opts = append(opts, caller.WithIdempotencyKey(r.q.IdemKey))
	}
	if r.q.Mode == "unary" {
		// The task's result is what a plain call returns (§22.6).
		opts = append(opts, caller.Folded())
	}
	st, err := s.call.Stream(actx, r.q.Tool, r.q.Args, opts...)
	if err != nil {
		return envelope.ErrorEvent(asProblem(err))
	}
	defer st.Close()
	s.mu.Lock()
	r.st = st
	s.mu.Unlock()
	return s.follow(ctx, actx, r, st)
}

// follow records an attempt's events until its terminal.
func (s *Service) follow(ctx, actx context.Context, r *attemptRun, st *caller.Stream) envelope.ToolEvent {
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) || err != nil {
			return envelope.ErrorEvent(envelope.NewProblem(envelope.CodeInternal, "the call ended without a terminal"))
		}
		if ev.IsTerminal() {
			return s.judgeTerminal(ctx, actx, ev)
		}
		if ev.Type == envelope.EventStart {
			ev = s.markStart(r, ev)
		}
		if !r.picked {
			if err := s.pickedUp(ctx, r); err != nil {
				return envelope.ErrorEvent(envelope.Problemf(envelope.CodeInternal, "recording the task's start: %v", err))
			}
		}
		if errors.Is(context.Cause(actx), errMoved) || r.q.Mode == "unary" && !asking(ev) {
			continue
		}
		if err := s.record(ctx, r, ev); err != nil {
			return envelope.ErrorEvent(envelope.Problemf(envelope.CodeInternal, "recording the task's event: %v", err))
		}
		if err := s.askState(ctx, r, ev); err != nil {
			return envelope.ErrorEvent(envelope.Problemf(envelope.CodeInternal, "recording the task's event: %v", err))
		}
	}
}

// judgeTerminal is what an attempt's terminal means for the task: a
// cancel this service sent is the task's cancel; a cancel it did not send
// is the worker giving up on this service (its lease ran out while the
// service was away, §8.3), a lost attempt.
func (s *Service) judgeTerminal(ctx, actx context.Context, ev envelope.ToolEvent) envelope.ToolEvent {
	killed := errors.Is(context.Cause(actx), errKilled)
	switch {
	case killed && ev.Code != envelope.CodeCancelled:
		return envelope.ErrorEvent(envelope.NewProblem(envelope.CodeCancelled, "the task was cancelled"))
	case !killed && ctx.Err() == nil && actx.Err() == nil && ev.Code == envelope.CodeCancelled:
		return envelope.ErrorEvent(envelope.Problemf(envelope.CodeWorkerLost,
			"the worker cancelled the attempt on its own (%s): it lost the task service's lease", ev.Message).WithRan(envelope.RanMaybe))
	}
	return ev
}

// markStart notes the attempt's worker and numbers the start event.
func (s *Service) markStart(r *attemptRun, ev envelope.ToolEvent) envelope.ToolEvent {
	md := map[string]any{}
	for k, v := range ev.Metadata {
		md[k] = v
	}
	if w, ok := md["worker_id"].(string); ok {
		r.worker = w
	}
	md["attempt"] = r.attempt
	ev.Metadata = md
	return ev
}

// record appends one event to the task's log (§22.2, §22.8).
func (s *Service) record(ctx context.Context, r *attemptRun, ev envelope.ToolEvent) error {
	return s.recordWith(ctx, r, ev, nil)
}

// recordWith appends one event to the task's log; final, with a terminal
// event, is the task's final record, carried in the same entry (§22.2).
func (s *Service) recordWith(ctx context.Context, r *attemptRun, ev envelope.ToolEvent, final *caller.TaskRecord) error {
	data, err := ev.AppendJSON(nil)
	if err != nil {
		return err
	}
	n := r.events + 1
	e := &entry{Kind: kindEvent, TaskRecord: caller.TaskRecord{Attempt: r.attempt}, N: n, Event: data}
	room := int(s.nc.MaxPayload()) - wire.ChunkOverhead
	if final != nil {
		e.TaskRecord = *final
		room -= recordRoom
	}
	if len(data) > room {
		name := r.q.TaskID + "." + strconv.Itoa(n)
		if _, err := retry(ctx, func(ctx context.Context) (*jetstream.ObjectInfo, error) {
			return s.objs.PutBytes(ctx, name, data)
		}); err != nil {
			return err
		}
		e.Event, e.Object, e.Size = nil, name, len(data)
	}
	if _, err := s.appendEntry(ctx, r.subject, e, r.q.TaskID+".e"+strconv.Itoa(n), 0); err != nil {
		return err
	}
	r.events, r.bytes = n, r.bytes+int64(len(data))
	return nil
}

// recordRoom is what a final record may take of a log message beside
// its terminal event.
const recordRoom = 2 << 10

// finish records a task's terminal event with its final record, in one
// entry, and settles the task.
func (s *Service) finish(ctx context.Context, r *attemptRun, ev envelope.ToolEvent) {
	rec := r.q.record(stateOf(ev), r.attempt, r.events+1)
	rec.Code, rec.WorkerID = string(ev.Code), r.worker
	if err := s.recordWith(ctx, r, ev, &rec); err != nil {
		// A pause, not at once: the store may be full until the retention
		// makes room.
		_ = r.m.NakWithDelay(time.Second)
		return
	}
	s.settle(r)
	// The task's events count against its owner's bytes from now on.
	if err := s.charge(ctx, r.q.Owner, 0, r.bytes, false); err != nil {
		s.log.Warn("task usage: the bytes of an ended task were not counted", "task", r.q.TaskID, "err", err)
	}
}

// settleEnded settles a task whose last entry is its terminal event: one
// that carries the final record is done; one without it (a log an older
// task service wrote) gets it appended first.
func (s *Service) settleEnded(ctx context.Context, r *attemptRun, last *stored, ev envelope.ToolEvent) {
	if last.TaskID != "" {
		s.settle(r)
		return
	}
	s.finalize(ctx, r, ev, last.seq)
}

// finalize appends the final record after the terminal event at seq, acks
// the queued call and tells whoever waits.
func (s *Service) finalize(ctx context.Context, r *attemptRun, ev envelope.ToolEvent, seq uint64) {
	rec := r.q.record(stateOf(ev), r.attempt, r.events)
	rec.Code, rec.TerminalSeq, rec.WorkerID = string(ev.Code), seq, r.worker
	if data, err := ev.AppendJSON(nil); err == nil && len(data) <= inlineTerminal {
		rec.Terminal = data // get and wait answer from this one entry
	}
	if _, err := s.appendEntry(ctx, r.subject, &entry{Kind: kindTask, TaskRecord: rec},
		r.q.TaskID+".final", 0); err != nil {
		_ = r.m.Nak()
		return
	}
	s.settle(r)
}

// inlineTerminal is the largest terminal event a final record carries
// itself; a larger one is read from its own entry.
const inlineTerminal = 16 << 10

// settle wakes the waiters of a task that has ended and acks its queued
// call. The end is in the log already, so the ack need not be confirmed:
// a lost one redelivers the call, which finds the task ended and settles
// it again.
func (s *Service) settle(r *attemptRun) {
	s.changed(r)
	_ = r.m.Ack()
}

// changed tells whoever waits on a task (get with wait, cancel) that its
// state changed: they read it again.
func (s *Service) changed(r *attemptRun) {
	_ = s.nc.Publish(s.names.doneSubject(r.q.Owner, r.q.TaskID), nil)
}

// stateOf is the final state a terminal event gives a task.
func stateOf(ev envelope.ToolEvent) string {
	switch {
	case ev.Type == envelope.EventResult:
		return caller.TaskSucceeded
	case ev.Code == envelope.CodeCancelled:
		return caller.TaskCancelled
	default:
		return caller.TaskFailed
	}
}

// keepAlive proves to the stream that the queued call is being worked
// on: an in-progress ack every AckWait/3 until stop.
func (s *Service) keepAlive(m jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(s.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	return func() { close(done) }
}

// asProblem is err as a Problem (internal_error when it is not one).
func asProblem(err error) *envelope.Problem {
	var p *envelope.Problem
	if errors.As(err, &p) {
		return p
	}
	if errors.Is(err, nats.ErrConnectionClosed) {
		return envelope.NewProblem(envelope.CodeConnectionLost, err.Error())
	}
	return envelope.NewProblem(envelope.CodeInternal, err.Error())
}
