package liveness

import (
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Settling a call no worker has named (protocol v2, §8.2, "Picked up
// before it runs"). A worker starts a call only after the NATS server has
// confirmed a heartbeat naming it, and only when that confirmation came
// before the call's pickup cutoff. So a heartbeat naming a call that
// started was routed to the caller before the cutoff (give or take the
// hosts' clock skew, which SettleMargin covers). To know it has read
// everything routed to it up to a moment after that, the caller sends a
// request nobody answers, with a reply subject in its own inbox: the
// server answers it 503 when it processes it, behind every message it
// routed to the caller before, on the same subscription. When that
// marker — or the 503 of a probe of a gone worker, which is one too —
// comes back, a due call still unnamed did not run and will not: it ends
// with its Problem, ran "no".

// SettleMargin is how long after a call's pickup cutoff a marker must
// have been sent to settle it: the clock skew between worker and caller
// the guarantee tolerates (and, across a cluster, the route's delay).
func (j *Judge) SettleMargin() time.Duration { return j.Heartbeat }

// Settles reports whether a marker sent at sent settles a due, unnamed
// call whose pickup cutoff is pickup, the connection having last come
// back at reconnected.
func (j *Judge) Settles(sent, pickup, reconnected time.Time) bool {
	return !sent.Before(pickup.Add(j.SettleMargin())) &&
		// A connection lost since the call was sent may have lost the
		// heartbeat naming it: nothing is proved then.
		reconnected.Before(pickup.Add(-j.PickupCutoff))
}

// Unnamed is the Problem of a call settled unnamed: ran "no", unless
// the call accepted "maybe" (maybe=1), which lets a worker whose spec of
// the tool is idempotent or read-only, or that got an idempotency key,
// start it without the server's confirmation of a heartbeat naming it —
// so it may have run, unnamed.
func Unnamed(prob *envelope.Problem, maybe bool) *envelope.Problem {
	if maybe {
		return prob.WithRan(envelope.RanMaybe)
	}
	return prob.WithRan(envelope.RanNo)
}

// MarkerPatience is how long a due call waits for a settle marker's
// answer: 3 intervals, or 30 while the inbox has a backlog (the answer
// may be queued behind it, unread).
func (j *Judge) MarkerPatience(backlog bool) time.Duration {
	if backlog {
		return SilentBeats * j.Heartbeat
	}
	return wire.MissedBeats * j.Heartbeat
}

// Unconfirmed is the Problem of a due call that no marker settled within
// MarkerPatience: without the marker's answer nothing is proved, so it
// may have run.
func Unconfirmed(prob envelope.Problem) *envelope.Problem {
	prob.Detail += "; but this caller could not confirm that no heartbeat naming it was on its way, so it may have run"
	return prob.WithRan(envelope.RanMaybe)
}
