package tests

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// A native mesh tool served as an MCP task asks its caller: tasks/get
// shows the task input_required with the question as one
// elicitation/create under the question's id, tasks/update with the
// accepted form answers the durable task's question, and the task
// completes with the handler's result, which saw the answer.
func TestMCPTaskAsksThroughTasksUpdate(t *testing.T) {
	m := startDurable(t, tasks.Config{})
	askingTool(t, meshtest.NewWorker(t, meshtest.Connect(t, m.srv), worker.Config{}))
	g, err := gateway.New(gateway.Config{Caller: m.c, Tasks: []gateway.TaskRule{{Tools: "rm"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the gateway to serve rm", func() bool {
		_ = g.Sync(context.Background())
		return len(g.Tools()) == 1
	})
	srv := httptest.NewServer(g.HTTPHandler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	res, code := mcpTaskRequest(t, srv.URL, "tools/call", map[string]any{"name": "rm", "arguments": map[string]any{"path": "/tmp/x"}})
	var created struct{ TaskID string }
	if code != 0 || json.Unmarshal(res, &created) != nil || created.TaskID == "" {
		t.Fatalf("tools/call rm: %s (error %d)", res, code)
	}
	id := created.TaskID
	var task struct {
		Status        string
		InputRequests map[string]struct {
			Method string
			Params struct{ Message string }
		}
		Result struct {
			IsError           bool
			StructuredContent map[string]any
		}
	}
	get := func() {
		res, code := mcpTaskRequest(t, srv.URL, "tasks/get", map[string]any{"taskId": id})
		task.InputRequests = nil
		if code != 0 || json.Unmarshal(res, &task) != nil {
			t.Fatalf("tasks/get: %s (error %d)", res, code)
		}
	}
	waitFor(t, "the task to wait on its question", func() bool { get(); return task.Status == "input_required" })
	if len(task.InputRequests) != 1 {
		t.Fatalf("input requests %+v, want the one question", task.InputRequests)
	}
	var key string
	for k, r := range task.InputRequests {
		key = k
		if r.Method != "elicitation/create" || r.Params.Message != "Delete /tmp/x?" {
			t.Fatalf("input request %s = %+v, want the question as elicitation/create", k, r)
		}
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true, "reason": "asked by MCP"}}}
	if res, code := mcpTaskRequest(t, srv.URL, "tasks/update", map[string]any{"taskId": id, "inputResponses": answer}); code != 0 || string(res) != `{"resultType":"complete"}` {
		t.Fatalf("tasks/update: %s (error %d), want the empty ack", res, code)
	}
	waitFor(t, "the task to complete", func() bool { get(); return task.Status == "completed" })
	sc := task.Result.StructuredContent
	if task.Result.IsError || sc["deleted"] != true || sc["outcome"] != "answered" || sc["reason"] != "asked by MCP" {
		t.Fatalf("result %+v: want the handler's result with the answer", task.Result)
	}
}
