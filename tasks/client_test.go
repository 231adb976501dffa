package tasks

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/callsettings"
)

// What a submission's options come to is what the submit tool is sent:
// a folded call is a unary task, the timeout its budget, and a
// submission without an idempotency key carries a submit_id instead, so
// that repeating it makes no second task.
func TestSubmitArgsCarryTheOptions(t *testing.T) {
	m, err := submitArgs("echo", map[string]string{"message": "hi"}, callsettings.Settings{Folded: true, Timeout: 1500 * time.Millisecond, Idempotent: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	if m["mode"] != "unary" || m["timeout_ms"] != int64(1500) || m["idempotent"] != true || m["wait"] != true || m["submit_id"] == nil {
		t.Fatalf("submit args %v", m)
	}
	if string(m["args"].(json.RawMessage)) != `{"message":"hi"}` {
		t.Fatalf("args %s", m["args"])
	}
	m, err = submitArgs("echo", nil, callsettings.Settings{IdempotencyKey: "order-7"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["mode"]; ok || m["idempotency_key"] != "order-7" || m["submit_id"] != nil || m["wait"] != nil {
		t.Fatalf("submit args %v: want a stream task keyed order-7, no submit_id, no wait", m)
	}
	var p *envelope.Problem
	if _, err := submitArgs("echo", "[1]", callsettings.Settings{}, false); !errors.As(err, &p) || p.Code != envelope.CodeInvalidInput {
		t.Fatalf("args that are not an object: %v, want invalid_input", err)
	}
}
