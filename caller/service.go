package caller

import (
	"sync"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/callsettings"
)

// services holds the callers of mesh services a Caller has made (see
// Service), closed with it.
type services struct {
	mu     sync.Mutex
	m      map[string]*Caller
	closed bool
}

// Service returns the caller of the mesh service that answers under
// <prefix>.<name> — the task service's API is "tasks" (docs/protocol.md
// §22) — made on first use and closed with c. It shares c's connection
// and configuration but has an id of its own, no middleware and no
// retries: a service's client repeats what the service allows it to.
// Packages that wrap a service in a typed client (package tasks) call it.
func (c *Caller) Service(name string) (*Caller, error) {
	s := &c.services
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, c.problems.New(envelope.CodeCancelled, "the caller was closed")
	}
	if sc := s.m[name]; sc != nil {
		return sc, nil
	}
	cfg := c.cfg
	cfg.ID, cfg.Prefix, cfg.Middleware = "", c.subjects.Root()+"."+name, nil
	cfg.Retries = NoRetries
	sc, err := New(c.nc, cfg)
	if err != nil {
		return nil, err
	}
	if s.m == nil {
		s.m = map[string]*Caller{}
	}
	s.m[name] = sc
	return sc, nil
}

// close closes the service callers and refuses new ones.
func (s *services) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, sc := range s.m {
		_ = sc.Close()
	}
}

// Settings returns what opts come to on c, the caller's own
// (Config.Options) applied first: what a client of a service that carries
// a call on reads of them (package tasks sends them with a durable task).
// The shape is the module's own.
func (c *Caller) Settings(opts ...Option) callsettings.Settings {
	o := c.applyOptions(opts)
	return callsettings.Settings{Bearer: o.bearer, IdempotencyKey: o.idempotencyKey, Idempotent: o.idempotent,
		Folded: o.fold, Timeout: o.timeout, PickupTimeout: c.cfg.PickupTimeout}
}
