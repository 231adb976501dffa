package worker

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// A call that names the digest of another spec of its tool than the
// worker's is refused before its handler runs: tool_conflict, ran "no",
// retry_after 0, naming the worker and both digests. A call naming the
// worker's own digest (with or without its binding, which callers never
// see) runs.
func TestCallValidatedAgainstAnotherSpecIsRefusedUnrun(t *testing.T) {
	w, raw := newTestWorker(t, Config{ID: "w-conflict"})
	spec := envelope.ToolSpec{Name: "json.query", Description: "v2", InputSchema: json.RawMessage(`{"type":"object"}`)}
	var runs atomic.Int64
	mustRegister(t, w, spec, HandlerFunc(func(context.Context, *Request, Emitter) (any, error) {
		runs.Add(1)
		return "ok", nil
	}))
	stale := spec
	stale.Description = "v1"
	staleDigest, ownDigest := wire.SpecDigest(stale), wire.SpecDigest(spec)
	withBinding := struct {
		envelope.ToolSpec
		Binding struct{} `json:"binding"`
	}{ToolSpec: spec}
	if staleDigest == ownDigest || wire.SpecDigest(withBinding) != ownDigest {
		t.Fatalf("digests: stale %s own %s with binding %s: want the binding left out and the description counted", staleDigest, ownDigest, wire.SpecDigest(withBinding))
	}
	call := func(digest string) envelope.ToolEvent {
		t.Helper()
		return firstEventPastBeats(t, raw, "json.query", "tm2 id=01CALL"+digest[:8]+" spec="+digest+"\n"+`{"args":{}}`)
	}
	ev := call(staleDigest)
	p := ev.Problem()
	if p == nil || p.Code != envelope.CodeToolConflict || p.Ran() != envelope.RanNo || p.RetryAfter == nil || *p.RetryAfter != 0 ||
		p.Extensions["worker"] != "w-conflict" || p.Extensions["spec_digest"] != ownDigest || p.Extensions["call_spec_digest"] != staleDigest {
		t.Fatalf("a call validated against another spec ended %+v: want tool_conflict, ran no, retry_after 0, naming the worker and both digests", p)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for a call validated against another spec", n)
	}
	if ev := call(ownDigest); ev.Problem() != nil || runs.Load() != 1 {
		t.Fatalf("a call naming the worker's own spec ended %+v after %d runs: want it run once", ev.Problem(), runs.Load())
	}
}

// A call carrying server_args=1 hands a bridged MCP server's tool (spec
// mcp) args its input schema refuses, for the server to judge; without
// the key, and for any other tool with it, the args are refused
// invalid_input before the handler runs.
func TestServerArgsLeaveAnMCPToolsArgsToTheServer(t *testing.T) {
	w, raw := newTestWorker(t, Config{ID: "w-server-args"})
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	var runs atomic.Int64
	h := HandlerFunc(func(context.Context, *Request, Emitter) (any, error) {
		runs.Add(1)
		return "ran", nil
	})
	bridged := envelope.ToolSpec{Name: "fs.read", InputSchema: schema, MCP: &envelope.MCPTool{Definition: json.RawMessage(`{"name":"read"}`)}}
	plain := envelope.ToolSpec{Name: "plain.read", InputSchema: schema}
	for _, s := range []envelope.ToolSpec{bridged, plain} {
		mustRegister(t, w, s, h)
	}
	call := func(tool, meta string) *envelope.Problem {
		t.Helper()
		return firstEventPastBeats(t, raw, tool, "tm2 id=01SA"+meta+"\n"+`{"args":{}}`).Problem()
	}
	if p := call("fs.read", "1 server_args=1"); p != nil || runs.Load() != 1 {
		t.Fatalf("fs.read with server_args=1 ended %v after %d runs: want its handler to judge the args", p, runs.Load())
	}
	if p := call("fs.read", "2"); p == nil || p.Code != envelope.CodeInvalidInput {
		t.Fatalf("fs.read without server_args ended %v: want invalid_input", p)
	}
	if p := call("plain.read", "3 server_args=1"); p == nil || p.Code != envelope.CodeInvalidInput {
		t.Fatalf("a tool of no MCP server with server_args=1 ended %v: want invalid_input", p)
	}
	if p := call("fs.read", "4 server_args=yes"); p == nil || p.Code != envelope.CodeInvalidInput || p.Extensions["meta"] != wire.MetaServerArgs {
		t.Fatalf("server_args=yes ended %v: want invalid_input naming the key", p)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}
