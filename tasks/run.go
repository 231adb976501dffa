package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// queuedCall is what an attempt needs, kept in the task's submit entry:
// the only place the task's bearer is kept (§22.4).
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
}

// record is the task's record as the queued call knows it.
func (q *queuedCall) record(state string, attempt, events int) Record {
	return Record{TaskID: q.TaskID, Tool: q.Tool, State: state, Mode: q.Mode, Attempt: attempt,
		Created: stamp(q.Created), Updated: stamp(time.Now()), Deadline: stamp(q.Deadline),
		Idempotent: q.Idempotent, Rerunnable: q.rerunnable(), Events: events}
}

// rerunnable says whether the task itself allows a second run: then no
// dispatch mark guards its attempts.
func (q *queuedCall) rerunnable() bool { return q.Idempotent || q.IdemKey != "" }

// startRunners makes the shared pull consumer over the tasks' submit
// entries and starts consuming.
func (s *Service) startRunners(ctx context.Context) error {
	cons, err := s.logs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: s.names.consumer, FilterSubject: s.names.queueFilter(), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: s.cfg.ackWait, MaxDeliver: -1, MaxAckPending: 100000, Replicas: s.cfg.Replicas,
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
	subject string // the task's .e subject
	attempt int    // the attempt running or last run
	events  int    // events recorded so far
	bytes   int64  // bytes of the events this runner recorded
	worker  string
	waiting string                  // why the task waits, as its last queued record says
	cancel  context.CancelCauseFunc // cancels the attempt's call
	st      *caller.Stream          // the attempt's call, once made (Service.mu)

	mu      sync.Mutex  // orders the runner's writes
	lastE   uint64      // the sequence of the task's last .e entry (0: none)
	running bool        // the task reads running
	ended   bool        // the attempt's terminal arrived: write no running mark
	timer   *time.Timer // writes the running mark of a unary attempt
}

// handle takes one submit entry: settles a task already ended, ends one
// whose deadline passed, judges a lost attempt, or runs the next attempt.
func (s *Service) handle(m jetstream.Msg) {
	ctx := s.ctx
	var e entry
	if err := json.Unmarshal(m.Data(), &e); err != nil || e.Call == nil {
		_ = m.Term()
		return
	}
	r := &attemptRun{m: m, q: *e.Call}
	r.subject = s.names.eventSubject(r.q.Owner, r.q.TaskID)
	last, err := s.startingEntry(ctx, r, &e)
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
	if !last.isSubmit() {
		r.lastE = last.seq
	}
	r.attempt, r.events = last.Attempt, max(last.Events, last.N)
	if last.Kind == kindTask && last.State == Queued {
		r.waiting = last.Waiting
	}
	s.proceed(ctx, r, last)
}

// startingEntry is the entry a delivered task is judged from: on its first
// delivery the submit entry itself (a cancel that came first makes the
// dispatch mark fail, and the task is read), else the task's last entry,
// read.
func (s *Service) startingEntry(ctx context.Context, r *attemptRun, e *entry) (*stored, error) {
	if md, err := r.m.Metadata(); err == nil && md.NumDelivered == 1 {
		return &stored{entry: *e, subject: r.m.Subject()}, nil
	}
	return s.lastEntry(ctx, s.names.taskFilter(r.q.Owner, r.q.TaskID))
}

// proceed decides what a delivered task needs (§22.6).
func (s *Service) proceed(ctx context.Context, r *attemptRun, last *stored) {
	if _, ok := last.terminal(); ok { // ended
		s.settleEnded(r)
		return
	}
	if last.Kind == kindTask && terminal(last.State) {
		s.settleEnded(r)
		return
	}
	if time.Now().After(r.q.Deadline) {
		s.finish(ctx, r, envelope.ErrorEvent(envelope.NewProblem(envelope.CodeTimeout,
			"the task's deadline passed before it could run")))
		return
	}
	if last.State == Running || last.State == InputRequired || last.Kind == kindEvent || last.Dispatched > 0 {
		// Redelivered while an attempt was offered or running: its runner
		// died, and the attempt may have run.
		r.attempt = max(r.attempt, last.Dispatched)
		lost := envelope.Problemf(envelope.CodeWorkerLost,
			"the task service instance running attempt %d stopped", r.attempt)
		s.afterAttempt(ctx, r, envelope.ErrorEvent(lost))
		return
	}
	s.runFrom(ctx, r)
}

