package caller

import (
	"context"
)

// How a call's reader waits for its events. A reader that selects on a
// wake-up channel and its context's Done costs, while it waits, the
// channel and a parked select on two channels: 300 bytes, more than the
// call's own state. A unary call that answers no questions needs waking
// once only — for its terminal, or for its context's end — so its reader
// waits on the call's gate instead (one parked wait, nothing allocated),
// and when the context can end, the calls in flight that share it are
// woken by one context.AfterFunc (a ctxWatch), not by a select each.
// Below watchFrom calls in flight, or while calls come with contexts of
// their own, a watch would cost more than it saves: those calls keep the
// wake-up channel.

// watchFrom is how many calls this caller must have in flight before a
// call whose context it shares with the call before it waits in a watch.
const watchFrom = 32

// ctxWatch is the calls in flight whose readers wait on their gates for
// one context's end (guarded by Caller.mu).
type ctxWatch struct {
	done <-chan struct{}
	head *pending // linked by pending.watchNext and watchPrev
	stop func() bool
}

// chooseWakeLocked decides how p's reader waits, before p is registered
// (so that whoever routes an event to p sees the choice); c.mu is held.
func (c *Caller) chooseWakeLocked(ctx context.Context, p *pending) {
	if p.stream || p.ask() != nil {
		p.notify = c.notifier() // woken for every event
		return
	}
	done := ctx.Done()
	if done == nil {
		p.gate.Lock() // nothing but the terminal ends the wait
		return
	}
	w, shared := c.watches[done], done == c.lastDone
	c.lastDone = done
	if w == nil && (!shared || len(c.pending) < watchFrom) {
		p.notify = c.notifier()
		return
	}
	if w == nil {
		w = &ctxWatch{done: done}
		c.watches[done] = w
		w.stop = context.AfterFunc(ctx, func() { c.ctxEnded(w) })
	}
	p.watch, p.watchNext = w, w.head
	if w.head != nil {
		w.head.watchPrev = p
	}
	w.head = p
	p.gate.Lock()
}

// unwatchLocked takes p out of its watch, which ends with its last call;
// c.mu is held.
func (c *Caller) unwatchLocked(p *pending) {
	w := p.watch
	if w == nil {
		return
	}
	if p.watchPrev != nil {
		p.watchPrev.watchNext = p.watchNext
	} else {
		w.head = p.watchNext
	}
	if p.watchNext != nil {
		p.watchNext.watchPrev = p.watchPrev
	}
	p.watch, p.watchPrev, p.watchNext = nil, nil, nil
	if w.head == nil {
		delete(c.watches, w.done)
		w.stop()
	}
}

// ctxEnded wakes every call of w, whose context has ended.
func (c *Caller) ctxEnded(w *ctxWatch) {
	var calls []*pending
	c.mu.Lock()
	if c.watches[w.done] == w {
		delete(c.watches, w.done)
		for p := w.head; p != nil; {
			next := p.watchNext
			p.watch, p.watchPrev, p.watchNext = nil, nil, nil
			calls = append(calls, p)
			p = next
		}
		w.head = nil
	}
	c.mu.Unlock()
	for _, p := range calls {
		p.wake(false)
	}
}

// signal wakes p's reader after events were queued: through its wake-up
// channel, or, for a reader that waits once, when the terminal is queued.
func (p *pending) signal() {
	if p.notify == nil {
		p.wake(true)
		return
	}
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// wake opens p's gate, once: when its terminal is queued (onlyTerminal)
// or, called by its context's watch, whatever was queued.
func (p *pending) wake(onlyTerminal bool) {
	p.mu.Lock()
	if p.woken || onlyTerminal && !p.terminalQueued {
		p.mu.Unlock()
		return
	}
	p.woken = true
	p.mu.Unlock()
	p.gate.Unlock()
}

// wait blocks until p's reader may look at its queue again; false when
// ctx ended first.
func (p *pending) wait(ctx context.Context) bool {
	if p.notify == nil {
		// Open once, and left open: a reader that looks again (it has
		// the terminal by then) does not wait.
		p.gate.Lock()
		p.gate.Unlock()
		return ctx.Err() == nil
	}
	select {
	case <-p.notify:
		return true
	case <-ctx.Done():
		return false
	}
}
