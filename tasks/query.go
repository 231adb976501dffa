package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
)

// lookup reads the record of one of owner's tasks; withTerminal adds the
// terminal event of an ended task.
func (s *Service) lookup(ctx context.Context, owner, id string, withTerminal bool) (Record, *envelope.Problem) {
	if _, err := ulid.ParseStrict(id); err != nil || len(id) != ulid.EncodedSize {
		return Record{}, envelope.Problemf(envelope.CodeTaskNotFound, "no task has the id %q", id)
	}
	last, err := s.lastEntry(ctx, s.names.taskFilter(owner, id))
	if err != nil {
		return Record{}, asProblem(err)
	}
	if last == nil {
		return Record{}, s.missing(id)
	}
	rec, err := s.recordFrom(ctx, s.names.taskPrefix(owner, id)+".q.>", last)
	if err != nil {
		return rec, asProblem(err)
	}
	if !withTerminal {
		rec.Terminal = nil
	}
	if withTerminal && rec.TerminalSeq != 0 && len(rec.Terminal) == 0 {
		if e, err := s.entryAt(ctx, rec.TerminalSeq, ""); err == nil && e != nil {
			rec.Terminal, _ = s.eventJSON(ctx, &e.entry)
		}
	}
	return rec, nil
}

// missing is the Problem of an id whose log is gone: expired when the id's
// time is older than the retention (§22.7), not found otherwise.
func (s *Service) missing(id string) *envelope.Problem {
	u := ulid.MustParse(id)
	age := time.Since(ulid.Time(u.Time()))
	if age > s.cfg.Retention {
		return envelope.Problemf(envelope.CodeTaskExpired,
			"task %s was submitted %s ago, past the retention of %s; its events and result are gone",
			id, age.Round(time.Second), s.cfg.Retention).WithExtension("retention_ms", s.cfg.Retention.Milliseconds())
	}
	return envelope.Problemf(envelope.CodeTaskNotFound, "no task of yours has the id %s", id)
}

// recordFrom derives a task's record from its last entry; submit is the
// filter of its submit entry, read when the last entry is an event.
func (s *Service) recordFrom(ctx context.Context, submit string, last *stored) (Record, error) {
	if last.Kind == kindTask {
		return last.Record, nil
	}
	if _, ok := last.terminal(); ok && last.TaskID != "" { // the terminal carries the final record
		rec := last.Record
		rec.TerminalSeq = last.seq
		if len(last.Event) <= inlineTerminal {
			rec.Terminal = last.Event
		}
		return rec, nil
	}
	first, err := s.entryAt(ctx, 1, submit)
	if err != nil || first == nil {
		return Record{}, errors.Join(err, errors.New("the task's first entry is gone"))
	}
	rec := first.Record
	rec.Attempt, rec.Events, rec.State = last.Attempt, last.N, Running
	if ev, err := envelope.ParseEvent(last.Event); err == nil && ev.Type == envelope.EventQuestion {
		rec.State, rec.Question = InputRequired, last.Event
	}
	if ev, ok := last.terminal(); ok {
		rec.State, rec.Code, rec.TerminalSeq = stateOf(ev), string(ev.Code), last.seq
	}
	return rec, nil
}

