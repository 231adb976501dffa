package worker

// Inline declares that h returns quickly and never blocks: no I/O that
// can stall, no locks held for long, no questions (Request.Ask), no
// waiting on anything. A tool registered with such a handler may have its
// calls run on the goroutine that reads the tool's subscription, one
// after another, as a nats.go micro endpoint runs every handler: no
// goroutine is woken for the call, and the replies to the calls of one
// read leave together. Middleware around h (Config.Middleware, and
// Register's) runs there too, so it must not block either.
//
// Any other handler runs on a goroutine of its own, so that a handler
// that blocks never holds up the next call of its tool. The declaration
// is a promise the worker relies on: while a declared handler blocks, the
// tool's later calls wait for it. A declared tool's calls that must wait
// for the pickup confirmation (a tool that is not idempotent) run, once
// the server has confirmed it, one after another on one goroutine with
// the other such calls the same confirmation round named; a cancel
// arriving while they wait is not seen. The worker still hands a
// declared tool's calls to goroutines of their own when running them
// inline would make them wait for anything else (an approval, a slot;
// streams, whose emits wait for credit), and once the handler's runs are
// typically slower than a batch may wait behind one of them (about
// 200 µs), until they are fast again.
func Inline(h Handler) Handler { return inlineHandler{h} }

// inlineHandler marks a handler declared Inline; Register unwraps it.
type inlineHandler struct{ Handler }

// runsInline reports whether c may run on the subscription's goroutine
// that read it: its tool's handler is declared Inline and typically fast,
// and nothing on c's way to the handler waits — no pickup confirmation
// (see mustConfirm), no approval, no admission of the tool's own, no
// credit (a stream).
func (c *call) runsInline() bool {
	t := c.tool
	return t.inline && !t.slowCalls() && !c.stream && !c.mustConfirm()
}

// takeSlot takes an execution slot if one is free, without waiting.
func (w *Worker) takeSlot() bool {
	select {
	case w.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// runOnReader runs c on this goroutine, the subscription's, when a slot
// is free at once; otherwise c waits for one on a runner goroutine, so
// the subscription's goroutine never waits for a slot.
func (w *Worker) runOnReader(c *call) {
	if !w.takeSlot() {
		w.dispatch(c)
		return
	}
	c.tool.load.begin()
	c.runHolding(true)
}

// runsAfterNaming reports whether c, of a handler declared Inline, would
// run on the subscription's goroutine but for the pickup confirmation it
// must wait for: it runs once the round naming it is settled, there when
// that goroutine may settle the round itself (see
// announcer.settleOnReader), else on a runner (announcer.announceThen).
func (c *call) runsAfterNaming() bool {
	t := c.tool
	return t.inline && !t.slowCalls() && !c.stream && c.mustConfirm()
}
