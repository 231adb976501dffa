package caller

import (
	"strings"
	"time"

	"github.com/toolmesh/toolmesh/caller/internal/liveness"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh"
)

// Settling a call no worker has named (protocol v2, §8.2, "Picked up
// before it runs"). A worker starts a call only after the NATS server has
// confirmed a heartbeat naming it, and only when that confirmation came
// before the call's pickup cutoff. So a heartbeat naming a call that
// started was routed to this caller before the cutoff (give or take the
// hosts' clock skew, which settleMargin covers). To know it has read
// everything routed to it up to a moment after that, the caller sends a
// request nobody answers, with a reply subject in its own inbox: the
// server answers it 503 when it processes it, behind every message it
// routed to this caller before, on the same subscription. When that
// marker — or the 503 of a probe of a gone worker, which is one too —
// comes back, a due call still unnamed did not run and will not: it ends
// with its Problem, ran "no".

// settleMargin is how long after a call's pickup cutoff a marker must
// have been sent to settle it: the clock skew between worker and caller
// the guarantee tolerates (and, across a cluster, the route's delay).
func (c *Caller) settleMargin() time.Duration { return c.cfg.Heartbeat }

// settleLater holds prob for p until a settle marker shows p unnamed; it
// reports whether p newly waits for one.
func (p *pending) settleLater(prob *envelope.Problem, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dueLocked() != nil || p.terminalQueued {
		return false
	}
	r := p.more()
	r.due, r.dueAt = prob, now
	return true
}

// sendSettleMarker sends a settle marker: a request on a control subject
// no worker subscribes to, which the server answers 503.
func (c *Caller) sendSettleMarker(now time.Time) {
	tok := c.markers.Next(now, c.cfg.Heartbeat/2)
	if tok == "" {
		return
	}
	subject := c.subjects.Control(settleSubjectToken + "." + c.cfg.ID)
	if err := c.nc.PublishRequest(subject, c.inbox+tok, []byte(`{"op":"beat"}`)); err != nil {
		c.log.Debug("settle marker not sent", "err", err)
	}
}

// settleSubjectToken names the control subject of settle markers: not a
// worker pool's, so no worker holds it.
const settleSubjectToken = "_settle"

// onProbeAnswer takes a 503 on a probe's or a settle marker's reply
// subject and reports whether it was one: a probe's says its worker is
// gone; either settles the calls due before it was sent.
func (c *Caller) onProbeAnswer(subject string) bool {
	tok := subject[strings.LastIndexByte(subject, '.')+1:]
	var at time.Time
	var ok bool
	switch {
	case strings.HasPrefix(tok, liveness.ProbeTokenPrefix):
		at, ok = c.probes.Gone(tok)
	case strings.HasPrefix(tok, liveness.MarkerTokenPrefix):
		at, ok = c.markers.Take(tok)
	default:
		return false
	}
	if ok {
		c.settle(at)
	}
	return true
}

// settle ends every due call whose pickup cutoff, plus settleMargin, was
// past when the marker answered now was sent, and that no worker named
// before it: its Problem says it did not run. It runs on the inbox's
// goroutine, after every message the marker followed.
func (c *Caller) settle(sent time.Time) {
	reconnected := time.Unix(0, c.reconnected.Load())
	c.mu.Lock()
	calls := c.snapshot()
	c.mu.Unlock()
	margin, cutoff := c.settleMargin(), c.cfg.PickupCutoff
	for _, p := range calls {
		p.mu.Lock()
		prob := p.dueLocked()
		pickup := c.at(p.pickup)
		ready := prob != nil && !p.spoken && !p.terminalQueued && !sent.Before(pickup.Add(margin)) &&
			// A connection lost since the call was sent may have lost
			// the heartbeat naming it: nothing is proved then.
			reconnected.Before(pickup.Add(-cutoff))
		p.mu.Unlock()
		if ready {
			p.fail(unnamedRan(prob, p.maybe), false)
		}
	}
}

// unnamedRan is the Problem of a call settled unnamed: ran "no", unless
// the call accepted "maybe" (maybe=1), which lets a worker whose spec of
// the tool is idempotent or read-only, or that got an idempotency key,
// start it without the server's confirmation of a heartbeat naming it —
// so it may have run, unnamed.
func unnamedRan(prob *envelope.Problem, maybe bool) *envelope.Problem {
	if maybe {
		return prob.WithRan(envelope.RanMaybe)
	}
	return prob.WithRan(envelope.RanNo)
}

// markerPatience is how long a due call waits for a settle marker's
// answer: 3 intervals, or 30 while the inbox has a backlog (the answer
// may be queued behind it, unread).
func (c *Caller) markerPatience(backlog bool) time.Duration {
	if backlog {
		return silentBeats * c.cfg.Heartbeat
	}
	return mesh.MissedBeats * c.cfg.Heartbeat
}

// expireDue ends, as "may have run", a due call no marker settled within
// MissedBeats intervals: without the marker's answer nothing is proved.
func (p *pending) expireDue(now time.Time, after time.Duration) {
	p.mu.Lock()
	prob := p.dueLocked()
	expired := prob != nil && !p.spoken && now.Sub(p.rare.dueAt) > after
	p.mu.Unlock()
	if expired {
		maybe := *prob
		maybe.Detail += "; but this caller could not confirm that no heartbeat naming it was on its way, so it may have run"
		p.fail(maybe.WithRan(envelope.RanMaybe), false)
	}
}
