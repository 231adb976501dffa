package envelope

import (
	"testing"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// The answer actions envelope names are exactly the ones the wire accepts.
func TestAnswerActionsAreTheWires(t *testing.T) {
	for _, a := range []string{ActionAccept, ActionDecline, ActionCancel} {
		if !wire.ValidAction(a) {
			t.Errorf("wire refuses the action %q", a)
		}
	}
	for _, a := range []string{"", "Accept", "reject", "accept "} {
		if wire.ValidAction(a) {
			t.Errorf("wire accepts the action %q", a)
		}
	}
}
