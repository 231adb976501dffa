package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// meshFixture is one server, one worker connection and one caller connection.
type meshFixture struct {
	srv      *embedded.Server
	wnc, cnc *nats.Conn
	w        *worker.Worker
	c        *caller.Caller
}

func newMesh(t *testing.T, wcfg worker.Config, ccfg caller.Config) *meshFixture {
	t.Helper()
	return newMeshOn(t, embedded.Config{}, wcfg, ccfg)
}

// newMeshOn is newMesh on a server configured as scfg.
func newMeshOn(t *testing.T, scfg embedded.Config, wcfg worker.Config, ccfg caller.Config) *meshFixture {
	t.Helper()
	f := &meshFixture{srv: meshtest.StartServer(t, scfg)}
	f.wnc = meshtest.Connect(t, f.srv)
	f.cnc = meshtest.Connect(t, f.srv)
	f.w = meshtest.NewWorker(t, f.wnc, wcfg)
	f.c = meshtest.NewCaller(t, f.cnc, ccfg)
	return f
}

func TestUnaryCall(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "echo"}, echo)
	resp, err := f.c.Call(context.Background(), "echo", map[string]any{"message": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(resp)
	want := fmt.Sprintf(`{"id":%q,"success":true,"message":"hi"}`, resp.ID)
	if string(b) != want {
		t.Fatalf("got %s want %s", b, want)
	}
	if len(resp.ID) != 26 {
		t.Errorf("id %q is not a ULID", resp.ID)
	}
}

func TestStreamingCall(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, countSpec, count)
	s, err := f.c.Stream(context.Background(), "count", map[string]int{"n": 250})
	if err != nil {
		t.Fatal(err)
	}
	var types []envelope.EventType
	next := 1
	eachEvent(t, s, func(ev envelope.ToolEvent) {
		types = append(types, ev.Type)
		if ev.Type == envelope.EventDelta {
			nextCount(t, ev, &next)
		}
		if ev.Type == envelope.EventResult && string(ev.Data) != `{"count":250}` {
			t.Fatalf("result %s", ev.Data)
		}
		if ev.Type == envelope.EventStart && (ev.ToolID != "count" || ev.CallID != s.CallID() || ev.Metadata["worker_id"] != f.w.ID()) {
			t.Fatalf("start event %+v", ev)
		}
	})
	if types[0] != envelope.EventStart || types[len(types)-1] != envelope.EventResult || next != 251 {
		t.Fatalf("events: first %s last %s, %d deltas", types[0], types[len(types)-1], next-1)
	}
	if _, err := s.Next(); err == nil {
		t.Error("Next after the terminal must return io.EOF")
	}
}

// 10,000 calls in flight from one caller connection, each result checked.
// The worker admits them all (512 running, the rest queued, one sender's
// share the whole): with the default bounds, calls past them are refused
// overloaded and retried, and whether the retries outlast the burst
// depends on how fast the host drains it.
func TestTenThousandConcurrentCalls(t *testing.T) {
	const n = 10000
	f := newMesh(t, worker.Config{Limits: worker.Limits{MaxConcurrent: 512, MaxQueued: n, MaxPerIdentity: n}}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "echo"}, echo)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := f.c.Call(context.Background(), "echo", map[string]int{"i": i})
			if err != nil {
				errs <- err
				return
			}
			if v, _ := resp.Get("i"); string(v) != fmt.Sprint(i) {
				errs <- fmt.Errorf("call %d got %s", i, v)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st, _ := f.w.ToolStats("echo"); st.Requests < n {
		t.Errorf("worker counted %d requests", st.Requests)
	}
}

func TestToolNotFoundIsImmediate(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	// A long budget: only no-responders can produce tool_not_found before it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := f.c.Call(ctx, "nobody.hosts.this", nil)
	p := wantCode(t, err, envelope.CodeToolNotFound)
	if p.ExitCode != 3 || p.RetryAfter != nil {
		t.Errorf("problem %+v", p)
	}
	_, err = f.c.Call(ctx, "bad name", nil)
	wantCode(t, err, envelope.CodeInvalidInput)
}

