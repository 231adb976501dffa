package caller

import (
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// confirmInbox round-trips to the server so a subscription its
// permissions refuse fails New, naming the subject, instead of leaving a
// caller whose every call times out. A round trip that does not complete
// (the connection is away) is not an error: the subscription is replayed.
func (c *Caller) confirmInbox() error {
	if err := c.nc.FlushTimeout(5 * time.Second); err != nil {
		return nil
	}
	if op, subject, ok := wire.Violation(c.nc.LastError()); ok && op == wire.OpSubscribe && (subject == c.sub.Subject || subject == c.probe.Subject) {
		return wire.ForbiddenProblem(c.problems.New, op, subject,
			"the caller's inbox cannot receive events; grant the subject to the caller's NATS user, or set Config.InboxPrefix to one it may subscribe to")
	}
	return nil
}

// onViolation routes a permissions violation NATS reported (see
// wire.OnViolation) to the calls it concerns: a call the server refused to
// publish fails at once with forbidden instead of waiting out its pickup
// timeout. A refused subscription of the workers' presence beacons is
// expected (it reports true): an identity may call tools under a prefix
// whose beacons it may not read — a tenant of deploy/secure calling the
// task service under <p>.tasks — and then hears none: it finds a dead
// worker only among those that named its calls (§8.2).
func (c *Caller) onViolation(op wire.Operation, subject string) bool {
	if op == wire.OpSubscribe && subject == c.subjects.PresenceAll() {
		c.log.Debug("the NATS server does not let this identity follow the workers' presence beacons; the caller hears none", "subject", subject)
		return true
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	calls := c.snapshot()
	c.mu.Unlock()
	for _, p := range calls {
		switch {
		case op == wire.OpSubscribe && subject == c.sub.Subject:
			// The inbox was refused (say, after a reconnect to a server
			// with other permissions): no call can hear its worker.
			p.fail(wire.ForbiddenProblem(c.problems.New, op, subject, "the caller's inbox receives nothing"), true)
		case op == wire.OpPublish && c.subjects.Call(p.tool) == subject && !p.liveness().Spoken:
			p.fail(wire.ForbiddenProblem(c.problems.New, op, subject,
				"this identity may not call tool "+p.tool), false)
		}
	}
	return false
}
