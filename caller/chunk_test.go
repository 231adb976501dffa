package caller_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// piece publishes one chunk of an event; mark is written as given.
func piece(fw *fakeWorker, m *nats.Msg, seq int, mark, body string) {
	_ = fw.nc.Publish(m.Reply, []byte("tm2 chunk seq="+strconv.Itoa(seq)+" part="+mark+"\n"+body))
}

// Chunks are reassembled in order; a lost piece, a piece out of order or a
// malformed mark ends the call honestly, never with a holed result.
func TestChunkReassembly(t *testing.T) {
	const event = `{"type":"result","data":{"k":"abcdef"}}`
	cases := []struct {
		name  string
		send  func(fw *fakeWorker, m *nats.Msg)
		want  envelope.Code // "" for success
		limit int
	}{
		{"whole", func(fw *fakeWorker, m *nats.Msg) {
			piece(fw, m, 1, "1/3", event[:10])
			piece(fw, m, 2, "2/3", event[10:20])
			piece(fw, m, 3, "3/3", event[20:])
		}, "", 0},
		{"lost piece", func(fw *fakeWorker, m *nats.Msg) {
			piece(fw, m, 1, "1/3", event[:10])
			piece(fw, m, 3, "3/3", event[20:])
		}, envelope.CodeStreamGap, 0},
		{"pieces swapped", func(fw *fakeWorker, m *nats.Msg) {
			piece(fw, m, 1, "2/2", event[10:])
			piece(fw, m, 2, "1/2", event[:10])
		}, envelope.CodeStreamGap, 0},
		{"bad mark", func(fw *fakeWorker, m *nats.Msg) { piece(fw, m, 1, "0/0", event) }, envelope.CodeInternal, 0},
		{"past the cap", func(fw *fakeWorker, m *nats.Msg) {
			piece(fw, m, 1, "1/2", event[:20])
			piece(fw, m, 2, "2/2", event[20:])
		}, envelope.CodePayloadTooLarge, 25},
		// 1,000 pieces the size of the first are past the cap before they
		// come: the call ends at the first piece, not after the server has
		// queued the rest for this connection (and it sends no more here).
		{"announced past the cap", func(fw *fakeWorker, m *nats.Msg) {
			piece(fw, m, 1, "1/1000", event[:10])
		}, envelope.CodePayloadTooLarge, 5000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := meshtest.StartServer(t, embedded.Config{})
			newFakeWorker(t, meshtest.Connect(t, e), tc.send)
			c := meshtest.NewCaller(t, meshtest.Connect(t, e), caller.Config{MaxResultBytes: tc.limit})
			resp, err := c.Call(context.Background(), "fake", map[string]any{})
			if tc.want == "" {
				if err != nil || string(resp.Data) != `{"k":"abcdef"}` {
					t.Fatalf("reassembled %s (%v)", resp.Data, err)
				}
				return
			}
			if code := problemCode(t, err); code != tc.want {
				t.Fatalf("code = %s, want %s", code, tc.want)
			}
		})
	}
}
