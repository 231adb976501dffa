package worker

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// batch is what the calls of one batch message share (protocol v2, §4.3):
// the reply subject, on which every reply names its call with id=, and
// the count of calls not yet ended, so that a server-made reply mapping
// is released once, after the last of them.
type batch struct {
	w     *Worker
	reply string
	left  atomic.Int32

	// Unary terminals of the batch's calls that became ready while
	// another of them was being published (busy) wait here, and go out
	// together in one ends frame: replies coalesce like calls.
	mu    sync.Mutex
	busy  bool
	held  bool // the batch runs inline: terminals wait for it (see runInline)
	ends  []heldEnd
	spare []heldEnd // the last ends sent, emptied, for reuse
}

// heldEnd is one call's encoded terminal waiting for an ends frame.
type heldEnd struct {
	id   string
	data []byte
}

// onBatch runs every call of a batch message as if it had come alone:
// each is admitted, answered and counted on its own, so one bad call does
// not spoil the others. A batch that cannot be split into calls it could
// name is refused whole with one error event without id=, which the
// caller applies to every call of the batch.
func (w *Worker) onBatch(t *tool, m *nats.Msg, received time.Time) {
	bodies, ids, err := wire.SplitBatch(m.Data)
	if err != nil {
		w.refuseBatch(m.Reply, w.problems.New(envelope.CodeInvalidInput, "malformed batch message: "+err.Error()))
		return
	}
	b := &batch{w: w, reply: m.Reply, ends: make([]heldEnd, 0, len(bodies))}
	b.left.Store(int32(len(bodies)))
	calls := make([]*call, 0, len(bodies))
	for i, body := range bodies {
		// Named by the id the batch line read, whatever the call's own
		// line later says: its reply must reach the call the caller sent.
		c := w.newCall(t, callMsg{reply: m.Reply, data: body, header: m.Header, batch: b, batchID: ids[i], called: t.called(m.Subject)}, received)
		if c == nil || !w.admit(c) {
			continue
		}
		calls = append(calls, c)
	}
	switch {
	case len(calls) == 0:
	case inlineAll(calls):
		b.runInline(calls, true)
	case inlineOnceNamed(calls):
		if j := (work{batch: b, calls: calls}); !w.announcer.settleOnReader(m.Sub, j, calls...) {
			w.announcer.announceThen(j, calls...)
		}
	default:
		// Off the subscription's goroutine, which only admits: a handler
		// that blocks must not hold up the calls arriving after its batch.
		w.runOn(work{batch: b, calls: calls})
	}
}

// inlineAll reports whether every call may run on the subscription's
// goroutine (see call.runsInline).
func inlineAll(calls []*call) bool {
	for _, c := range calls {
		if !c.runsInline() {
			return false
		}
	}
	return true
}

// inlineOnceNamed reports whether every call may run on the announcer's
// goroutine once a round has named them (see call.runsAfterNaming).
func inlineOnceNamed(calls []*call) bool {
	for _, c := range calls {
		if !c.runsInline() && !c.runsAfterNaming() {
			return false
		}
	}
	return true
}

// handoffAfter is how long the calls of a batch may wait behind a sibling
// that runs on the reader before each is handed a goroutine of its own: a
// handler that blocks holds up its batch for this long at most.
const handoffAfter = 200 * time.Microsecond

// runInline runs the batch's calls one after another on this goroutine
// (one per batch: fast handlers never change goroutine) and holds their
// terminals, which then leave together in ends frames. On a runner, if
// the run takes longer than handoffAfter, the calls not yet started are
// handed off to goroutines of their own and the terminals held so far go
// out at once. A tool whose calls take longer than that (see
// tool.slowCalls) has its batch handed off whole at once: run inline, its
// calls would wait for each other until the hand-off, while other
// workers of the fleet may have slots free. On the subscription's
// goroutine (reader: the handler is declared Inline, see
// call.runsInline), the calls run one after another as the messages
// after the batch would, without a hand-off timer.
func (b *batch) runInline(calls []*call, reader bool) {
	if !reader { // a batch run as a reader's needs no round or had one
		b.w.announceBatch(calls)
	}
	if calls[0].tool.slowCalls() {
		for _, c := range calls {
			b.w.dispatch(c)
		}
		return
	}
	if len(calls) == 1 {
		// Nothing waits behind a lone call: no hand-off to arm, and its
		// terminal goes out at once (see terminal).
		if reader {
			b.w.runOnReader(calls[0])
			return
		}
		calls[0].tool.load.begin()
		calls[0].run()
		return
	}
	b.mu.Lock()
	b.held = true
	b.mu.Unlock()
	if reader {
		b.runOnReader(calls)
	} else {
		b.runHandingOff(calls)
	}
	b.letGo()
}

// runOnReader runs calls one after another on the subscription's
// goroutine, each holding a slot taken at once; once no slot is free,
// that call and the ones after it wait for one on runners, not here.
func (b *batch) runOnReader(calls []*call) {
	for i, c := range calls {
		if !b.w.takeSlot() {
			for _, c := range calls[i:] {
				b.w.dispatch(c)
			}
			return
		}
		c.tool.load.begin()
		c.runHolding(true)
	}
}

