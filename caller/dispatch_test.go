package caller_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// Output that is not the provider's shape is the orchestrator's bug and
// fails Dispatch itself; calls the mesh cannot serve — a tool nobody
// hosts, arguments that are not an object — come back as results the
// model reads, each with exactly one terminal event streamed.
func TestDispatchFailuresBecomeResults(t *testing.T) {
	c := meshtest.NewCaller(t, meshtest.Connect(t, meshtest.StartServer(t, embedded.Config{})), caller.Config{})
	ts, err := provider.Export([]envelope.ToolSpec{{Name: "gone.away"}, {Name: "other"}}, provider.ExportOptions{Provider: provider.OpenAI})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Dispatch(ctx, ts, json.RawMessage(`{"tool_calls":"nope"}`)); problemCode(t, err) != envelope.CodeInvalidInput {
		t.Fatalf("foreign shape: %v", err)
	}
	var mu sync.Mutex
	var events []caller.DispatchEvent
	d, err := c.Dispatch(ctx, ts, json.RawMessage(`{"role":"assistant","tool_calls":[
		{"id":"a","type":"function","function":{"name":"gone_away","arguments":"{}"}},
		{"id":"b","type":"function","function":{"name":"other","arguments":"42"}}]}`),
		caller.OnEvent(func(e caller.DispatchEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id   string
		code envelope.Code
	}{{"a", envelope.CodeToolNotFound}, {"b", envelope.CodeInvalidInput}}
	for i, w := range want {
		var msg struct {
			Role, Content string
			ToolCallID    string `json:"tool_call_id"`
		}
		if err := json.Unmarshal(d.Messages[i], &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Role != "tool" || msg.ToolCallID != w.id || !strings.HasPrefix(msg.Content, "error "+string(w.code)+":") {
			t.Errorf("message %d = %+v, want a %s error for %s", i, msg, w.code, w.id)
		}
	}
	if len(events) != 2 || !events[0].Event.IsTerminal() || !events[1].Event.IsTerminal() || events[0].Index == events[1].Index {
		t.Fatalf("want one terminal event per call, got %+v", events)
	}
}
