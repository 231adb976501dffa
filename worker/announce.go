package worker

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// announcer names calls to their callers before they start (protocol v2,
// §8.2, "Picked up before it runs"): a call whose caller is known starts
// only once a heartbeat naming it has been published AND the NATS server
// has confirmed it (a flush: the server routed the heartbeat before it
// answered). So a caller that has read everything the server routed to
// it before some moment, and heard nothing of a call, knows the call had
// not started by then — and, once the call's pickup cutoff is past, that
// it never will.
//
// One flush confirms every call queued since the last one: under load the
// cost is one round trip per round, not per call. Heartbeats the worker
// sends on its own schedule are confirmed by the same rounds, so a call
// they named before its cutoff may start later without another.
type announcer struct {
	w    *Worker
	mu   sync.Mutex
	name []*call // calls to name before they start
	// named are calls named by heartbeats already published, waiting for
	// a round's flush to confirm them.
	named []*call
	round *announceRound // the round the queued calls go out in
	wake  chan struct{}
	// stopped: run has returned, so no later round will settle; work
	// that would wait for one goes to a runner (see announceThen).
	stopped bool
	// busy: a round is being settled, by run or by a subscription's
	// goroutine (see settleOnReader); one round is in flight at a time,
	// and whoever ends it wakes run for the calls queued meanwhile.
	busy bool
}

// announceRound is one flush and the calls it confirms.
type announceRound struct {
	done chan struct{} // closed once the round is settled
	at   time.Time     // when the server confirmed the round (zero: it did not)
	// then is work of handlers declared Inline that waited only for this
	// round: the announcer runs it once the round is settled (see
	// announceThen).
	then []work
}

func newAnnouncer(w *Worker) *announcer {
	return &announcer{w: w, round: &announceRound{done: make(chan struct{})}, wake: make(chan struct{}, 1)}
}

// announce queues calls to be named in the next round and returns it.
func (a *announcer) announce(calls ...*call) *announceRound {
	a.mu.Lock()
	a.name = append(a.name, calls...)
	r := a.round
	a.mu.Unlock()
	a.signal()
	return r
}

// announceThen queues calls to be named in the next round, like
// announce, and j (their call or batch, of a handler declared Inline) to
// run once that round is settled, with the rest of the round's such work
// (see runThen): no goroutine waits for the round.
func (a *announcer) announceThen(j work, calls ...*call) {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		a.w.runOn(j) // no round will name j's calls: they end unrun there
		return
	}
	a.name = append(a.name, calls...)
	r := a.round
	r.then = append(r.then, j)
	for _, c := range calls {
		c.round = r // what call.announced waits on: settled when j runs
	}
	a.mu.Unlock()
	a.signal()
}

// runThen hands the work that waited for a settled round to one runner,
// which runs it all (see runSettled): one goroutine woken per round, not
// one waiting per call, and the announcer is free at once to settle the
// next round.
func (a *announcer) runThen(js []work) {
	if len(js) > 0 {
		a.w.runOn(work{settled: js})
	}
}

// runSettled runs the work of a settled round one after another on this
// goroutine, as the subscription's would run it (see call.runsInline); a
// call the round did not confirm in time is refused when it comes to
// start.
func runSettled(js []work) {
	for _, j := range js {
		if j.batch != nil {
			j.batch.runInline(j.calls, true)
		} else {
			j.c.w.runOnReader(j.c)
		}
	}
}

// confirm queues calls a published heartbeat named, for the next flush.
func (a *announcer) confirm(calls []*call) {
	if len(calls) == 0 {
		return
	}
	a.mu.Lock()
	a.named = append(a.named, calls...)
	a.mu.Unlock()
	a.signal()
}

func (a *announcer) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// run settles rounds until the worker stops; the round in progress when
// it stops is settled unconfirmed, so no call waits for it forever.
func (a *announcer) run() {
	for {
		select {
		case <-a.wake:
			a.settle()
		case <-a.w.stopCtx.Done():
			a.mu.Lock()
			r := a.round
			a.round = &announceRound{done: make(chan struct{})}
			a.stopped = true
			a.mu.Unlock()
			close(r.done)
			a.runThen(r.then)
			return
		}
	}
}

