package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
)

// TasksExtension is the id of MCP's tasks extension (SEP-2663), under
// which a gateway with Config.Tasks advertises it (capabilities.extensions).
const TasksExtension = "io.modelcontextprotocol/tasks"

// TaskRule marks mesh tools the operator wants served as MCP tasks. To a
// 2026-07-28 HTTP client that declares the tasks extension, a tools/call
// of such a tool answers at once with a task (CreateTaskResult) that is a
// durable call underneath (docs/protocol.md §22): it runs whether or not
// the client or the gateway stays, and tasks/get, tasks/update and
// tasks/cancel reach it by its durable task id from any gateway of the
// same mesh identity. The MCP SDK does not carry the extension, so the
// gateway serves it at the HTTP layer, in front of the SDK (tasks.go).
type TaskRule struct {
	// Tools is a path.Match glob of mesh tool names ("conf.slow_*").
	Tools string
	// Required serves the tools only as tasks: a tools/call from a
	// client that did not declare the extension is refused with -32021
	// (MissingRequiredClientCapability). Otherwise such a client gets a
	// plain call.
	Required bool
	// AskFirst is for tools that gather their input before they work:
	// the tools/call is held until the task asks its first question (or
	// ends), the question is the call's own input_required round
	// (SEP-2322), and the retry that answers it gets the task.
	AskFirst bool
}

// checkTaskRules refuses a rule whose glob does not parse.
func checkTaskRules(rules []TaskRule) error {
	for _, r := range rules {
		if _, err := path.Match(r.Tools, ""); err != nil || r.Tools == "" {
			return envelope.Problemf(envelope.CodeInvalidConfig, "task tools %q: not a glob of tool names", r.Tools)
		}
	}
	return nil
}

// taskRule is the first rule marking the mesh tool, or nil.
func (g *Gateway) taskRule(mesh string) *TaskRule {
	for i, r := range g.cfg.Tasks {
		if ok, _ := path.Match(r.Tools, mesh); ok {
			return &g.cfg.Tasks[i]
		}
	}
	return nil
}

// advertiseTasks adds the extension to the capabilities when any tool is
// task-capable.
func (g *Gateway) advertiseTasks(o *mcp.ServerOptions) {
	if len(g.cfg.Tasks) > 0 {
		o.Capabilities.Extensions = map[string]any{TasksExtension: map[string]any{}}
	}
}

// taskFront serves the tasks extension in front of the SDK's stateless
// handler: a task-augmented tools/call of a task-capable tool, and
// tasks/get, tasks/update, tasks/cancel (tasks/result and tasks/list,
// removed by SEP-2663, are method not found). Everything else goes to
// next as it came.
type taskFront struct {
	g       *Gateway
	next    http.Handler
	maxBody int64
	states  stateKey
	// partial holds, per task question, the responses of a tasks/update
	// that answered only some of its input requests; the question is
	// answered once every key has one.
	mu      sync.Mutex
	partial map[string]map[string]json.RawMessage
}

// tasksFront wraps the stateless handler when any tool is task-capable.
func (g *Gateway) tasksFront(next http.Handler, maxBody int64) http.Handler {
	if len(g.cfg.Tasks) == 0 {
		return next
	}
	return &taskFront{g: g, next: next, maxBody: maxBody, states: newStateKey(), partial: map[string]map[string]json.RawMessage{}}
}

// taskRequest is the part of a JSON-RPC request the front reads.
type taskRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name           string          `json:"name"`
		TaskID         string          `json:"taskId"`
		Arguments      json.RawMessage `json:"arguments"`
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   string          `json:"requestState"`
		Meta           struct {
			Caps *mcp.ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
	// mesh and rule name the task-capable tool of a tools/call.
	mesh string
	rule *TaskRule
}

// caps are the capabilities the request declared (none: empty).
func (r *taskRequest) caps() *mcp.ClientCapabilities {
	if r.Params.Meta.Caps == nil {
		return &mcp.ClientCapabilities{}
	}
	return r.Params.Meta.Caps
}

