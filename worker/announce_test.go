package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
)

// A worker starts a call without the server's confirmation of a heartbeat
// naming it only when both sides accept that a lost call be reported ran
// "maybe": the caller (maybe=1) and the worker's own spec of the tool
// (idempotent or read-only), or the call's idempotency key. Every other
// call is named — a heartbeat reaches its caller — before its handler
// runs, so before its result. The interval is a minute: no scheduled beat
// names anything while the test runs.
func TestUnconfirmedStartNeedsBothSides(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	yes := true
	specs := map[string]*envelope.Annotations{
		"idem":     {Idempotent: &yes},
		"readonly": {ReadOnly: &yes},
		"destroy":  {Destructive: &yes},
		"plain":    nil,
	}
	for name, a := range specs {
		mustRegister(t, w, envelope.ToolSpec{Name: name, Annotations: a}, noop)
	}
	for i, tc := range []struct {
		tool, extra string
		named       bool // a heartbeat must name the call before its result
	}{
		{"idem", " maybe=1", false},
		{"readonly", " maybe=1", false},
		{"destroy", " maybe=1", true},
		{"plain", " maybe=1", true},
		{"destroy", " maybe=1 idem=k1", false},
		{"idem", "", true},
		{"readonly", "", true},
		{"destroy", " idem=k2", true},
	} {
		named := namedBeforeResult(t, raw, tc.tool, fmt.Sprintf("C%d", i), tc.extra)
		if named != tc.named {
			t.Errorf("tool %s with%q: named before its result = %v, want %v", tc.tool, tc.extra, named, tc.named)
		}
	}
}

// namedBeforeResult sends one call of tool as caller id and reports
// whether a heartbeat came before its terminal event, which must be a
// result.
func namedBeforeResult(t *testing.T, raw *nats.Conn, tool, id, extra string) bool {
	t.Helper()
	pickup := time.Now().Add(time.Minute).UnixMilli()
	data := fmt.Appendf(nil, "tm2 id=01CALL mode=unary caller=%s interval=60000 pickup=%d%s\n{\"args\":{}}", id, pickup, extra)
	msg, beats := nextPastBeats(t, sendCall(t, raw, tool, "_INBOX."+id+".01CALL", data), "tool "+tool+": the call's end")
	ev, err := envelope.ParseEvent(msg.Data)
	if err != nil || ev.Type != envelope.EventResult {
		t.Fatalf("tool %s: the call ended %+v (%v), want a result", tool, ev, err)
	}
	return beats > 0
}
