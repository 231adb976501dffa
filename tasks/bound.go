package tasks

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
)

// openTasks counts each owner's tasks of each tool not yet ended, as this
// instance hears them submitted and ended (the notices on
// <p>.tasks.done.>): the bound MaxQueuedPerTool without a write or a read
// of the stream per submit.
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

// countNotice counts a task another instance queued, and uncounts one
// that ended.
func (s *Service) countNotice(m *nats.Msg) {
	if len(m.Data) == 0 {
		return
	}
	kind := m.Header.Get(hdrNotice)
	if kind == noticeQueued && m.Header.Get(hdrInstance) == s.instance {
		return // counted when it was submitted here
	}
	var rec caller.TaskRecord
	if json.Unmarshal(m.Data, &rec) != nil || rec.TaskID == "" {
		return
	}
	owner := strings.TrimPrefix(m.Subject, s.names.base+".done.")
	owner, _, _ = strings.Cut(owner, ".")
	switch {
	case kind == noticeQueued:
		deadline, _ := time.Parse(time.RFC3339Nano, rec.Deadline)
		key := owner + " " + rec.Tool
		s.mu.Lock()
		if s.open.byTool[key] == nil {
			s.open.byTool[key] = map[string]time.Time{}
		}
		s.open.byTool[key][rec.TaskID] = deadline
		s.mu.Unlock()
	case caller.TaskTerminal(rec.State):
		s.forget(owner, rec.Tool, rec.TaskID)
	}
}

// notify publishes a notice of a task's change on its done subject: the
// record as it now stands (kind noticeQueued for a new task).
func (s *Service) notify(owner string, rec *caller.TaskRecord, kind string) {
	data, err := json.Marshal(rec)
	if err != nil {
		return
	}
	m := &nats.Msg{Subject: s.names.doneSubject(owner, rec.TaskID), Data: data,
		Header: nats.Header{hdrNotice: []string{kind}, hdrInstance: []string{s.instance}}}
	if kind != noticeQueued {
		// Waits here are woken at once, not after the notice's trip
		// through the server; other instances' waits hear the notice.
		s.wakeWaits(m.Subject, data)
	}
	_ = s.nc.PublishMsg(m)
}