// declared reports whether the request declared the tasks extension.
func (r *taskRequest) declared() bool {
	_, ok := r.caps().Extensions[TasksExtension]
	return ok
}

func (f *taskFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		f.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, f.maxBody+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	var req taskRequest
	if err != nil || int64(len(body)) > f.maxBody || json.Unmarshal(body, &req) != nil || len(req.ID) == 0 || !f.ours(&req) {
		f.next.ServeHTTP(w, r)
		return
	}
	if msg := routingMismatch(r.Header, &req); msg != "" {
		writeRPC(w, http.StatusBadRequest, req.ID, nil, &jsonrpc.Error{Code: codeHeaderMismatch, Message: msg})
		return
	}
	res, rerr := f.serve(r.Context(), &req, bearerOfHeader(r.Header))
	writeRPC(w, errorStatus(rerr), req.ID, res, rerr)
}

// errorStatus is the HTTP status of a response (SEP-2575): 404 for
// method not found; 400 for invalid params and a missing capability.
func errorStatus(rerr *jsonrpc.Error) int {
	switch {
	case rerr == nil:
		return http.StatusOK
	case rerr.Code == jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case rerr.Code == jsonrpc.CodeInvalidParams || rerr.Code == codeMissingCapability:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// codeHeaderMismatch is SEP-2243's HeaderMismatch.
const codeHeaderMismatch = -32020

// ours reports whether the front serves req: a tasks/* method, or a
// tools/call of a task-capable tool the client declared the extension
// for (or that is served only as a task).
func (f *taskFront) ours(req *taskRequest) bool {
	if strings.HasPrefix(req.Method, "tasks/") {
		return true
	}
	if req.Method != "tools/call" {
		return false
	}
	f.g.mu.Lock()
	st, ok := f.g.served[req.Params.Name]
	f.g.mu.Unlock()
	if !ok {
		return false
	}
	req.mesh, req.rule = st.mesh, f.g.taskRule(st.mesh)
	return req.rule != nil && (req.declared() || req.rule.Required)
}

// routingMismatch checks the routing headers against the body (SEP-2243;
// SEP-2663 names the task id in Mcp-Name): "" when they match.
func routingMismatch(h http.Header, req *taskRequest) string {
	if got := strings.TrimSpace(h.Get("Mcp-Method")); got != req.Method {
		return fmt.Sprintf("header mismatch: Mcp-Method %q does not match the body's method %q", got, req.Method)
	}
	want, named := req.Params.TaskID, true
	switch req.Method {
	case "tools/call":
		want = req.Params.Name
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		named = false
	}
	if got := strings.TrimSpace(h.Get("Mcp-Name")); named && got != want {
		return fmt.Sprintf("header mismatch: Mcp-Name %q does not match the body's %q", got, want)
	}
	return ""
}

// serve answers one request the front owns.
func (f *taskFront) serve(ctx context.Context, req *taskRequest, bearer string) (any, *jsonrpc.Error) {
	switch req.Method {
	case "tools/call":
		if !req.declared() {
			return nil, missingTasks(req.Params.Name + " runs only as a task: declare " + TasksExtension)
		}
		return f.call(ctx, req, bearer)
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + req.Method}
	}
	if !req.declared() {
		return nil, missingTasks(req.Method + " needs the " + TasksExtension + " extension")
	}
	rec, rerr := f.find(ctx, req.Params.TaskID)
	if rerr != nil {
		return nil, rerr
	}
	switch req.Method {
	case "tasks/get":
		return f.detailed(rec, req.caps()), nil
	case "tasks/update":
		if rerr := f.update(ctx, rec, req.Params.InputResponses); rerr != nil {
			return nil, rerr
		}
	default:
		if err := durableOf(f.g.cfg.Caller).cancel(ctx, rec.TaskID); err != nil {
			return nil, taskError(err)
		}
	}
	return map[string]any{"resultType": "complete"}, nil
}

// find reads a task of a tool this gateway serves as tasks; any other
// (another identity's, one of a tool not served here) is unknown.
func (f *taskFront) find(ctx context.Context, id string) (taskRecord, *jsonrpc.Error) {
	rec, err := durableOf(f.g.cfg.Caller).get(ctx, id)
	if err != nil {
		return rec, taskError(err)
	}
	if !f.g.filter.allows(rec.Tool) || f.g.taskRule(rec.Tool) == nil {
		return rec, unknownTask(id)
	}
	return rec, nil
}

// call serves a task-augmented tools/call: a new durable task, whose
// CreateTaskResult answers at once — or, for an AskFirst tool, the
// task's first question as this call's input_required round, and the
// task once the retry answers it.
func (f *taskFront) call(ctx context.Context, req *taskRequest, bearer string) (any, *jsonrpc.Error) {
	d := durableOf(f.g.cfg.Caller)
	if req.rule.AskFirst && req.Params.RequestState != "" {
		return f.resume(ctx, req)
	}
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	rec, err := d.submit(ctx, req.mesh, args, bearer)
	if err != nil {
		return nil, taskError(err)
	}
	if !req.rule.AskFirst {
		return created(rec), nil
	}
	q, asked, err := d.firstAsk(ctx, rec.TaskID)
	if err != nil {
		return nil, taskError(err)
	}
	inputs := inputsOf(q, req.caps()).inputs
	if !asked || len(inputs) == 0 {
		return f.current(ctx, rec.TaskID)
	}
	return map[string]any{"resultType": "input_required", "inputRequests": inputs,
		"requestState": f.states.sign(rec.TaskID, req.mesh)}, nil
}

// resume is an AskFirst tool's retry: its responses answer the task's
// question, and the task is handed to the client.
func (f *taskFront) resume(ctx context.Context, req *taskRequest) (any, *jsonrpc.Error) {
	id, ok := f.states.verify(req.Params.RequestState, req.mesh)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState failed its check (altered, expired, another tool's or another gateway's): call again"}
	}
	rec, rerr := f.find(ctx, id)
	if rerr != nil {
		return nil, rerr
	}
	if rerr := f.update(ctx, rec, req.Params.InputResponses); rerr != nil {
		return nil, rerr
	}
	return f.current(ctx, id)
}

