package caller

import (
	"strings"
	"time"

	"github.com/toolmesh/toolmesh/caller/internal/liveness"
	"github.com/toolmesh/toolmesh/envelope"
)

// Settling a call no worker has named (protocol v2, §8.2, "Picked up
// before it runs"): liveness.Judge decides when a settle marker's answer
// proves a call unnamed (see caller/internal/liveness/settle.go); the
// caller sends the markers and ends the calls they settle.

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

// settle ends every due call that the marker answered now, sent at
// sent, settles (liveness.Judge.Settles) and that no worker named before
// it: its Problem says it did not run. It runs on the inbox's goroutine,
// after every message the marker followed.
func (c *Caller) settle(sent time.Time) {
	reconnected := time.Unix(0, c.reconnected.Load())
	c.mu.Lock()
	calls := c.snapshot()
	c.mu.Unlock()
	for _, p := range calls {
		p.mu.Lock()
		prob := p.dueLocked()
		ready := prob != nil && !p.spoken && !p.terminalQueued && c.judge.Settles(sent, c.at(p.pickup), reconnected)
		p.mu.Unlock()
		if ready {
			p.fail(liveness.Unnamed(prob, p.maybe), false)
		}
	}
}

// expireDue ends, as "may have run", a due call no marker settled within
// after (liveness.Judge.MarkerPatience): without the marker's answer
// nothing is proved.
func (p *pending) expireDue(now time.Time, after time.Duration) {
	p.mu.Lock()
	prob := p.dueLocked()
	expired := prob != nil && !p.spoken && now.Sub(p.rare.dueAt) > after
	p.mu.Unlock()
	if expired {
		p.fail(liveness.Unconfirmed(*prob), false)
	}
}
