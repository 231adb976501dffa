package tests

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// TestMCPGatewayAcceptsMaybeOnlyForRetrySafeTools: the gateway calls a
// tool whose spec declares it idempotent or read-only as the Go caller
// calls a tool declared so — its call carries maybe=1, so the worker may
// start it without waiting for the server's confirmation of the
// heartbeat naming it (docs/protocol.md §8.2) — and every other tool's
// call without it, keeping the confirmation.
func TestMCPGatewayAcceptsMaybeOnlyForRetrySafeTools(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
	yes := true
	register(t, w, envelope.ToolSpec{Name: "mb.plain"}, echo)
	register(t, w, envelope.ToolSpec{Name: "mb.idem", Annotations: &envelope.Annotations{Idempotent: &yes}}, echo)
	register(t, w, envelope.ToolSpec{Name: "mb.ro", Annotations: &envelope.Annotations{ReadOnly: &yes}}, echo)
	// A plain subscriber gets a copy of every call beside the workers'
	// queue group.
	seen, err := meshtest.Connect(t, srv).SubscribeSync(wire.Subjects{}.Call("mb.*"))
	if err != nil {
		t.Fatal(err)
	}
	cs := gatewayClient(t, srv, "mb", nil)
	ctx := context.Background()
	for _, tc := range []struct {
		tool  string
		maybe bool
	}{{"plain", false}, {"idem", true}, {"ro", true}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"x": 1}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", tc.tool, res, err)
		}
		msg := nextCall(t, seen, "mb."+tc.tool)
		meta, _, _ := bytes.Cut(msg.Data, []byte("\n"))
		if got := bytes.Contains(meta, []byte("maybe=1")); got != tc.maybe {
			t.Errorf("%s: the call's metadata line %q carries maybe=1: %v, want %v", tc.tool, meta, got, tc.maybe)
		}
	}
}

// nextCall is the next message on sub, which must be a call of tool.
func nextCall(t *testing.T, sub *nats.Subscription, tool string) *nats.Msg {
	t.Helper()
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("%s: no call seen: %v", tool, err)
	}
	if want := (wire.Subjects{}).Call(tool); msg.Subject != want {
		t.Fatalf("saw a call on %s, want %s", msg.Subject, want)
	}
	return msg
}
