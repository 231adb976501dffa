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
	withBinding := spec
	withBinding.Binding = &envelope.Binding{}
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
