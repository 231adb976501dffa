package tasks

import (
	"sync"
	"time"

	"github.com/toolmesh/toolmesh/caller"
)

// ownerCallers are the callers that run attempts, one per owner with
// attempts running on this instance. A worker counts the calls of its
// own account (no server-stamped identity: the task service is one of
// the operator's components there) per caller id, so with a caller per
// owner each owner's attempts take that owner's share of the worker
// (Config.Limits.MaxPerIdentity), not one share that every owner's
// attempts fill together: one owner's flood then delays only that
// owner's tasks at the worker too. A tenant's own calls reach a worker
// stamped with the tenant's identity, whatever caller ids it makes up,
// so this gives a tenant nothing it could claim itself.
type ownerCallers struct {
	mu      sync.Mutex
	byOwner map[string]*ownerCaller
}

// ownerCaller is one owner's caller and how many attempts use it.
type ownerCaller struct {
	c    *caller.Caller
	refs int
	idle time.Time // when refs last went to 0
}

// callerIdle is how long an owner's caller stays open with no attempt:
// an owner's next task within it reuses the caller (no subscription made
// per task).
const callerIdle = time.Minute

// callerFor is the caller that runs owner's attempts; release says the
// attempt no longer uses it.
func (s *Service) callerFor(owner string) (c *caller.Caller, release func(), err error) {
	s.owners.mu.Lock()
	defer s.owners.mu.Unlock()
	oc := s.owners.byOwner[owner]
	if oc == nil {
		c, err := caller.New(s.nc, s.callerConfig())
		if err != nil {
			return nil, nil, err
		}
		oc = &ownerCaller{c: c}
		s.owners.byOwner[owner] = oc
	}
	oc.refs++
	return oc.c, func() {
		s.owners.mu.Lock()
		defer s.owners.mu.Unlock()
		if oc.refs--; oc.refs == 0 {
			oc.idle = time.Now()
		}
	}, nil
}

// callerConfig is the configuration of the service's callers: workers
// answer on the service's own inbox under <p>.tasks, which permissions
// can grant them (deploy/secure).
func (s *Service) callerConfig() caller.Config {
	return caller.Config{Prefix: s.cfg.Prefix, Heartbeat: s.cfg.heartbeat,
		InboxPrefix: s.names.base + ".inbox", KeepCallsAcrossReconnect: true,
		Retries: caller.NoRetries, Logger: s.log}
}

// closeIdleCallers closes, every callerIdle, the owners' callers no
// attempt has used for that long (Close closes the rest).
func (s *Service) closeIdleCallers() {
	defer s.wg.Done()
	t := time.NewTicker(callerIdle)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.closeCallers(func(oc *ownerCaller) bool { return oc.refs == 0 && time.Since(oc.idle) >= callerIdle })
		}
	}
}

// closeCallers closes and forgets the owners' callers that close says to.
func (s *Service) closeCallers(close func(*ownerCaller) bool) {
	s.owners.mu.Lock()
	var done []*caller.Caller
	for owner, oc := range s.owners.byOwner {
		if close(oc) {
			done = append(done, oc.c)
			delete(s.owners.byOwner, owner)
		}
	}
	s.owners.mu.Unlock()
	for _, c := range done {
		_ = c.Close()
	}
}
