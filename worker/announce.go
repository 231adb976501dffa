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
// One flush confirms every call queued for its round: under load the
// cost is one round trip per round, not per call, with up to maxRounds
// in flight at once. Heartbeats the worker
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
	// flights is how many rounds are being settled, by run or by
	// subscriptions' goroutines (see settleOnReader), at most maxRounds;
	// whoever ends one wakes run for the calls queued meanwhile.
	flights int
	// spareName and spareNamed are the emptied slices of a round
	// settled, and beat the buffer its heartbeats were written in: a
	// later round reuses them instead of allocating its own.
	spareName, spareNamed []*call
	beat                  []byte
}

// keepSpare bounds what a round's slices and buffer keep for the next:
// a burst's round does not pin its size for ever.
const keepSpare = 4096

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
		j.runNamed()
	}
}

// runNamed runs j, whose calls a settled round named, on this goroutine.
func (j work) runNamed() {
	if j.batch != nil {
		j.batch.runInline(j.calls, true)
	} else {
		j.c.w.runOnReader(j.c)
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

// settle settles the round of the calls queued to be named, unless
// maxRounds are being settled already (whoever settles one wakes run
// again when it ends), and hands the work that waited for it to a
// runner.
func (a *announcer) settle() {
	a.mu.Lock()
	if a.flights >= maxRounds {
		a.mu.Unlock()
		return
	}
	s := a.takeLocked()
	a.mu.Unlock()
	a.confirmRound(&s)
	a.endRound(&s)
	a.runThen(s.r.then)
}

// settleOnReader settles the next round on this goroutine, the
// subscription's that read calls (sub, nil in tests), and runs j and
// the rest of the round's work here once the round is settled, as a
// nats.go micro endpoint would run the handler after a flush of its own:
// no goroutine is woken to flush, nor to run the handler. It does so
// only when fewer than maxRounds are being settled and no message waits
// behind on sub, which would wait for the round trip too; it reports
// whether it did, having done nothing otherwise (the caller then queues
// j with announceThen).
func (a *announcer) settleOnReader(sub *nats.Subscription, j work, calls ...*call) bool {
	if sub != nil {
		// nats.go counts the message being delivered as pending until
		// its callback returns: more than one is a message behind it.
		if n, _, err := sub.Pending(); err != nil || n > 1 {
			return false
		}
	}
	a.mu.Lock()
	if a.flights >= maxRounds || a.stopped {
		a.mu.Unlock()
		return false
	}
	a.name = append(a.name, calls...)
	s := a.takeLocked()
	for _, c := range calls {
		c.round = s.r // what call.announced waits on: settled when j runs
	}
	a.mu.Unlock()
	a.confirmRound(&s)
	a.endRound(&s)       // the next round may start while this one's work runs
	runSettled(s.r.then) // work queued for the round before j
	j.runNamed()
	return true
}

// maxRounds is how many rounds may be in flight at once: a round that
// starts while another waits for the server's answer does not wait for
// it (each flush confirms what was published before it, the answers come
// in order), and the calls read meanwhile wait for no more than one
// round trip; beyond that, calls queue for the next round, so that
// under load one round trip confirms many calls.
const maxRounds = 2

// settling is a round taken to be settled: the calls it names, the
// calls earlier heartbeats named that it confirms, and the buffer its
// heartbeats are written in.
type settling struct {
	name, named []*call
	r           *announceRound
	beat        []byte
}

// takeLocked takes the calls queued to be named and their round, to be
// settled by the caller, who must then call endRound; a.mu must be held.
func (a *announcer) takeLocked() settling {
	s := settling{name: a.name, named: a.named, r: a.round, beat: a.beat}
	a.name, a.named, a.round = a.spareName, a.spareNamed, &announceRound{done: make(chan struct{})}
	a.spareName, a.spareNamed, a.beat = nil, nil, nil
	a.flights++
	return s
}

// endRound marks the round s settled, keeping its slices, emptied, and
// its buffer for a later round, and wakes run for the calls queued
// meanwhile.
func (a *announcer) endRound(s *settling) {
	clear(s.name) // the calls may end and go
	clear(s.named)
	a.mu.Lock()
	if cap(s.name) <= keepSpare && cap(s.named) <= keepSpare {
		a.spareName, a.spareNamed = s.name[:0], s.named[:0]
	}
	if cap(s.beat) <= keepSpare*32 {
		a.beat = s.beat[:0]
	}
	a.flights--
	more := len(a.name) > 0 || len(a.named) > 0 || len(a.round.then) > 0
	a.mu.Unlock()
	if more {
		a.signal()
	}
}

// confirmRound publishes the heartbeats of the calls s names, flushes
// once, and stamps every call of the round with the server's
// confirmation; the round is settled (done closed) when it returns.
func (a *announcer) confirmRound(s *settling) {
	r := s.r
	if len(s.name) == 0 && len(s.named) == 0 {
		close(r.done)
		return
	}
	a.publish(s)
	if err := a.w.nc.FlushTimeout(a.w.confirmTimeout); err != nil {
		a.w.log.Debug("heartbeats naming calls about to start not confirmed", "err", err)
		close(r.done) // unconfirmed: those calls do not start (see call.announced)
		return
	}
	at := time.Now()
	stamp := at.UnixNano()
	for _, c := range s.name {
		c.namedAt.CompareAndSwap(0, stamp)
	}
	for _, c := range s.named {
		c.namedAt.CompareAndSwap(0, stamp)
	}
	r.at = at
	close(r.done)
}

// publish sends one heartbeat per caller naming its calls in calls (in
// several when the ids outgrow a message), on one of its calls' reply
// subjects, as §8.1's beats are. Calls most often have one caller, whose
// heartbeat is written without sorting them by caller first.
func (a *announcer) publish(s *settling) {
	calls := s.name
	if len(calls) == 0 {
		return
	}
	first := calls[0].callerKey()
	for _, c := range calls[1:] {
		if c.callerKey() != first {
			a.publishByCaller(s)
			return
		}
	}
	a.publishTo(s, calls)
}

// publishByCaller sends the heartbeats of calls of several callers, one
// caller's after another in the order they first appear.
func (a *announcer) publishByCaller(s *settling) {
	calls := s.name
	byPeer := map[callKey][]*call{}
	var order []callKey
	for _, c := range calls {
		k := c.callerKey()
		if _, ok := byPeer[k]; !ok {
			order = append(order, k)
		}
		byPeer[k] = append(byPeer[k], c)
	}
	for _, k := range order {
		a.publishTo(s, byPeer[k])
	}
}

// publishTo sends the heartbeat naming cs, calls of one caller, on the
// first one's reply subject, written in the round's buffer (s.beat),
// which a later round reuses.
func (a *announcer) publishTo(s *settling, cs []*call) {
	limit := a.w.piece()
	buf := wire.AppendBeatHead(s.beat[:0], a.w.cfg.ID, cs[0].interval.Milliseconds())
	head := len(buf)
	for _, c := range cs {
		if len(buf)+len(c.key.id)+1 > limit {
			a.w.publishBeat(cs[0], buf)
			buf = buf[:head]
		}
		buf = append(append(buf, c.key.id...), ' ')
	}
	a.w.publishBeat(cs[0], buf)
	s.beat = buf
}
