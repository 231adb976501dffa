package workercall

import "context"

// Call is a live call as the worker sees it.
type Call interface {
	// CanAsk reports whether the call's caller declared that it answers
	// questions (ask=1, docs/protocol.md §23.1).
	CanAsk() bool
	// Sender names whom the call counts against when a handler shares
	// out something scarce (slots, a queue) fairly: the identity the
	// server stamped when there is one, else the caller id the call
	// carried ("" for an unleased call in a single account, where all
	// such calls are one sender), the same sender as the worker's
	// Limits.MaxPerIdentity counts.
	Sender() string
	// WillWait is called by a handler admitting calls itself (an Admit
	// method, as worker/cli's has) just before the call waits for room of
	// the handler's own, and reports whether it may wait; when it may
	// not, Admit refuses the call at once (the worker then answers it
	// overloaded, unrun, with its own detail). A call whose caller proves
	// it is alive may wait. One without (unleased) may wait only where
	// the worker can see its sender leave, and is then checked for a
	// sender before it starts: a call whose sender has gone does not run
	// (docs/protocol.md §8.5).
	WillWait() bool
}

// Key is the context key the worker keeps the call under.
type Key struct{}

// Of returns the live call ctx was made for; for a context the worker
// did not make (a handler called in a test), a stand-in that cannot ask,
// counts against identity and may always wait.
func Of(ctx context.Context, identity string) Call {
	if c, ok := ctx.Value(Key{}).(Call); ok {
		return c
	}
	return notLive(identity)
}

// notLive is a call the worker did not make, named by its identity.
type notLive string

func (notLive) CanAsk() bool     { return false }
func (n notLive) Sender() string { return string(n) }
func (notLive) WillWait() bool   { return true }