// watch streams a task's events from the first (or from), in order and
// each once, then the live ones, then answers the record (§22.4).
func (s *Service) watch(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
	var a taskIDReq
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	owner := ownerKey(req.Identity)
	if _, prob := s.lookup(ctx, owner, a.TaskID, false); prob != nil {
		return nil, prob
	}
	cons, err := s.js.OrderedConsumer(ctx, s.names.logStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.names.taskFilter(owner, a.TaskID)}, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, asProblem(err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, asProblem(err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	if err := s.relay(ctx, it, a, emit); err != nil {
		return nil, err
	}
	rec, prob := s.lookup(ctx, owner, a.TaskID, false)
	if prob != nil {
		return nil, prob
	}
	return rec, nil
}

// relay sends the log's events as deltas until the terminal.
func (s *Service) relay(ctx context.Context, it jetstream.MessagesContext, a taskIDReq, emit worker.Emitter) error {
	want := 1
	for {
		m, err := it.Next()
		if err != nil {
			return ctxProblem(ctx, err)
		}
		var e entry
		if err := json.Unmarshal(m.Data(), &e); err != nil || e.Kind != kindEvent || e.N < want {
			continue
		}
		if e.N > want {
			return envelope.Problemf(envelope.CodeTaskExpired,
				"the task's events before number %d are past the retention of %s", e.N, s.cfg.Retention)
		}
		want++
		if e.N >= a.From {
			if err := s.emitEvent(ctx, &e, emit); err != nil {
				return err
			}
		}
		if _, ok := e.terminal(); ok {
			return nil
		}
	}
}

// emitEvent sends one task event as a watch delta.
func (s *Service) emitEvent(ctx context.Context, e *entry, emit worker.Emitter) error {
	data, err := s.eventJSON(ctx, e)
	if err != nil {
		return asProblem(err)
	}
	b := make([]byte, 0, len(data)+40)
	b = append(b, `{"n":`...)
	b = strconv.AppendInt(b, int64(e.N), 10)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(e.Attempt), 10)
	b = append(b, `,"event":`...)
	b = append(b, data...)
	b = append(b, '}')
	return emit.Delta(json.RawMessage(b))
}

// cancelTask cancels a task (§22.6): a queued one at once, by a write that
// wins or loses against the dispatch mark; a running one through the
// instance that runs it.
func (s *Service) cancelTask(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	var a taskIDReq
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	owner := ownerKey(req.Identity)
	for range 16 {
		if _, prob := s.lookup(ctx, owner, a.TaskID, false); prob != nil {
			return nil, prob
		}
		last, err := s.lastEntry(ctx, s.names.taskFilter(owner, a.TaskID))
		if err != nil || last == nil {
			return nil, asProblem(errors.Join(err, errors.New("the task's log is gone")))
		}
		rec, err := s.recordFrom(ctx, s.names.taskPrefix(owner, a.TaskID)+".q.>", last)
		if err != nil {
			return nil, asProblem(err)
		}
		if terminal(rec.State) {
			return s.lookupOrProblem(ctx, owner, a.TaskID)
		}
		if rec.State != Queued || last.Dispatched > 0 {
			// Running, or offered to the workers (one may be starting it):
			// the instance running it cancels its call; wait for the task
			// to end, or to go back to queued, then judge again.
			if err := s.killRunning(ctx, owner, a.TaskID); err != nil {
				return nil, err
			}
			continue
		}
		expect := last.seq
		if last.isSubmit() {
			expect = 0
		}
		final, err := s.cancelQueued(ctx, owner, rec, expect)
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return nil, asProblem(err)
		}
		if rec.Rerunnable {
			// A re-runnable task has no dispatch mark: an instance may have
			// its attempt under way.
			_ = s.nc.Publish(s.names.killSubject(a.TaskID), nil)
		}
		s.notify(owner, &final, noticeChanged)
		return final, nil
	}
	return nil, envelope.NewProblem(envelope.CodeOverloaded, "the task kept changing state; cancel again").WithRetryAfter(1)
}

// lookupOrProblem answers a task's record with its terminal.
func (s *Service) lookupOrProblem(ctx context.Context, owner, id string) (any, error) {
	rec, prob := s.lookup(ctx, owner, id, true)
	if prob != nil {
		return nil, prob
	}
	return rec, nil
}

// cancelQueued ends a queued task before it runs, if it has not moved
// since its last entry (expect): one write, the terminal with the final
// record.
func (s *Service) cancelQueued(ctx context.Context, owner string, rec Record, expect uint64) (Record, error) {
	msg := "the task was cancelled while queued; it never ran"
	if rec.Rerunnable {
		msg = "the task was cancelled while queued"
	}
	ev := envelope.ErrorEvent(envelope.NewProblem(envelope.CodeCancelled, msg))
	data, err := ev.AppendJSON(nil)
	if err != nil {
		return rec, err
	}
	n := rec.Events + 1
	rec.State, rec.Code, rec.Events, rec.Updated = Cancelled, string(envelope.CodeCancelled), n, stamp(time.Now())
	rec.Terminal, rec.Waiting, rec.Question = nil, "", nil
	ack, err := s.appendEntry(ctx, s.names.eventSubject(owner, rec.TaskID),
		&entry{Kind: kindEvent, Record: rec, N: n, Event: data}, "", expect)
	if err != nil {
		return rec, err
	}
	rec.TerminalSeq, rec.Terminal = ack.Sequence, data
	return rec, nil
}

// killRunning asks the instance running a task to cancel it and waits (a
// while) for the task to change state.
func (s *Service) killRunning(ctx context.Context, owner, id string) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	changed, stop := s.awaitChange(s.names.doneSubject(owner, id))
	defer stop()
	if err := s.nc.Publish(s.names.killSubject(id), nil); err != nil {
		return err
	}
	select {
	case <-changed:
	case <-wctx.Done():
	}
	return nil
}

// lsReq is the ls tool's args.
type lsReq struct {
	State string `json:"state"`
	Limit int    `json:"limit"`
}

// list answers the caller's own tasks, newest first (§22.4).
func (s *Service) list(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	a := lsReq{Limit: 100}
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	owner := ownerKey(req.Identity)
	prefix := s.names.base + ".log." + owner + "."
	info, err := retry(ctx, func(ctx context.Context) (*jetstream.StreamInfo, error) {
		return s.logs.Info(ctx, jetstream.WithSubjectFilter(prefix+"*.q.>"))
	})
	if err != nil {
		return nil, asProblem(err)
	}
	ids := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		id, _, _ := strings.Cut(strings.TrimPrefix(subj, prefix), ".")
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	out := []Record{}
	for _, id := range ids {
		if len(out) >= a.Limit {
			break
		}
		rec, prob := s.lookup(ctx, owner, id, false)
		if prob == nil && (a.State == "" || rec.State == a.State) {
			out = append(out, rec)
		}
	}
	return map[string]any{"tasks": out}, nil
}
