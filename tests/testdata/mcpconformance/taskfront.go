package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tasksExtension is the extension's id (capabilities.extensions key).
const tasksExtension = "io.modelcontextprotocol/tasks"

// taskFront serves the tasks extension in front of the SDK's stateless
// handler (the SDK does not carry it): task-augmented tools/call of the
// task tools, tasks/get, tasks/update and tasks/cancel. Everything else
// goes to next unchanged.
type taskFront struct {
	next  http.Handler
	tools map[string]taskTool

	mu    sync.Mutex
	tasks map[string]*fixtureTask
}

// fixtureTask is one task the front runs in memory.
type fixtureTask struct {
	id, created, updated string
	status               string
	result               *mcp.CallToolResult
	err                  *jsonrpc.Error
	pending              mcp.InputRequestMap
	responses            mcp.InputResponseMap
	wake                 chan struct{}
	cancel               context.CancelFunc
}

func newTaskFront(next http.Handler) *taskFront {
	f := &taskFront{next: next, tools: map[string]taskTool{}, tasks: map[string]*fixtureTask{}}
	for _, t := range taskTools() {
		f.tools[t.name] = t
	}
	return f
}

// rpcRequest is the part of a JSON-RPC request the front reads.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name           string          `json:"name"`
		TaskID         string          `json:"taskId"`
		Arguments      json.RawMessage `json:"arguments"`
		InputResponses json.RawMessage `json:"inputResponses"`
		Meta           struct {
			Caps struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

func (f *taskFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		f.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req rpcRequest
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 || !f.ours(&req) {
		f.next.ServeHTTP(w, r)
		return
	}
	if msg := headerMismatch(r, &req); msg != "" {
		writeRPC(w, http.StatusBadRequest, req.ID, nil, &jsonrpc.Error{Code: -32020, Message: msg})
		return
	}
	res, rpcErr := f.serve(&req)
	writeRPC(w, errorStatus(rpcErr), req.ID, res, rpcErr)
}

// errorStatus is the HTTP status of a response (SEP-2575): 404 for
// method not found; 400 for invalid params and a missing capability.
func errorStatus(e *jsonrpc.Error) int {
	switch {
	case e == nil:
		return http.StatusOK
	case e.Code == jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case e.Code == jsonrpc.CodeInvalidParams || e.Code == mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// ours reports whether the front serves req: a tasks/* method, or a
// tools/call of a task tool that the SDK must not run as a plain call.
func (f *taskFront) ours(req *rpcRequest) bool {
	if strings.HasPrefix(req.Method, "tasks/") {
		return true
	}
	t, ok := f.tools[req.Params.Name]
	return req.Method == "tools/call" && ok && (declared(req) || t.support == "required")
}

func declared(req *rpcRequest) bool {
	_, ok := req.Params.Meta.Caps.Extensions[tasksExtension]
	return ok
}

// headerMismatch checks Mcp-Method and, for the methods that name
// something, Mcp-Name against the body (SEP-2243, SEP-2663 routing).
func headerMismatch(r *http.Request, req *rpcRequest) string {
	if got := strings.TrimSpace(r.Header.Get("Mcp-Method")); got != req.Method {
		return "Mcp-Method header does not match the body's method"
	}
	want := req.Params.TaskID
	if req.Method == "tools/call" {
		want = req.Params.Name
	}
	if req.Method == "tasks/list" || req.Method == "tasks/result" {
		return ""
	}
	if strings.TrimSpace(r.Header.Get("Mcp-Name")) != want {
		return "Mcp-Name header does not match the body"
	}
	return ""
}

// serve answers one request the front owns.
func (f *taskFront) serve(req *rpcRequest) (any, *jsonrpc.Error) {
	switch req.Method {
	case "tools/call":
		return f.call(req)
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + req.Method}
	}
	if !declared(req) {
		return nil, missingExtension(req.Method + " needs the tasks extension")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[req.Params.TaskID]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task " + req.Params.TaskID}
	}
	switch req.Method {
	case "tasks/get":
		return t.detailed(), nil
	case "tasks/update":
		t.update(req.Params.InputResponses)
	default:
		if !terminal(t.status) {
			t.cancel()
		}
	}
	return map[string]any{"resultType": "complete"}, nil
}

// missingExtension is -32021 naming the tasks extension.
func missingExtension(msg string) *jsonrpc.Error {
	data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{
		Extensions: map[string]any{tasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: msg, Data: data}
}

// call serves a tools/call of a task tool: -32021 to a client without
// the extension (task support required), the tool's own rounds first
// when it asks before it works, else a new task.
func (f *taskFront) call(req *rpcRequest) (any, *jsonrpc.Error) {
	tool := f.tools[req.Params.Name]
	if !declared(req) {
		return nil, missingExtension(tool.name + " runs only as a task: declare " + tasksExtension)
	}
	responses := decodeResponses(req.Params.InputResponses)
	if tool.before != nil {
		if reqs := tool.before(responses); reqs != nil {
			return map[string]any{"resultType": "input_required", "inputRequests": reqs}, nil
		}
	}
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return f.start(tool, args, responses), nil
}

// start makes a task and runs tool in it.
func (f *taskFront) start(tool taskTool, args json.RawMessage, responses mcp.InputResponseMap) map[string]any {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	ctx, cancel := context.WithCancel(context.Background())
	now := stamp()
	t := &fixtureTask{id: hex.EncodeToString(id), created: now, updated: now, status: "working",
		responses: responses, wake: make(chan struct{}, 1), cancel: cancel}
	if t.responses == nil {
		t.responses = mcp.InputResponseMap{}
	}
	f.mu.Lock()
	f.tasks[t.id] = t
	env := t.envelope()
	f.mu.Unlock()
	go f.run(ctx, tool, args, t)
	return env
}

// run runs the tool until it ends, parking input_required while it
// waits for responses.
func (f *taskFront) run(ctx context.Context, tool taskTool, args json.RawMessage, t *fixtureTask) {
	for {
		f.mu.Lock()
		responses := maps(t.responses)
		f.mu.Unlock()
		res, reqs, err := tool.run(ctx, args, responses)
		f.mu.Lock()
		switch {
		case ctx.Err() != nil:
			t.settle("cancelled", nil, nil)
		case err != nil:
			var je *jsonrpc.Error
			if !errors.As(err, &je) {
				je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			t.settle("failed", nil, je)
		case len(reqs) > 0:
			t.status, t.pending, t.updated = "input_required", reqs, stamp()
			f.mu.Unlock()
			select {
			case <-t.wake:
				continue
			case <-ctx.Done():
				f.mu.Lock()
				t.settle("cancelled", nil, nil)
			}
		default:
			t.settle("completed", res, nil)
		}
		f.mu.Unlock()
		return
	}
}

// settle ends t. Called with the front's lock held.
func (t *fixtureTask) settle(status string, res *mcp.CallToolResult, err *jsonrpc.Error) {
	t.status, t.result, t.err, t.pending, t.updated = status, res, err, nil, stamp()
}

// update takes responses: each answers the pending request of its key
// (others are ignored); once none is pending the tool runs again.
// Called with the front's lock held.
func (t *fixtureTask) update(raw json.RawMessage) {
	if t.status != "input_required" {
		return
	}
	for k, v := range decodeResponses(raw) {
		if _, ok := t.pending[k]; ok {
			t.responses[k] = v
			delete(t.pending, k)
		}
	}
	if len(t.pending) == 0 {
		t.status, t.updated = "working", stamp()
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// envelope is the task's CreateTaskResult. Called with the lock held.
func (t *fixtureTask) envelope() map[string]any {
	return map[string]any{"resultType": "task", "taskId": t.id, "status": t.status,
		"createdAt": t.created, "lastUpdatedAt": t.updated, "ttlMs": 3_600_000, "pollIntervalMs": 500}
}

// detailed is the task as tasks/get answers it. Called with the lock held.
func (t *fixtureTask) detailed() map[string]any {
	d := t.envelope()
	d["resultType"] = "complete"
	switch {
	case t.status == "input_required":
		d["inputRequests"] = t.pending
	case t.result != nil:
		d["result"] = t.result
	case t.err != nil:
		d["error"] = t.err
	}
	return d
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

func stamp() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

func maps(m mcp.InputResponseMap) mcp.InputResponseMap {
	out := make(mcp.InputResponseMap, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// decodeResponses decodes each response it can; others are ignored.
func decodeResponses(raw json.RawMessage) mcp.InputResponseMap {
	var byKey map[string]json.RawMessage
	_ = json.Unmarshal(raw, &byKey)
	out := mcp.InputResponseMap{}
	for k, v := range byKey {
		var one mcp.InputResponseMap
		if json.Unmarshal([]byte(`{"k":`+string(v)+`}`), &one) == nil {
			out[k] = one["k"]
		}
	}
	return out
}

// writeRPC writes one JSON-RPC response.
func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, res any, rpcErr *jsonrpc.Error) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rpcErr != nil {
		msg["error"] = rpcErr
	} else {
		msg["result"] = res
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(msg)
}
