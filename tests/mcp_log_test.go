package tests

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// fixtureLogs are the messages the fixture's test_tool_with_logging sends.
var fixtureLogs = []string{"Tool execution started", "Tool processing data", "Tool execution completed"}

// TestMCPBridgeLogsReachTheCall: a bridged server's notifications/message
// during a tool call reach the streaming mesh call as log events, in
// order, before its result.
func TestMCPBridgeLogsReachTheCall(t *testing.T) {
	_, c := startBridge(t, bridge.Entry{Namespace: "conf", Server: bridge.ServerConfig{Command: conformanceFixture(t)}})
	st, err := c.Stream(context.Background(), "conf.test_tool_with_logging", nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	eachEvent(t, st, func(ev envelope.ToolEvent) {
		if ev.Type == envelope.EventProgress && ev.Log != nil {
			var text string
			_ = json.Unmarshal(ev.Log.Data, &text)
			if ev.Log.Level != "info" || ev.Log.Logger != "conformance-fixture" || ev.Message != "[info] conformance-fixture: "+text {
				t.Errorf("log event %+v: want level info, the fixture's logger and its text as the message", ev.Log)
			}
			logs = append(logs, string(ev.Log.Data))
		}
	})
	want := []string{`"Tool execution started"`, `"Tool processing data"`, `"Tool execution completed"`}
	if !slices.Equal(logs, want) {
		t.Fatalf("log events before the result = %v, want %v", logs, want)
	}
}

// TestMCPGatewayRelaysLogs: through toolmesh's gateway a client gets the
// bridged server's log messages as notifications/message, as its
// logging/setLevel asks: none at warning, all three at debug.
func TestMCPGatewayRelaysLogs(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	bridgeOn(t, srv, bridge.Entry{Namespace: "conf", Server: bridge.ServerConfig{Command: conformanceFixture(t)}})
	var mu sync.Mutex
	var got []string
	cs := gatewayClient(t, srv, "conf", &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Params.Data.(string))
	}})
	ctx := context.Background()
	for _, level := range []mcp.LoggingLevel{"warning", "debug"} {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("test_tool_with_logging at %s: %v %v", level, res, err)
		}
	}
	// Notifications arrive in order: once the debug call's three are in,
	// any the warning call let through would be in before them.
	testutil.WaitFor(t, "the debug call's log messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(fixtureLogs)
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, fixtureLogs) {
		t.Fatalf("log messages through the gateway = %v, want exactly the debug call's %v", got, fixtureLogs)
	}
}
