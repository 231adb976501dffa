package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
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
	reply := "_INBOX." + id + ".01CALL"
	sub, err := raw.SubscribeSync(reply)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	m := nats.NewMsg(wire.Subjects{}.Call(tool))
	m.Reply = reply
	pickup := time.Now().Add(time.Minute).UnixMilli()
	m.Data = fmt.Appendf(nil, "tm2 id=01CALL mode=unary caller=%s interval=60000 pickup=%d%s\n{\"args\":{}}", id, pickup, extra)
	if err := raw.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	named := false
	for {
		msg, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if isBeat(msg) {
			named = true
			continue
		}
		ev, err := envelope.ParseEvent(msg.Data)
		if err != nil || ev.Type != envelope.EventResult {
			t.Fatalf("tool %s: the call ended %+v (%v), want a result", tool, ev, err)
		}
		return named
	}
}

// A round's heartbeats name each caller's calls, and only those, in one
// message on one of its calls' reply subjects, whether the round's calls
// have one caller or several; a later round, written in the same buffer,
// names only its own calls.
func TestRoundNamesEachCallerItsOwnCalls(t *testing.T) {
	w, raw := newTestWorker(t, Config{})
	beats := func(subject string) *nats.Subscription {
		sub, err := raw.SubscribeSync(subject)
		if err != nil {
			t.Fatal(err)
		}
		return sub
	}
	a, b := beats("_INBOX.A.*"), beats("_INBOX.B.*")
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	mk := func(caller, id string) *call {
		return &call{w: w, reply: "_INBOX." + caller + "." + id, key: callKey{id: id}, callerID: caller, interval: time.Minute}
	}
	named := func(sub *nats.Subscription) []string {
		m, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		f, err := wire.ParseFrame(m.Data)
		if err != nil || f.Kind != wire.FrameBeat || f.Worker != w.ID() {
			t.Fatalf("%q: want a heartbeat of worker %s (%v)", m.Data, w.ID(), err)
		}
		var ids []string
		f.EachCallID(func(id []byte) { ids = append(ids, string(id)) })
		return ids
	}
	s := settling{name: []*call{mk("A", "a1"), mk("B", "b1"), mk("A", "a2")}}
	w.announcer.publish(&s)
	if got := named(a); fmt.Sprint(got) != "[a1 a2]" {
		t.Errorf("caller A's heartbeat named %v, want [a1 a2]", got)
	}
	if got := named(b); fmt.Sprint(got) != "[b1]" {
		t.Errorf("caller B's heartbeat named %v, want [b1]", got)
	}
	s.name = []*call{mk("B", "b2")} // written in the first round's buffer
	w.announcer.publish(&s)
	if got := named(b); fmt.Sprint(got) != "[b2]" {
		t.Errorf("the next round's heartbeat named %v, want [b2]", got)
	}
	if m, err := a.NextMsg(0); err == nil {
		t.Errorf("caller A heard %q from a round without its calls", m.Data)
	}
}
