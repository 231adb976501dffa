package workercall

import (
	"context"
	"testing"
)

// A context the worker did not make stands in for a call that cannot ask,
// counts against the request's identity and may always wait, as a
// Request made outside a call always did.
func TestOfStandsInOutsideACall(t *testing.T) {
	c := Of(context.Background(), "acc/alice")
	if c.CanAsk() || c.Sender() != "acc/alice" || !c.WillWait() {
		t.Fatalf("stand-in: CanAsk %v, Sender %q, WillWait %v; want false, acc/alice, true", c.CanAsk(), c.Sender(), c.WillWait())
	}
}

// A call kept under Key is the one Of returns.
func TestOfFindsTheCall(t *testing.T) {
	want := fakeCall{}
	ctx := context.WithValue(context.Background(), Key{}, want)
	if got := Of(ctx, "x"); got != Call(want) {
		t.Fatalf("Of = %#v, want the call kept under Key", got)
	}
}

type fakeCall struct{}

func (fakeCall) CanAsk() bool   { return true }
func (fakeCall) Sender() string { return "caller:C1" }
func (fakeCall) WillWait() bool { return false }