func TestSchemaInvalidArgsNeverRunHandler(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	var ran atomic.Int32
	spec := envelope.ToolSpec{Name: "strict", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"n":{"type":"integer","maximum":10},"s":{"type":"string"}},"required":["n","s"],"additionalProperties":false}`)}
	register(t, f.w, spec, func(context.Context, *worker.Request, worker.Emitter) (any, error) { ran.Add(1); return "ok", nil })
	resp, err := f.c.Call(context.Background(), "strict", map[string]any{"n": 11, "extra": true})
	p := wantCode(t, err, envelope.CodeInvalidInput)
	vs, _ := json.Marshal(p.Extensions["violations"])
	for _, ptr := range []string{`"/n"`, `"/s"`, `"/extra"`} {
		if !strings.Contains(string(vs), ptr) {
			t.Errorf("violations %s do not name %s", vs, ptr)
		}
	}
	if len(p.CodeActions) != 3 {
		t.Errorf("want one code action per violation, got %d", len(p.CodeActions))
	}
	if code, _ := resp.Get("code"); resp.Success || string(code) != `"invalid_input"` {
		t.Errorf("response %+v", resp)
	}
	if ran.Load() != 0 {
		t.Fatal("handler ran on invalid args")
	}
}

// A response_format schema no result can satisfy is refused
// invalid_input before the tool runs — not after its side effects — and a
// satisfiable recursive schema is still taken.
func TestResponseFormatCheckedBeforeTheToolRuns(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	var runs atomic.Int32
	register(t, f.w, envelope.ToolSpec{Name: "sideeffect"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		runs.Add(1)
		return map[string]any{"name": "root", "children": []any{}}, nil
	})
	cases := []struct {
		name, schema string
		wantRun      bool
	}{
		{"self reference", `{"$ref":"#"}`, false},
		{"reference loop", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, false},
		{"loop under allOf", `{"allOf":[{"$ref":"#"}]}`, false},
		{"false", `false`, false},
		{"too large", `{"description":"` + strings.Repeat("x", 64<<10) + `"}`, false}, // over the 64 KiB a worker compiles
		{"not a schema", `{"type":"no-such-type"}`, false},
		{"not anything", `{"not":{}}`, false},
		{"empty enum", `{"enum":[]}`, false},
		{"contradictory allOf", `{"allOf":[{"type":"string"},{"type":"number"}]}`, false},
		{"minimum above maximum, required", `{"type":"object","required":["n"],"properties":{"n":{"type":"number","minimum":5,"maximum":1}}}`, false},
		{"minimum above maximum, optional", `{"type":"object","properties":{"n":{"type":"number","minimum":5,"maximum":1}}}`, true},
		{"recursive tree", `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := runs.Load()
			rf := envelope.ResponseFormat{Type: envelope.FormatJSONSchema, JSONSchema: &envelope.JSONSchemaFormat{Name: "f", Schema: json.RawMessage(tc.schema)}}
			_, err := f.c.Call(context.Background(), "sideeffect", nil, caller.WithResponseFormat(rf), caller.WithRetries(caller.NoRetries))
			ran := runs.Load() != before
			if ran != tc.wantRun {
				t.Fatalf("the tool ran: %v, want %v (err %v)", ran, tc.wantRun, err)
			}
			if tc.wantRun {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			p := wantCode(t, err, envelope.CodeInvalidInput)
			if !strings.Contains(p.Detail, "response_format") {
				t.Errorf("detail %q does not name response_format", p.Detail)
			}
		})
	}
}