// runFrom runs attempts from a queued state whose last .e entry is
// r.lastE. A task that may not run twice gets a dispatch mark first,
// recording that attempt A has been offered, written only if the task
// has not moved since (a cancel of the queued task wins or loses against
// it as one write against another), so that an instance dying now leaves
// a lost attempt, never a second run. The task reads running once the
// worker has started it (§22.6).
func (s *Service) runFrom(ctx context.Context, r *attemptRun) {
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
	r.running, r.ended = false, false
	if r.waiting != "" && !s.hosted(ctx, r.q.Tool) {
		// Still no worker: wait again without offering an attempt, so a
		// task waiting for a worker writes nothing while it waits.
		_ = r.m.NakWithDelay(later(r.m))
		return
	}
	if !r.q.rerunnable() {
		mark := &entry{Kind: kindTask, Record: r.q.record(Queued, r.attempt, r.events), Dispatched: r.attempt + 1}
		if err := s.appendE(ctx, r, mark, ""); err != nil {
			s.rejudge(ctx, r) // cancelled meanwhile, or JetStream is away
			return
		}
	}
	r.attempt++
	ev := s.attempt(ctx, actx, r)
	s.stopRunningMark(r)
	if errors.Is(context.Cause(actx), errMoved) {
		s.rejudge(ctx, r)
		return
	}
	s.afterAttempt(ctx, r, ev)
}

// appendE appends e to the task's .e subject, expecting its last entry to
// be the one this runner wrote or read last.
func (s *Service) appendE(ctx context.Context, r *attemptRun, e *entry, msgID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.appendELocked(ctx, r, e, msgID)
}

// appendELocked is appendE with r.mu held.
func (s *Service) appendELocked(ctx context.Context, r *attemptRun, e *entry, msgID string) error {
	ack, err := s.appendEntry(ctx, r.subject, e, msgID, r.lastE)
	if err != nil {
		return err
	}
	r.lastE = ack.Sequence
	return nil
}

// errMoved cancels an attempt whose task another party moved on before a
// worker took it up (a cancel of the queued task won the race).
var errMoved = errors.New("the task moved on before a worker took it up")

// rejudge reads a task again after its attempt was cut short, or could not
// be offered, and settles it as the task's entries say.
func (s *Service) rejudge(ctx context.Context, r *attemptRun) {
	last, err := s.lastEntry(ctx, s.names.taskFilter(r.q.Owner, r.q.TaskID))
	if err != nil || last == nil {
		_ = r.m.Nak()
		return
	}
	if _, ok := last.terminal(); ok || last.Kind == kindTask && terminal(last.State) {
		s.settleEnded(r)
		return
	}
	_ = r.m.Nak()
}

// runningGrace is how long after its start a unary attempt's task reads
// running at the latest: an attempt that ends sooner is recorded by its
// terminal alone, one write fewer.
const runningGrace = 100 * time.Millisecond

// started notes that a worker started the attempt: a stream task's
// recorded start says so itself; a unary task gets a running mark unless
// its attempt ends within runningGrace.
func (s *Service) started(ctx context.Context, r *attemptRun) {
	if r.q.Mode != "unary" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer == nil && !r.running {
		r.timer = time.AfterFunc(runningGrace, func() { s.markRunning(ctx, r) })
	}
}

// markRunning records that the attempt runs, unless it has ended or the
// task moved on meanwhile (then the call is cancelled).
func (s *Service) markRunning(ctx context.Context, r *attemptRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || r.running {
		return
	}
	rec := r.q.record(Running, r.attempt, r.events)
	rec.WorkerID = r.worker
	err := s.appendELocked(ctx, r, &entry{Kind: kindTask, Record: rec}, "")
	switch {
	case errors.Is(err, errConflict):
		r.cancel(errMoved)
	case err != nil:
		s.log.Warn("task: the running mark was not recorded", "task", r.q.TaskID, "err", err)
	default:
		r.running = true
	}
}

// stopRunningMark ends the attempt's running mark timer: what is written
// next is the attempt's end.
func (s *Service) stopRunningMark(r *attemptRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
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
	rec := r.q.record(Queued, r.attempt, r.events)
	rec.Waiting = waitingFor(r.q.Tool, ev)
	r.waiting = rec.Waiting
	if err := s.appendE(ctx, r, &entry{Kind: kindTask, Record: rec}, ""); err != nil {
		s.rejudge(ctx, r)
		return
	}
	n := uint64(1)
	if md, err := r.m.Metadata(); err == nil {
		n = md.NumDelivered
	}
	delay := 250 * time.Millisecond << min(n-1, 5)
	_ = r.m.NakWithDelay(min(delay, 5*time.Second))
	s.notify(r.q.Owner, &rec, noticeChanged)
}