// runHandingOff runs calls one after another on a runner, handing the
// ones not yet started off to goroutines of their own once the run has
// taken handoffAfter.
func (b *batch) runHandingOff(calls []*call) {
	var next atomic.Int32
	claim := func() *call {
		if i := int(next.Add(1) - 1); i < len(calls) {
			return calls[i]
		}
		return nil
	}
	handOff := func() {
		for c := claim(); c != nil; c = claim() {
			b.w.dispatch(c)
		}
		b.letGo()
	}
	start := time.Now()
	timer := time.AfterFunc(handoffAfter, handOff)
	for c := claim(); c != nil; c = claim() {
		c.tool.load.begin()
		c.run()
		if time.Since(start) > handoffAfter {
			// The timer is late (a busy machine): do not wait for it.
			handOff()
		}
	}
	timer.Stop()
}

// letGo stops holding terminals: those held so far go out now, in ends
// frames, and later ones as terminal sends them.
func (b *batch) letGo() {
	b.mu.Lock()
	if !b.held {
		b.mu.Unlock()
		return
	}
	b.held = false
	if b.busy { // the goroutine publishing takes the queue before it returns
		b.mu.Unlock()
		return
	}
	b.busy = true
	b.mu.Unlock()
	b.drain()
}

// refuseBatch answers a batch refused whole, and releases a server-made
// reply mapping at once: no call of the batch will run.
func (w *Worker) refuseBatch(reply string, p *envelope.Problem) {
	data, _ := envelope.ErrorEvent(p).AppendJSON(nil)
	if err := w.nc.Publish(reply, data); err != nil {
		w.log.Warn("publish batch refusal", "err", err)
	}
	if isServerReply(reply) {
		_ = w.nc.Publish(reply, nil)
	}
}

// frame names the call in a reply body bound for the batch's shared
// subject; see wire.WithCallID.
func (b *batch) frame(c *call, body []byte) []byte { return wire.WithCallID(body, c.key.id) }

// ended counts n calls of the batch as over and reports whether they
// were the last: only then may the shared reply mapping be released.
func (b *batch) ended(n int) bool { return b.left.Add(int32(-n)) == 0 }

// terminal sends the unary terminal event of batched call c (its only
// message), at once when no other reply of the batch is being published;
// otherwise it queues, and the publishing goroutine sends every queued
// terminal in one ends frame before it returns. Nothing waits on a timer.
// The batch, not the call, releases a server-made reply mapping, after
// the last terminal is out. c.mu is held; it guards nothing used here.
func (b *batch) terminal(c *call, data []byte) {
	b.mu.Lock()
	if b.busy || b.held {
		b.ends = append(b.ends, heldEnd{c.key.id, data})
		b.mu.Unlock()
		return
	}
	b.busy = true
	b.mu.Unlock()
	if b.publish(wire.WithCallID(data, c.key.id), 1) {
		runtime.Gosched() // others' handlers already runnable may finish and queue (see caller.sendCoalesced)
	}
	b.drain()
}

// drain sends the queued terminals until none is left, then stops being
// the batch's publisher; b.busy must be set.
func (b *batch) drain() {
	var done []heldEnd
	for {
		b.mu.Lock()
		if done != nil {
			clear(done)
			b.spare = done[:0]
		}
		ends := b.ends
		if len(ends) == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		b.ends, b.spare = b.spare, nil
		b.mu.Unlock()
		b.sendEnds(ends)
		done = ends
	}
}

// sendEnds publishes queued terminals in ends frames that fit a message;
// a lone terminal goes out as the events frame it would have been.
func (b *batch) sendEnds(ends []heldEnd) {
	room := b.w.maxPayload() - 64
	// What one terminal adds to the message: its id and its length on the
	// line, each with a separator, and its bytes.
	cost := func(i int) int {
		return len(ends[i].id) + 1 + len(strconv.Itoa(len(ends[i].data))) + 1 + len(ends[i].data)
	}
	var ids [wire.MaxBatchCalls]string
	var sizes [wire.MaxBatchCalls]int
	for len(ends) > 0 {
		n, size := 1, cost(0)
		for n < len(ends) && n < wire.MaxBatchCalls && size+cost(n) <= room {
			size += cost(n)
			n++
		}
		if n == 1 {
			b.publish(wire.WithCallID(ends[0].data, ends[0].id), 1)
		} else {
			for i, e := range ends[:n] {
				ids[i], sizes[i] = e.id, len(e.data)
			}
			body := wire.AppendEndsHead(make([]byte, 0, size+32), ids[:n], sizes[:n])
			for _, e := range ends[:n] {
				body = append(body, e.data...)
			}
			b.publish(body, n)
		}
		ends = ends[n:]
	}
}

// publish sends one message carrying n calls' terminals on the batch's
// reply subject, and releases a server-made mapping after the last; it
// reports whether calls of the batch are still running.
func (b *batch) publish(body []byte, n int) bool {
	if err := b.w.nc.Publish(b.reply, body); err != nil {
		b.w.log.Warn("publish batch replies", "err", err)
	}
	if !b.ended(n) {
		return true
	}
	if isServerReply(b.reply) {
		_ = b.w.nc.Publish(b.reply, nil)
	}
	return false
}

// announceBatch names the calls of a batch to their caller in one round
// (see announcer) and waits for it, so that the calls, run one after
// another, do not each wait for a round of their own. A call the round
// could not name in time is refused when it comes to start.
func (w *Worker) announceBatch(calls []*call) {
	var named []*call
	for _, c := range calls {
		if c.mustConfirm() && !c.pastPickup(time.Now()) {
			named = append(named, c)
		}
	}
	if len(named) == 0 {
		return
	}
	select {
	case <-w.announcer.announce(named...).done:
	case <-w.stopCtx.Done():
	}
}
