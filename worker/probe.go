package worker

import (
	"strings"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"
)

// suspectCaller is called when c's caller has not proved itself alive for
// its lease. Silence alone does not prove death — a live caller can only
// send liveness to a worker it has heard from, and a flood can keep this
// worker's words queued unread — so the worker asks the caller itself,
// once per caller however many of its calls wait: a probe on
// <inbox>.<caller-id>.alive (wire.ProbeToken) carrying this worker's id,
// with the reply subject <ctl>.<worker-id>.<caller-id>. A live caller
// answers with a liveness control message; a gone caller has no
// subscription left, so the server answers the reply subject with "503 no
// responders" at once. Only that, or no answer within the lease, cancels
// the caller's calls.
//
// A call that crossed a NATS account boundary (a service import: its
// caller's identity is stamped on it) has a reply subject the server made
// for that one reply, so no probe can reach its caller; such a caller's
// calls are cancelled when its lease runs out, as before probes existed.
func (w *Worker) suspectCaller(c *call) {
	k := c.callerKey()
	if k.identity != "" {
		w.cancelCaller(k)
		return
	}
	w.callsMu.Lock()
	if _, out := w.probing[k]; out {
		w.callsMu.Unlock()
		return
	}
	answer := make(chan bool, 1)
	w.probing[k] = answer
	w.callsMu.Unlock()
	if err := w.nc.PublishMsg(w.probeMsg(c)); err != nil {
		w.log.Debug("caller probe not sent", "caller_id", c.callerID, "err", err)
	}
	go w.awaitProbe(k, answer, wire.MissedBeats*c.interval)
}

// awaitProbe waits for the probe's answer and cancels the caller's calls
// unless it proved alive.
func (w *Worker) awaitProbe(k callKey, answer chan bool, wait time.Duration) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	alive := false
	select {
	case alive = <-answer:
	case <-timer.C:
	case <-w.stopCtx.Done():
		alive = true // stopping cancels everything anyway
	}
	w.callsMu.Lock()
	delete(w.probing, k)
	w.callsMu.Unlock()
	if !alive {
		w.cancelCaller(k)
	}
}

// cancelCaller cancels every call of the caller k.
func (w *Worker) cancelCaller(k callKey) {
	w.callsMu.Lock()
	defer w.callsMu.Unlock()
	p := w.peers[k]
	if p == nil {
		return
	}
	w.log.Info("caller lost: cancelling its calls", "caller_id", k.id, "calls", len(p.calls))
	for c := range p.calls {
		c.cancel(errCallerLost)
	}
}

// onProbeReply receives the server's no-responders answer to a probe.
// Probes go only to callers in the worker's own account, so an answer
// stamped with an identity came through a service import: a tenant
// forging "no responders" to end another's calls. It is ignored.
func (w *Worker) onProbeReply(m *nats.Msg) {
	callerID := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if wire.Header(m.Header, "Status") != "503" || wire.Identity(m.Header) != "" {
		return // liveness itself arrives as a control message
	}
	w.callsMu.Lock()
	w.answerProbeLocked(callKey{"", callerID}, false)
	w.callsMu.Unlock()
}

// answerProbeLocked delivers a probe's answer, if one is out; callsMu held.
func (w *Worker) answerProbeLocked(k callKey, alive bool) {
	if ch, ok := w.probing[k]; ok {
		select {
		case ch <- alive:
		default:
		}
	}
}