// current is the CreateTaskResult of a task as it now stands.
func (f *taskFront) current(ctx context.Context, id string) (any, *jsonrpc.Error) {
	rec, err := durableOf(f.g.cfg.Caller).get(ctx, id)
	if err != nil {
		return nil, taskError(err)
	}
	res := created(rec)
	res["status"], _, _ = f.outcome(rec)
	return res, nil
}

// missingTasks is -32021 naming the tasks extension as required.
func missingTasks(msg string) *jsonrpc.Error {
	data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{
		Extensions: map[string]any{TasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: codeMissingCapability, Message: msg, Data: data}
}

// unknownTask is the answer for a task id the client cannot reach.
func unknownTask(id string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown task %q", id)}
}

// taskError maps a task API failure: a task that is not found (or is
// another identity's, which the task service does not tell apart) or has
// expired is unknown (-32602); the rest as rpcError.
func taskError(err error) *jsonrpc.Error {
	p := envelope.AsProblem(err, envelope.CodeInternal)
	if p.Code == envelope.CodeTaskNotFound || p.Code == envelope.CodeTaskExpired {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: problemLine(p)}
	}
	return rpcError(p)
}

// bearerOfHeader is the bearer an HTTP client presented ("" for none).
func bearerOfHeader(h http.Header) string {
	v, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

// writeRPC writes one JSON-RPC response.
func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, res any, rerr *jsonrpc.Error) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = res
	}
	body, err := json.Marshal(msg)
	if err != nil {
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
			"error": &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the result cannot be encoded: " + err.Error()}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
