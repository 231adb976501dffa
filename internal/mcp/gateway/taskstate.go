package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
)

// taskPollMs is the pollIntervalMs a task's client is given.
const taskPollMs = 500

// created is a task's CreateTaskResult (SEP-2663: flat, no result, no
// error, no input requests). ttlMs is null: the task service's retention
// is its own setting, which the gateway does not know.
func created(rec taskRecord) map[string]any {
	updated := rec.Updated
	if updated == "" {
		updated = rec.Created
	}
	return map[string]any{"resultType": "task", "taskId": rec.TaskID, "status": workingOr(rec.State),
		"createdAt": rec.Created, "lastUpdatedAt": updated, "ttlMs": nil, "pollIntervalMs": taskPollMs}
}

// workingOr is the MCP status of a durable state before its end.
func workingOr(state string) string {
	if state == durableInputRequired {
		return "input_required"
	}
	return "working"
}

// detailed is a task as tasks/get answers it (SEP-2663's DetailedTask):
// its input requests while it waits on a question (those the client can
// answer, less those a tasks/update already answered), its result or
// error once it ended.
func (f *taskFront) detailed(rec taskRecord, caps *mcp.ClientCapabilities) map[string]any {
	d := created(rec)
	d["resultType"] = "complete"
	status, res, rerr := f.outcome(rec)
	d["status"] = status
	if durableTerminal(rec.State) {
		f.forget(rec.TaskID)
	}
	switch {
	case res != nil:
		d["result"] = res
	case rerr != nil:
		d["error"] = rerr
	case status == "input_required":
		d["inputRequests"] = f.pending(rec, caps)
	}
	return d
}

// outcome is a task's MCP status, with its result or error once ended. A
// tool's result, and a tool's failure (a bridged server's error result
// as the server sent it; a mesh Problem as an isError result, as a plain
// tools/call serves it), is "completed"; a bridged server's JSON-RPC
// error (a protocol error) is "failed" with that error; a cancel is
// "cancelled".
func (f *taskFront) outcome(rec taskRecord) (string, *mcp.CallToolResult, *jsonrpc.Error) {
	if !durableTerminal(rec.State) {
		return workingOr(rec.State), nil, nil
	}
	if rec.State == durableCancelled {
		return "cancelled", nil, nil
	}
	ev, ok := rec.TerminalEvent()
	if !ok {
		return "failed", nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task ended (" + rec.State + ") but its terminal event cannot be read"}
	}
	if ev.Type == envelope.EventResult && rec.State == durableSucceeded {
		return "completed", f.taskResult(rec.Tool, ev.Data), nil
	}
	p := ev.Problem()
	if _, own := mcpmap.ErrorResult(p); !own {
		if _, protocol := p.Extensions["mcp_error"]; protocol {
			return "failed", nil, rpcError(p)
		}
	}
	return "completed", problemResult(p), nil
}

// taskResult is the MCP result of a task's mesh result: an MCP tool
// result as it is for a tool that returns them (a bridged server's),
// else the structured result.
func (f *taskFront) taskResult(tool string, data json.RawMessage) *mcp.CallToolResult {
	f.g.mu.Lock()
	ct, known := f.g.known[tool]
	f.g.mu.Unlock()
	if known && !ct.Spec.MCPResult {
		return resultOf(data, deltaLog{})
	}
	return mcpResultOf(data, deltaLog{})
}

// pending are the input requests of the task's open question the client
// can answer and no tasks/update has answered yet.
func (f *taskFront) pending(rec taskRecord, caps *mcp.ClientCapabilities) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	q, ok := openQuestion(rec)
	if !ok {
		return out
	}
	f.mu.Lock()
	done := f.partial[rec.TaskID+"/"+q.ID]
	f.mu.Unlock()
	for k, v := range inputsOf(q, caps).inputs {
		if _, answered := done[k]; !answered {
			out[k] = v
		}
	}
	return out
}

// forget drops the partial responses kept for an ended task.
func (f *taskFront) forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.partial {
		if strings.HasPrefix(k, id+"/") {
			delete(f.partial, k)
		}
	}
}

// allCaps declares every capability input requests can need: what a
// question asks is decided by the question, not by who answers it.
var allCaps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}, Sampling: &mcp.SamplingCapabilities{}, RootsV2: &mcp.RootCapabilities{}}

// update takes a tasks/update's responses to the task's open question:
// those of its keys are kept (others ignored), and once every key has
// one the question is answered. A task that waits on no question takes
// nothing (the ack is the same).
func (f *taskFront) update(ctx context.Context, rec taskRecord, raw json.RawMessage) *jsonrpc.Error {
	q, ok := openQuestion(rec)
	if rec.State != durableInputRequired || !ok {
		return nil
	}
	oi := inputsOf(q, allCaps)
	key := rec.TaskID + "/" + q.ID
	f.mu.Lock()
	got := f.partial[key]
	if got == nil {
		got = map[string]json.RawMessage{}
	}
	var byKey map[string]json.RawMessage
	_ = json.Unmarshal(raw, &byKey)
	for k, v := range byKey {
		if _, asked := oi.inputs[k]; asked {
			got[k] = v
		}
	}
	f.partial[key] = got
	f.mu.Unlock()
	a, complete := oi.answerFrom(decodeResponses(got))
	if !complete {
		return nil
	}
	if err := durableOf(f.g.cfg.Caller).answer(ctx, rec.TaskID, q.ID, a); err != nil {
		return taskError(err)
	}
	f.mu.Lock()
	delete(f.partial, key)
	f.mu.Unlock()
	return nil
}

// decodeResponses decodes each response it can (the SDK's types by
// shape); one it cannot is left out, as an unanswered key.
func decodeResponses(byKey map[string]json.RawMessage) mcp.InputResponseMap {
	out := mcp.InputResponseMap{}
	for k, v := range byKey {
		var one mcp.InputResponseMap
		if json.Unmarshal([]byte(`{"k":`+string(v)+`}`), &one) == nil {
			out[k] = one["k"]
		}
	}
	return out
}

// askFirstTTL bounds how long an AskFirst round's request state is good.
const askFirstTTL = 10 * time.Minute

// stateKey signs the request state of an AskFirst tool's round: the
// task id, the mesh tool and an expiry, with their HMAC-SHA256 under a
// key each gateway process draws at start.
type stateKey []byte

func newStateKey() stateKey {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// sign is the request state naming task id of mesh tool.
func (k stateKey) sign(id, mesh string) string {
	payload := "task|" + id + "|" + mesh + "|" + strconv.FormatInt(time.Now().Add(askFirstTTL).Unix(), 10)
	m := hmac.New(sha256.New, k)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify returns the task id a state of mesh tool names, when its
// signature holds and it has not expired.
func (k stateKey) verify(state, mesh string) (string, bool) {
	enc, sig, _ := strings.Cut(state, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(enc)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	m := hmac.New(sha256.New, k)
	m.Write(payload)
	if err1 != nil || err2 != nil || !hmac.Equal(got, m.Sum(nil)) {
		return "", false
	}
	parts := strings.Split(string(payload), "|")
	if len(parts) != 4 || parts[0] != "task" || parts[2] != mesh {
		return "", false
	}
	exp, err := strconv.ParseInt(parts[3], 10, 64)
	return parts[1], err == nil && time.Now().Unix() <= exp
}
