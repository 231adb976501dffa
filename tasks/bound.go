package tasks

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// openTasks counts each owner's tasks of each tool submitted through this
// instance and not yet ended (it hears every task's end, on
// <p>.tasks.done.>): the bound MaxQueuedPerTool, per instance as the
// running bounds are, without a write or a read of the stream per submit.
type openTasks struct {
	byTool map[string]map[string]time.Time // owner+" "+tool → task id → its deadline (Service.mu)
}

// admit counts a new task of owner's, or refuses it overloaded when the
// owner already has the bound of tool's tasks not yet ended. A task past
// its deadline no longer counts: its end was not heard, but it has one.
func (s *Service) admit(q *queuedCall) error {
	key := q.Owner + " " + q.Tool
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.open.byTool[key]
	if ids == nil {
		ids = map[string]time.Time{}
		s.open.byTool[key] = ids
	}
	if int64(len(ids)) >= s.cfg.MaxQueuedPerTool {
		now := time.Now()
		for id, deadline := range ids {
			if now.After(deadline.Add(time.Minute)) {
				delete(ids, id)
			}
		}
	}
	if int64(len(ids)) >= s.cfg.MaxQueuedPerTool {
		return envelope.Problemf(envelope.CodeOverloaded, "your task queue of tool %s is full (%d of your tasks not yet ended); no task was made",
			q.Tool, s.cfg.MaxQueuedPerTool).WithRetryAfter(1)
	}
	ids[q.TaskID] = q.Deadline
	return nil
}

// forget uncounts a task that ended, or that was never made.
func (s *Service) forget(owner, tool, id string) {
	key := owner + " " + tool
	s.mu.Lock()
	defer s.mu.Unlock()
	if ids := s.open.byTool[key]; ids != nil {
		delete(ids, id)
		if len(ids) == 0 {
			delete(s.open.byTool, key)
		}
	}
}

// countNotice uncounts a task that ended, from the notice's subject and
// headers alone.
func (s *Service) countNotice(m *nats.Msg) {
	switch m.Header.Get(hdrNotice) {
	case noticeEnded, noticeFinal:
		rest := strings.TrimPrefix(m.Subject, s.names.base+".done.")
		owner, id, _ := strings.Cut(rest, ".")
		s.forget(owner, m.Header.Get(hdrTool), id)
	}
}

// notify publishes a notice of a task's change on its done subject: the
// record as it now stands, and what changed (a terminal state makes it
// noticeEnded, or noticeFinal when the record carries its terminal).
func (s *Service) notify(owner string, rec *Record, kind string) {
	if terminal(rec.State) {
		kind = noticeEnded
		if len(rec.Terminal) > 0 && rec.TerminalSeq != 0 {
			kind = noticeFinal
		}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return
	}
	m := &nats.Msg{Subject: s.names.doneSubject(owner, rec.TaskID), Data: data,
		Header: nats.Header{hdrNotice: []string{kind}, hdrInstance: []string{s.instance}, hdrTool: []string{rec.Tool}}}
	// Waits here are woken at once, not after the notice's trip through
	// the server; other instances' waits hear the notice.
	s.wakeWaits(m.Subject, notice{record: data, final: kind == noticeFinal})
	_ = s.nc.PublishMsg(m)
}
