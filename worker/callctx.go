package worker

import (
	"time"

	"github.com/toolmesh/toolmesh/internal/workercall"
)

// callRoot is a call as the root of its handler's context, in place of
// context.Background(): it never ends and has no deadline, and its one
// value is the call itself under workercall.Key, for the module's own
// handlers (package workercall). A conversion of the call's pointer, it
// costs no allocation.
type callRoot call

// Deadline reports no deadline: the call's own is set on a child.
func (*callRoot) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns nil: the root never ends (the call's cancel is a child's).
func (*callRoot) Done() <-chan struct{} { return nil }

// Err is always nil.
func (*callRoot) Err() error { return nil }

// Value returns the call under workercall.Key, and nil for any other key.
func (r *callRoot) Value(key any) any {
	if _, ok := key.(workercall.Key); ok {
		return (*liveCall)(r)
	}
	return nil
}

// String names the root as context.Background names itself.
func (*callRoot) String() string { return "worker.call" }

// liveCall is the call as package workercall reads it.
type liveCall call

// CanAsk reports whether the call's caller declared that it answers
// questions (ask=1, docs/protocol.md §23.1).
func (l *liveCall) CanAsk() bool { return l.ask1 }

// Sender is the identity the server stamped when there is one, else the
// caller id the call carried (see workercall.Call).
func (l *liveCall) Sender() string {
	k := senderOf((*call)(l))
	if k.identity {
		return "identity:" + k.name
	}
	return "caller:" + k.name
}

// WillWait reports whether the call may wait for room of its handler's
// own (see workercall.Call).
func (l *liveCall) WillWait() bool { return (*call)(l).mayWait() }
