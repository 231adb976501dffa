package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/envelope"
)

// usage is what one owner's tasks keep in the store: per slot of time
// (a 240th of the retention, at least a minute) the tasks submitted and
// the bytes charged then (args at submit, events at a task's end). A slot
// older than the retention is dropped, as its tasks' logs are (§22.7).
type usage struct {
	Slots [][3]int64 `json:"s"` // [slot number, tasks, bytes]
}

// slotSeconds is the length of a usage slot.
func (s *Service) slotSeconds() int64 {
	return max(int64(s.cfg.Retention/time.Second)/240, 60)
}

// quotas reports whether any per-owner quota is set: without one the
// ledger is never touched, and a submit costs no extra round trip.
func (s *Service) quotas() bool {
	return s.cfg.MaxTasksPerOwner > 0 || s.cfg.MaxBytesPerOwner > 0
}

// charge adds tasks and bytes to owner's usage. With check, a charge that
// would pass a quota is refused with task_quota_exceeded and nothing is
// charged. The ledger entry is updated with compare-and-set, so that any
// number of instances keep one count.
func (s *Service) charge(ctx context.Context, owner string, tasks, bytes int64, check bool) error {
	if !s.quotas() {
		return nil
	}
	for range 32 {
		u, rev, err := s.usageOf(ctx, owner)
		if err != nil {
			return err
		}
		slot := s.slotSeconds()
		now := time.Now().Unix() / slot
		u.prune(now - int64(s.cfg.Retention/time.Second)/slot - 1)
		if check {
			if p := s.overQuota(u, tasks, bytes); p != nil {
				return p
			}
		}
		u.add(now, tasks, bytes)
		data, err := json.Marshal(u)
		if err != nil {
			return err
		}
		_, err = s.js.PublishMsg(ctx, &nats.Msg{Subject: s.usageSubject(owner), Data: data},
			jetstream.WithExpectLastSequencePerSubject(rev))
		var apiErr *jetstream.APIError
		if err == nil {
			return nil
		}
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
			return err
		}
	}
	return envelope.NewProblem(envelope.CodeOverloaded, "too many submits at once changed this identity's task usage; submit again").WithRetryAfter(1)
}

// usageOf reads owner's usage and its revision (0: none yet).
func (s *Service) usageOf(ctx context.Context, owner string) (usage, uint64, error) {
	var u usage
	m, err := retry(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return s.usage.GetLastMsgForSubject(ctx, s.usageSubject(owner))
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return u, 0, nil
	}
	if err != nil {
		return u, 0, err
	}
	if err := json.Unmarshal(m.Data, &u); err != nil {
		return usage{}, m.Sequence, nil // unreadable: counted afresh
	}
	return u, m.Sequence, nil
}

// usageSubject is the subject of owner's usage message.
func (s *Service) usageSubject(owner string) string { return s.names.base + ".use." + owner }

// overQuota is the Problem of a charge that would pass a quota, or nil.
func (s *Service) overQuota(u usage, tasks, bytes int64) *envelope.Problem {
	usedTasks, usedBytes := u.total()
	switch {
	case s.cfg.MaxTasksPerOwner > 0 && usedTasks+tasks > s.cfg.MaxTasksPerOwner:
		return quotaProblem("tasks", usedTasks, s.cfg.MaxTasksPerOwner, s.cfg.Retention,
			"your identity keeps %d tasks within the retention of %s, the most the operator allows it; no task was made")
	case s.cfg.MaxBytesPerOwner > 0 && usedBytes+bytes > s.cfg.MaxBytesPerOwner:
		return quotaProblem("bytes", usedBytes, s.cfg.MaxBytesPerOwner, s.cfg.Retention,
			"your identity's tasks keep %d bytes within the retention of %s; this one would pass the quota the operator allows it; no task was made")
	}
	return nil
}

// quotaProblem is task_quota_exceeded for one quota.
func quotaProblem(quota string, used, limit int64, retention time.Duration, detail string) *envelope.Problem {
	return envelope.Problemf(envelope.CodeTaskQuotaExceeded, detail, used, retention).
		WithExtension("quota", quota).WithExtension("used", used).WithExtension("limit", limit)
}

// storeFull is the Problem of a submit the full task store refused.
func storeFull(err error) error {
	if err == nil || !strings.Contains(err.Error(), "maximum bytes") {
		return err
	}
	return envelope.NewProblem(envelope.CodeTaskQuotaExceeded,
		"the task store is full (the operator's bound on its size); no task was made").WithExtension("quota", "store")
}

// prune drops the slots before oldest.
func (u *usage) prune(oldest int64) {
	kept := u.Slots[:0]
	for _, m := range u.Slots {
		if m[0] >= oldest {
			kept = append(kept, m)
		}
	}
	u.Slots = kept
}

// add charges tasks and bytes to slot now.
func (u *usage) add(now, tasks, bytes int64) {
	if n := len(u.Slots); n > 0 && u.Slots[n-1][0] == now {
		u.Slots[n-1][1] += tasks
		u.Slots[n-1][2] += bytes
		return
	}
	u.Slots = append(u.Slots, [3]int64{now, tasks, bytes})
}

// total sums the usage.
func (u *usage) total() (tasks, bytes int64) {
	for _, m := range u.Slots {
		tasks += m[1]
		bytes += m[2]
	}
	return tasks, bytes
}
