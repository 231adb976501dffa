package worker

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// sendCall subscribes to reply, then publishes data (a call message or a
// batch) to tool's call subject with that reply. The subscription ends
// with the test.
func sendCall(t testing.TB, raw *nats.Conn, tool, reply string, data []byte) *nats.Subscription {
	t.Helper()
	sub, err := raw.SubscribeSync(reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := raw.PublishRequest(wire.Subjects{}.Call(tool), reply, data); err != nil {
		t.Fatal(err)
	}
	return sub
}

// nextPastBeats returns the next message on sub that is not a heartbeat,
// and how many heartbeats came before it; what says in a failure what
// was awaited.
func nextPastBeats(t testing.TB, sub *nats.Subscription, what string) (*nats.Msg, int) {
	t.Helper()
	for beats := 0; ; beats++ {
		m, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !isBeat(m) {
			return m, beats
		}
	}
}

// isBeat reports whether m is a worker's heartbeat frame.
func isBeat(m *nats.Msg) bool {
	f, err := wire.ParseFrame(m.Data)
	return err == nil && f.Kind == wire.FrameBeat
}

// replyFrame parses one reply on a batch's subject: its frame, and the
// call ids and events it carries (a bare frame's are its own id and
// payload), as many events as ids.
func replyFrame(t testing.TB, m *nats.Msg) (wire.Frame, []string, [][]byte) {
	t.Helper()
	f, err := wire.ParseFrame(m.Data)
	if err != nil {
		t.Fatalf("reply %q: %v", m.Data, err)
	}
	ids, evs := []string{f.ID}, [][]byte{f.Payload}
	switch f.Kind {
	case wire.FrameEnds:
		ids, evs, err = f.Ends()
	case wire.FrameEvents:
		evs, err = f.Events()
	}
	if err != nil || len(ids) != len(evs) {
		t.Fatalf("reply %q: %d ids, %d events, %v", m.Data, len(ids), len(evs), err)
	}
	return f, ids, evs
}