func TestOversizeArgs(t *testing.T) {
	f := newMesh(t, worker.Config{Limits: worker.Limits{MaxArgsBytes: 1024}}, caller.Config{})
	var ran atomic.Int32
	register(t, f.w, envelope.ToolSpec{Name: "echo"}, func(ctx context.Context, r *worker.Request, e worker.Emitter) (any, error) {
		ran.Add(1)
		return echo(ctx, r, e)
	})
	// Larger than the worker's limit, smaller than NATS's: the worker refuses.
	_, err := f.c.Call(context.Background(), "echo", map[string]string{"x": strings.Repeat("a", 4096)})
	wantCode(t, err, envelope.CodePayloadTooLarge)
	// Larger than NATS's max payload: the caller refuses before sending.
	_, err = f.c.Call(context.Background(), "echo", map[string]string{"x": strings.Repeat("a", 2<<20)})
	if p := wantCode(t, err, envelope.CodePayloadTooLarge); p.SuggestedFix == nil || !strings.Contains(p.SuggestedFix.Description, "by reference") {
		t.Errorf("oversize args: the fix does not say what to do: %+v", p.SuggestedFix)
	}
	if ran.Load() != 0 {
		t.Fatal("handler ran on oversize args")
	}
}

func TestOversizeResultIsReportedNotCut(t *testing.T) {
	f := newMesh(t, worker.Config{Limits: worker.Limits{MaxResultBytes: 1 << 20}}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "big"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return map[string]string{"x": strings.Repeat("b", 2<<20)}, nil
	})
	_, err := f.c.Call(context.Background(), "big", nil)
	wantCode(t, err, envelope.CodePayloadTooLarge)
}

