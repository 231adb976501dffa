package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// Under deploy/secure verbatim, each person with a gateway of their own
// mesh identity: an MCP task is the durable task of the identity whose
// gateway made it. Bob's MCP client, given alice's task id, can neither
// read (tasks/get, where the result would be), answer (tasks/update) nor
// cancel it: each is the unknown-task error, as for an id that never
// existed. Alice reaches it from a second gateway of hers (the first one
// gone), as a client whose gateway restarted does.
func TestSecureMCPTasksBelongToTheirOwner(t *testing.T) {
	m := startSecure(t)
	m.taskService(t, tasks.Config{})
	started, ended := make(chan string, 1), make(chan error, 1)
	register(t, m.demoWorker(t, worker.Config{}), envelope.ToolSpec{Name: "demo.park"}, parkTool(started, ended))

	alice := personGateway(t, m, "alice")
	id := taskCreated(t, alice.URL)
	<-started
	bob := personGateway(t, m, "bob")
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := map[string]any{"taskId": id}
		if method == "tasks/update" {
			params["inputResponses"] = map[string]any{}
		}
		res, code := mcpTaskRequest(t, bob.URL, method, params)
		if code != -32602 {
			t.Errorf("bob's %s of alice's task: result %s, error code %d; want -32602 (unknown task)", method, res, code)
		}
	}
	alice.Close()
	again := personGateway(t, m, "alice")
	res, code := mcpTaskRequest(t, again.URL, "tasks/get", map[string]any{"taskId": id})
	var task struct{ TaskID, Status string }
	if code != 0 || json.Unmarshal(res, &task) != nil || task.TaskID != id || task.Status != "working" {
		t.Fatalf("alice's tasks/get from her second gateway: %s (error %d); want her task, working", res, code)
	}
	if res, code := mcpTaskRequest(t, again.URL, "tasks/cancel", map[string]any{"taskId": id}); code != 0 {
		t.Fatalf("alice's tasks/cancel: %s (error %d)", res, code)
	}
	if err := <-ended; err == nil {
		t.Fatal("alice's cancel did not reach the handler")
	}
}

// personGateway serves an MCP gateway connected as user, with the demo
// tools served as tasks, over HTTP.
func personGateway(t *testing.T, m *secureMesh, user string) *httptest.Server {
	t.Helper()
	nc, _ := m.dial(t, user)
	g, err := gateway.New(gateway.Config{Caller: meshtest.NewCaller(t, nc, caller.Config{}), Tasks: []gateway.TaskRule{{Tools: "demo.*"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, user+"'s gateway to serve demo.park", func() bool {
		_ = g.Sync(context.Background())
		tools := g.Tools()
		return len(tools) > 0 && tools[0] == "demo.park"
	})
	srv := httptest.NewServer(g.HTTPHandler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	return srv
}

// taskCreated calls demo.park as a task and returns the task's id.
func taskCreated(t *testing.T, url string) string {
	t.Helper()
	res, code := mcpTaskRequest(t, url, "tools/call", map[string]any{"name": "demo.park", "arguments": map[string]any{}})
	var created struct{ ResultType, TaskID string }
	if code != 0 || json.Unmarshal(res, &created) != nil || created.ResultType != "task" || created.TaskID == "" {
		t.Fatalf("tools/call demo.park: %s (error %d); want a CreateTaskResult", res, code)
	}
	return created.TaskID
}

// mcpTaskRequest sends one 2026-07-28 request declaring the tasks
// extension and elicitation, with its routing headers, and returns its result or its
// error code.
func mcpTaskRequest(t *testing.T, url, method string, params map[string]any) (json.RawMessage, int) {
	t.Helper()
	params["_meta"] = map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"elicitation": map[string]any{}, "extensions": map[string]any{gateway.TasksExtension: map[string]any{}}}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	} else if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatalf("%s: HTTP %d, not a JSON-RPC response: %s", method, resp.StatusCode, raw)
	}
	if msg.Error != nil {
		return raw, msg.Error.Code
	}
	return msg.Result, 0
}