// hosted reports whether some worker answers for tool: its describe
// subject has a subscriber (the server says at once when none has), with
// no write. The reply comes on the service's inbox, which workers may
// answer under deploy/secure. Unsure, it says yes, and the attempt finds
// out.
func (s *Service) hosted(ctx context.Context, tool string) bool {
	reply := s.names.base + ".inbox.hosted." + nuid.Next()
	sub, err := s.nc.SubscribeSync(reply)
	if err != nil {
		return true
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := s.nc.PublishRequest(wire.Subjects{Prefix: s.cfg.Prefix}.Describe(tool), reply, nil); err != nil {
		return true
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = sub.NextMsgWithContext(rctx)
	return !errors.Is(err, nats.ErrNoResponders)
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
	delay := min(s.cfg.retryBackoff<<(r.attempt-1), 30*time.Second)
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
	s.runFrom(ctx, r)
}

// rerunnable says whether a task may run again after a lost attempt.
func (s *Service) rerunnable(ctx context.Context, q *queuedCall) bool {
	if q.Idempotent || q.IdemKey != "" {
		return true
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	spec, err := s.describe(dctx, q.Tool)
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
		opts = append(opts, caller.WithIdempotencyKey(attemptKey(r.q.Owner, r.q.IdemKey)))
	}
	if r.q.Mode == "unary" {
		// The task's result is what a plain call returns (§22.6).
		opts = append(opts, caller.Folded())
	}
	// The owner's own caller: the worker counts the attempt against the
	// owner's share of it (ownerCallers).
	c, release, err := s.callerFor(r.q.Owner)
	if err != nil {
		return envelope.ErrorEvent(asProblem(err))
	}
	defer release()
	st, err := c.Stream(actx, r.q.Tool, r.q.Args, opts...)
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
			s.started(ctx, r)
		}
		if errors.Is(context.Cause(actx), errMoved) || r.q.Mode == "unary" && !asking(ev) {
			continue
		}
		if err := s.record(ctx, r, ev); errors.Is(err, errConflict) {
			r.cancel(errMoved) // a cancel of the queued task came first
			continue
		} else if err != nil {
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
func (s *Service) recordWith(ctx context.Context, r *attemptRun, ev envelope.ToolEvent, final *Record) error {
	data, err := ev.AppendJSON(nil)
	if err != nil {
		return err
	}
	n := r.events + 1
	e := &entry{Kind: kindEvent, Record: Record{Attempt: r.attempt}, N: n, Event: data}
	room := int(s.nc.MaxPayload()) - wire.ChunkOverhead
	if final != nil {
		e.Record = *final
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
	if err := s.appendE(ctx, r, e, ""); err != nil {
		return err
	}
	r.events, r.bytes = n, r.bytes+int64(len(data))
	return nil
}

// recordRoom is what a final record may take of a log message beside
// its terminal event.
const recordRoom = 2 << 10

// finish records a task's terminal event with its final record, in one
// entry, and settles the task; the notice that wakes its waiters carries
// that record, so no one reads it back.
func (s *Service) finish(ctx context.Context, r *attemptRun, ev envelope.ToolEvent) {
	rec := r.q.record(stateOf(ev), r.attempt, r.events+1)
	rec.Code, rec.WorkerID = string(ev.Code), r.worker
	err := s.recordWith(ctx, r, ev, &rec)
	if errors.Is(err, errConflict) { // another party ended the task first
		s.rejudge(ctx, r)
		return
	}
	if err != nil {
		// A pause, not at once: the store may be full until the retention
		// makes room.
		_ = r.m.NakWithDelay(time.Second)
		return
	}
	rec.Events, rec.TerminalSeq = r.events, r.lastE
	if data, err := ev.AppendJSON(nil); err == nil && len(data) <= inlineTerminal {
		rec.Terminal = data
	}
	s.notify(r.q.Owner, &rec, noticeChanged)
	_ = r.m.Ack()
	// The task's events count against its owner's bytes from now on.
	if err := s.charge(ctx, r.q.Owner, 0, r.bytes, false); err != nil {
		s.log.Warn("task usage: the bytes of an ended task were not counted", "task", r.q.TaskID, "err", err)
	}
}

// inlineTerminal is the largest terminal event a record carries itself;
// a larger one is read from its own entry.
const inlineTerminal = 16 << 10

// settleEnded acks the submit entry of a task that has ended. The end is
// in the log already, so the ack need not be confirmed: a lost one
// redelivers the task, which is found ended and settled again.
func (s *Service) settleEnded(r *attemptRun) {
	_ = r.m.Ack()
}

// stateOf is the final state a terminal event gives a task.
func stateOf(ev envelope.ToolEvent) string {
	switch {
	case ev.Type == envelope.EventResult:
		return Succeeded
	case ev.Code == envelope.CodeCancelled:
		return Cancelled
	default:
		return Failed
	}
}

// keepAlive proves to the stream that the queued call is being worked
// on: an in-progress ack every third of the ack wait until stop.
func (s *Service) keepAlive(m jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(s.cfg.ackWait / 3)
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