// A call whose budget is spent is answered timeout and the handler never runs.
func TestSpentBudgetNeverRunsHandler(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	var ran atomic.Int32
	register(t, f.w, envelope.ToolSpec{Name: "echo"}, func(ctx context.Context, r *worker.Request, e worker.Emitter) (any, error) {
		ran.Add(1)
		return echo(ctx, r, e)
	})
	// On the wire: a call message whose metadata says 0 ms of budget remain.
	msg := nats.NewMsg(wire.Subjects{}.Call("echo"))
	msg.Data = []byte("tm2 id=01JD5Q7ZK3M8X2V4T6N9P0R1S2 timeout=0\n" + `{"args":{}}`)
	reply, err := f.cnc.RequestMsg(msg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ev envelope.ToolEvent
	if err := json.Unmarshal(reply.Data, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != envelope.EventError || ev.Code != envelope.CodeTimeout {
		t.Fatalf("got %s", reply.Data)
	}
	// Through the caller: a context already past its deadline is never sent.
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err = f.c.Call(ctx, "echo", nil)
	wantCode(t, err, envelope.CodeTimeout)
	if ran.Load() != 0 {
		t.Fatal("handler ran with a spent budget")
	}
}

func TestCancelMidStream(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	sawDone := make(chan error, 1)
	started := make(chan struct{})
	register(t, f.w, envelope.ToolSpec{Name: "forever"}, func(ctx context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
		_ = emit.Delta("first")
		close(started)
		<-ctx.Done()
		sawDone <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := f.c.Stream(ctx, "forever", nil)
	if err != nil {
		t.Fatal(err)
	}
	readToDelta(t, s) // Next, not a range: leaving a range would close the stream
	<-started
	cancel()
	ev, err := s.Next()
	if err != nil || ev.Code != envelope.CodeCancelled {
		t.Fatalf("after cancel: %+v %v", ev, err)
	}
	if cause := <-sawDone; cause == nil || !strings.Contains(cause.Error(), "cancelled by the caller") {
		t.Fatalf("handler saw %v", cause)
	}
}

// readToDelta reads s up to its first delta, failing on anything terminal.
func readToDelta(t *testing.T, s *caller.Stream) {
	t.Helper()
	for {
		ev, err := s.Next()
		if err != nil || ev.IsTerminal() {
			t.Fatalf("before the first delta: %+v %v", ev, err)
		}
		if ev.Type == envelope.EventDelta {
			return
		}
	}
}

// A worker whose connection dies mid-stream: the caller reports worker_lost
// (not a timeout: the budget is an hour).
func TestWorkerKilledMidStream(t *testing.T) {
	const beat = 50 * time.Millisecond
	f := newMesh(t, worker.Config{}, caller.Config{Heartbeat: beat})
	started := make(chan struct{})
	register(t, f.w, envelope.ToolSpec{Name: "forever"}, func(ctx context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
		_ = emit.Delta("first")
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	s, err := f.c.Stream(ctx, "forever", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	// Mid-stream: the caller holds the first delta before the worker dies.
	readToDelta(t, s)
	f.wnc.Close() // abrupt: no drain, no terminal event
	var last envelope.ToolEvent
	for ev, err := range s.Events() {
		if err != nil && !ev.IsTerminal() {
			t.Fatal(err)
		}
		last = ev
	}
	if last.Code != envelope.CodeWorkerLost {
		t.Fatalf("want worker_lost, got %+v", last)
	}
	// The worker had taken the call up (its delta arrived), so the handler
	// may have run, and the caller may retry after a pause.
	if p := last.Problem(); p.RetryAfter == nil || p.Ran() != envelope.RanMaybe {
		t.Errorf("problem %+v", p)
	}
}

// A caller whose connection dies mid-call: the worker cancels the handler
// once the caller's liveness messages stop.
func TestCallerKilledMidCall(t *testing.T) {
	const beat = 50 * time.Millisecond
	f := newMesh(t, worker.Config{}, caller.Config{Heartbeat: beat})
	started := make(chan struct{})
	cause := make(chan error, 1)
	register(t, f.w, envelope.ToolSpec{Name: "forever"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	go func() { _, _ = f.c.Call(context.Background(), "forever", nil) }()
	<-started
	f.cnc.Close()
	if err := <-cause; err == nil || !strings.Contains(err.Error(), "liveness") {
		t.Fatalf("handler context ended with %v, want the caller-lost cause", err)
	}
}

// A reader that stops consuming one stream neither stalls the caller's
// other calls nor gets the connection dropped; when it resumes every event
// arrives in order.
func TestSlowReaderDoesNotStallOthers(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{Options: []caller.Option{caller.WithWindow(8)}})
	register(t, f.w, countSpec, count)
	register(t, f.w, envelope.ToolSpec{Name: "echo"}, echo)
	slow, err := f.c.Stream(context.Background(), "count", map[string]int{"n": 5000})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := slow.Next() // the start event; then stop reading
	if first.Type != envelope.EventStart {
		t.Fatalf("first event %s", first.Type)
	}
	for i := range 200 {
		if _, err := f.c.Call(context.Background(), "echo", map[string]int{"i": i}); err != nil {
			t.Fatalf("call %d while a stream is stalled: %v", i, err)
		}
	}
	fast, _ := f.c.Stream(context.Background(), "count", map[string]int{"n": 300})
	if resp, err := fast.Response(); err != nil || string(resp.Data) != `{"count":300}` {
		t.Fatalf("second stream: %v %s", err, resp.Data)
	}
	next := 1
	eachEvent(t, slow, func(ev envelope.ToolEvent) {
		if ev.Type == envelope.EventDelta {
			nextCount(t, ev, &next)
		}
	})
	if next != 5001 {
		t.Fatalf("got %d deltas", next-1)
	}
	if f.cnc.Status() != nats.CONNECTED {
		t.Fatalf("caller connection is %s", f.cnc.Status())
	}
	if d, _ := f.cnc.Stats().InMsgs, 0; d == 0 {
		t.Error("no messages counted")
	}
}

func TestOverloadedCarriesRetryAfter(t *testing.T) {
	f := newMesh(t, worker.Config{Limits: worker.Limits{MaxConcurrent: 1, MaxQueued: worker.NoQueue, OverloadRetryAfter: 3 * time.Second}}, caller.Config{})
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	register(t, f.w, envelope.ToolSpec{Name: "slot"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		started <- struct{}{}
		<-release
		return "done", nil
	})
	first := make(chan error, 1)
	go func() { _, err := f.c.Call(context.Background(), "slot", nil); first <- err }()
	<-started
	_, err := f.c.Call(context.Background(), "slot", nil, caller.WithRetries(-1))
	p := wantCode(t, err, envelope.CodeOverloaded)
	if p.RetryAfter == nil || *p.RetryAfter != 3 {
		t.Errorf("retry_after %v", p.RetryAfter)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestHandlerFailures(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "panics"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		panic("boom")
	})
	register(t, f.w, envelope.ToolSpec{Name: "silent"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return nil, nil
	})
	register(t, f.w, envelope.ToolSpec{Name: "fails"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return nil, fmt.Errorf("disk full")
	})
	register(t, f.w, envelope.ToolSpec{Name: "typed", OutputSchema: json.RawMessage(`{"type":"object","required":["ok"]}`)},
		func(context.Context, *worker.Request, worker.Emitter) (any, error) {
			return map[string]int{"nope": 1}, nil
		})
	register(t, f.w, envelope.ToolSpec{Name: "list"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return []int{1, 2}, nil
	})
	ctx := context.Background()
	_, err := f.c.Call(ctx, "panics", nil)
	if p := wantCode(t, err, envelope.CodeHandlerError); !strings.Contains(p.Detail, "boom") {
		t.Errorf("detail %q", p.Detail)
	}
	_, err = f.c.Call(ctx, "silent", nil)
	wantCode(t, err, envelope.CodeMissingTerminal)
	_, err = f.c.Call(ctx, "fails", nil)
	if p := wantCode(t, err, envelope.CodeToolFailed); p.Detail != "disk full" {
		t.Errorf("detail %q", p.Detail)
	}
	_, err = f.c.Call(ctx, "typed", nil)
	wantCode(t, err, envelope.CodeOutputInvalid)
	// response_format: json_object refuses an array; a schema is enforced.
	_, err = f.c.Call(ctx, "list", nil, caller.WithResponseFormat(envelope.ResponseFormat{Type: envelope.FormatJSONObject}))
	wantCode(t, err, envelope.CodeOutputInvalid)
	rf := envelope.ResponseFormat{Type: envelope.FormatJSONSchema, JSONSchema: &envelope.JSONSchemaFormat{Name: "m", Schema: json.RawMessage(`{"type":"object","required":["message"]}`)}}
	register(t, f.w, envelope.ToolSpec{Name: "echo"}, echo)
	if _, err = f.c.Call(ctx, "echo", map[string]string{"message": "x"}, caller.WithResponseFormat(rf)); err != nil {
		t.Errorf("conforming result refused: %v", err)
	}
	_, err = f.c.Call(ctx, "echo", map[string]string{"other": "x"}, caller.WithResponseFormat(rf))
	wantCode(t, err, envelope.CodeOutputInvalid)
	resp, err := f.c.Call(ctx, "list", nil)
	if err != nil || string(must(json.Marshal(resp))) != fmt.Sprintf(`{"id":%q,"success":true,"result":[1,2]}`, resp.ID) {
		t.Errorf("non-object result: %v %s", err, must(json.Marshal(resp)))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestBearerAndOptionsReachHandler(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	got := make(chan *worker.Request, 1)
	register(t, f.w, envelope.ToolSpec{Name: "peek"}, func(_ context.Context, r *worker.Request, _ worker.Emitter) (any, error) {
		got <- r
		return "ok", nil
	})
	_, err := f.c.Call(context.Background(), "peek", nil, caller.WithBearer("s3cret"), caller.WithIdempotencyKey("k1"),
		caller.DryRun(), caller.WithPage(envelope.Page{All: true}), caller.WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.Bearer != "s3cret" || r.IdempotencyKey != "k1" || !r.DryRun || r.Page == nil || !r.Page.All || r.Deadline.IsZero() {
		t.Fatalf("request %+v", r)
	}
}

// Every worker is an ADR-32 service: PING, INFO and STATS answer with the
// tools as endpoints and counters that match the calls served.
func TestDiscovery(t *testing.T) {
	f := newMesh(t, worker.Config{Version: "1.2.3"}, caller.Config{})
	register(t, f.w, envelope.ToolSpec{Name: "echo", Description: "says it back"}, echo)
	register(t, f.w, envelope.ToolSpec{Name: "fails"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return nil, fmt.Errorf("no")
	})
	for range 3 {
		if _, err := f.c.Call(context.Background(), "echo", nil); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = f.c.Call(context.Background(), "fails", nil)

	info, raw := requestJSON[micro.Info](t, f.cnc, "$SRV.INFO.toolmesh")
	if info.Type != micro.InfoResponseType || info.ID != f.w.ID() || info.Version != "1.2.3" || len(info.Endpoints) != 2 ||
		info.Endpoints[0].Name != "echo" || info.Endpoints[0].Subject != "toolmesh.call.echo" {
		t.Fatalf("info %s", raw)
	}
	stats, raw := requestJSON[micro.Stats](t, f.cnc, "$SRV.STATS.toolmesh."+f.w.ID())
	if stats.Endpoints[0].NumRequests != 3 || stats.Endpoints[0].NumErrors != 0 || stats.Endpoints[1].NumErrors != 1 ||
		stats.Endpoints[0].ProcessingTime <= 0 {
		t.Fatalf("stats %s", raw)
	}
	reply, err := f.cnc.Request("$SRV.PING", nil, 5*time.Second)
	if err != nil || !strings.Contains(string(reply.Data), micro.PingResponseType) {
		t.Fatalf("ping %v %s", err, reply.Data)
	}
}

// overloaded is retried after retry_after (the handler never ran, so it is
// always safe); other transient failures are retried only when the call is
// idempotent.
func TestRetryPolicy(t *testing.T) {
	f := newMesh(t, worker.Config{Limits: worker.Limits{MaxConcurrent: 1, MaxQueued: worker.NoQueue, OverloadRetryAfter: 20 * time.Millisecond}}, caller.Config{})
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	register(t, f.w, envelope.ToolSpec{Name: "slot"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		select {
		case started <- struct{}{}:
			<-release
		default:
		}
		return "done", nil
	})
	go func() { _, _ = f.c.Call(context.Background(), "slot", nil) }()
	<-started
	second := make(chan error, 1)
	go func() {
		_, err := f.c.Call(context.Background(), "slot", nil, caller.WithRetries(50))
		second <- err
	}()
	waitToolStats(t, f.w, "slot", "the second call to be answered overloaded", func(st fleet.Counters) bool {
		return st.Errors >= 1
	})
	close(release)
	if err := <-second; err != nil {
		t.Fatalf("the overloaded call was not retried to success: %v", err)
	}

	// worker_lost is transient but not retried for a non-idempotent call.
	g := newMesh(t, worker.Config{}, caller.Config{Heartbeat: 50 * time.Millisecond})
	var runs atomic.Int32
	register(t, g.w, envelope.ToolSpec{Name: "vanish"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		if runs.Add(1) == 1 {
			g.wnc.Close() // the worker dies mid-call
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	_, err := g.c.Call(context.Background(), "vanish", nil)
	wantCode(t, err, envelope.CodeWorkerLost)
	if runs.Load() != 1 {
		t.Fatalf("a non-idempotent call ran %d times", runs.Load())
	}
}

// Calls that arrive coalesced in one batch message, to a handler that
// blocks: every one of them reaches the handler. The worker once ran a
// batch on its subscription's goroutine, so the first blocked handler held
// up every call after it, and the callers, starved of heartbeats for calls
// never started, reported live workers lost.
func TestBatchedCallsToABlockingHandlerAllRun(t *testing.T) {
	const calls = 20
	f := newMesh(t, worker.Config{Limits: worker.Limits{MaxConcurrent: calls, MaxQueued: calls, MaxPerIdentity: calls}}, caller.Config{Retries: caller.NoRetries})
	var entered atomic.Int32
	gate := make(chan struct{})
	register(t, f.w, envelope.ToolSpec{Name: "block"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		entered.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return map[string]bool{"ok": true}, nil
	})
	done := make(chan error, calls)
	for range calls {
		go func() {
			_, err := f.c.Call(context.Background(), "block", nil)
			done <- err
		}()
	}
	waitFor(t, "every call in its handler", func() bool { return entered.Load() == calls })
	close(gate)
	for range calls {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