// settle settles the round of the calls queued to be named, unless one
// is already being settled (whoever settles it wakes run again when it
// ends), and hands the work that waited for it to a runner.
func (a *announcer) settle() {
	a.mu.Lock()
	if a.busy {
		a.mu.Unlock()
		return
	}
	name, named, r := a.takeLocked()
	a.mu.Unlock()
	a.confirmRound(name, named, r)
	a.endRound()
	a.runThen(r.then)
}

// settleOnReader settles the next round on this goroutine, the
// subscription's that read calls (sub, nil in tests), and runs j and
// the rest of the round's work here once the round is settled, as a
// nats.go micro endpoint would run the handler after a flush of its own:
// no goroutine is woken to flush, nor to run the handler. It does so
// only when no round is being settled and no message waits behind on
// sub, which would wait for the round trip too; it reports whether it
// did, having done nothing otherwise (the caller then queues j with
// announceThen).
func (a *announcer) settleOnReader(sub *nats.Subscription, j work, calls ...*call) bool {
	if sub != nil {
		// nats.go counts the message being delivered as pending until
		// its callback returns: more than one is a message behind it.
		if n, _, err := sub.Pending(); err != nil || n > 1 {
			return false
		}
	}
	a.mu.Lock()
	if a.busy || a.stopped {
		a.mu.Unlock()
		return false
	}
	a.name = append(a.name, calls...)
	a.round.then = append(a.round.then, j)
	name, named, r := a.takeLocked()
	for _, c := range calls {
		c.round = r // what call.announced waits on: settled when j runs
	}
	a.mu.Unlock()
	a.confirmRound(name, named, r)
	a.endRound() // the next round may start while this one's work runs
	runSettled(r.then)
	return true
}

// takeLocked takes the calls queued to be named and their round, to be
// settled by the caller, who must then call endRound; a.mu must be held.
func (a *announcer) takeLocked() (name, named []*call, r *announceRound) {
	name, named, r = a.name, a.named, a.round
	a.name, a.named, a.round = nil, nil, &announceRound{done: make(chan struct{})}
	a.busy = true
	return name, named, r
}

// endRound marks the round taken by takeLocked settled, waking run for
// the calls queued meanwhile.
func (a *announcer) endRound() {
	a.mu.Lock()
	a.busy = false
	more := len(a.name) > 0 || len(a.named) > 0 || len(a.round.then) > 0
	a.mu.Unlock()
	if more {
		a.signal()
	}
}

// confirmRound publishes the heartbeats of the calls to name, flushes
// once, and stamps every call of the round r with the server's
// confirmation; r is settled (done closed) when it returns.
func (a *announcer) confirmRound(name, named []*call, r *announceRound) {
	if len(name) == 0 && len(named) == 0 {
		close(r.done)
		return
	}
	a.publish(name)
	if err := a.w.nc.FlushTimeout(a.w.confirmTimeout); err != nil {
		a.w.log.Debug("heartbeats naming calls about to start not confirmed", "err", err)
		close(r.done) // unconfirmed: those calls do not start (see call.announced)
		return
	}
	at := time.Now()
	stamp := at.UnixNano()
	for _, c := range name {
		c.namedAt.CompareAndSwap(0, stamp)
	}
	for _, c := range named {
		c.namedAt.CompareAndSwap(0, stamp)
	}
	r.at = at
	close(r.done)
}

// publish sends one heartbeat per caller naming its calls in calls (in
// several when the ids outgrow a message), on one of its calls' reply
// subjects, as §8.1's beats are.
func (a *announcer) publish(calls []*call) {
	byPeer := map[callKey][]*call{}
	var order []callKey
	for _, c := range calls {
		k := c.callerKey()
		if _, ok := byPeer[k]; !ok {
			order = append(order, k)
		}
		byPeer[k] = append(byPeer[k], c)
	}
	limit := a.w.piece()
	for _, k := range order {
		cs := byPeer[k]
		head := wire.AppendBeatHead(nil, a.w.cfg.ID, cs[0].interval.Milliseconds())
		buf := append(make([]byte, 0, len(head)+len(cs)*27), head...)
		for _, c := range cs {
			if len(buf)+len(c.key.id)+1 > limit {
				a.w.publishBeat(cs[0], buf)
				buf = append(buf[:0], head...)
			}
			buf = append(append(buf, c.key.id...), ' ')
		}
		a.w.publishBeat(cs[0], buf)
	}
}
