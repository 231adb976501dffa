package mesh

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/internal/wire"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

func TestViolationAndDialProblem(t *testing.T) {
	err := fmt.Errorf("%w: %s", nats.ErrPermissionViolation, `Permissions Violation for Subscription to "toolmesh.call.x" using queue "toolmesh"`)
	if op, subj, ok := wire.Violation(err); !ok || op != wire.OpSubscribe || subj != "toolmesh.call.x" {
		t.Errorf("Violation = %s %q %v", op, subj, ok)
	}
	if _, _, ok := wire.Violation(errors.New("something else")); ok {
		t.Error("a plain error read as a violation")
	}
	p := DialProblem("nats://alice:pw123456@h:1", errors.New("nats: Authorization Violation"))
	if p.Code != envelope.CodeUnauthorized || p.Transient() || strings.Contains(p.Detail, "pw123456") {
		t.Errorf("auth failure: %+v", p)
	}
	p = DialProblem("nats://alice:pw123456@h:1", errors.New("dial tcp: connection refused"))
	if p.Code != envelope.CodeConnectionLost || strings.Contains(p.Detail, "pw123456") {
		t.Errorf("unreachable: %+v", p)
	}
}
