package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/worker"
)

func register(t testing.TB, w *worker.Worker, spec envelope.ToolSpec, h worker.HandlerFunc) {
	t.Helper()
	if err := w.Register(spec, h); err != nil {
		t.Fatal(err)
	}
}

// echo returns its args.
func echo(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	return req.Args, nil
}

// count streams n deltas {"i":k} with progress, then returns {"count":n}.
func count(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
	var a struct {
		N int `json:"n"`
	}
	if err := req.Bind(&a); err != nil {
		return nil, envelope.NewProblem(envelope.CodeInvalidInput, err.Error())
	}
	for i := 1; i <= a.N; i++ {
		if err := emit.Delta(map[string]int{"i": i}); err != nil {
			return nil, err
		}
		if i%100 == 0 {
			if err := emit.Progress(float64(i)*100/float64(a.N), "counting"); err != nil {
				return nil, err
			}
		}
	}
	return map[string]int{"count": a.N}, nil
}

// writeTools writes a tools file holding yaml into a new temporary
// directory and returns its path.
func writeTools(t testing.TB, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// dialURL connects to the server at url, closed when t ends.
func dialURL(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// eachEvent reads s to its end, failing t at an error (a failed stream's
// terminal error event comes as one) and handing every other event to each.
func eachEvent(t testing.TB, s *caller.Stream, each func(envelope.ToolEvent)) {
	t.Helper()
	for ev, err := range s.Events() {
		if err != nil {
			t.Fatal(err)
		}
		each(ev)
	}
}

// catalogSpecs is the specs of c's catalogue, listed waiting up to wait
// (0: the configured wait), as a model export takes them.
func catalogSpecs(ctx context.Context, t testing.TB, c *caller.Caller, wait time.Duration) []envelope.ToolSpec {
	t.Helper()
	cat, err := c.Catalog().List(ctx, wait)
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]envelope.ToolSpec, len(cat.Tools))
	for i, tool := range cat.Tools {
		specs[i] = tool.Spec
	}
	return specs
}

// ndjson decodes a command's NDJSON output, one T a line, failing t at a
// line that is not one.
func ndjson[T any](t testing.TB, out string) []T {
	t.Helper()
	var vs []T
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		vs = append(vs, v)
	}
	return vs
}

// nextCount checks that ev, a delta of count, holds *next, the number due,
// and counts it.
func nextCount(t testing.TB, ev envelope.ToolEvent, next *int) {
	t.Helper()
	var d struct{ I int }
	_ = json.Unmarshal(ev.Data, &d)
	if d.I != *next {
		t.Fatalf("delta %d arrived where %d was due", d.I, *next)
	}
	*next++
}

var countSpec = envelope.ToolSpec{Name: "count", Streaming: true,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}`)}

// problemOf extracts the Problem from a call error, failing the test if there is none.
func problemOf(t testing.TB, err error) *envelope.Problem {
	t.Helper()
	var p *envelope.Problem
	if !errors.As(err, &p) {
		t.Fatalf("want a *envelope.Problem, got %T %v", err, err)
	}
	return p
}

// wantCode asserts that err is a Problem with code.
func wantCode(t testing.TB, err error, code envelope.Code) *envelope.Problem {
	t.Helper()
	if err == nil {
		t.Fatalf("want %s, got success", code)
	}
	p := problemOf(t, err)
	if p.Code != code {
		t.Fatalf("want %s, got %s: %s", code, p.Code, p.Detail)
	}
	return p
}

// waitFor waits for observable state (see testutil.WaitFor).
func waitFor(t testing.TB, what string, cond func() bool) { testutil.WaitFor(t, what, cond) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return b
}

// iterPull is iter.Pull2 with the three results in one call.
func iterPull[K, V any](seq iter.Seq2[K, V]) (func() (K, V, bool), func()) {
	return iter.Pull2(seq)
}

// replyEvents decodes the events of one reply message, as a client
// written from docs/protocol.md would: a bare event, or an events frame;
// heartbeats (and the empty release message) hold none.
func replyEvents(t *testing.T, m *nats.Msg) []envelope.ToolEvent {
	t.Helper()
	if len(m.Data) == 0 {
		return nil
	}
	f, err := wire.ParseFrame(m.Data)
	if err != nil {
		t.Fatalf("reply %q: %v", m.Data, err)
	}
	var raw [][]byte
	switch f.Kind {
	case wire.FrameBare:
		raw = [][]byte{f.Payload}
	case wire.FrameEvents:
		if raw, err = f.Events(); err != nil {
			t.Fatalf("reply %q: %v", m.Data, err)
		}
	}
	out := make([]envelope.ToolEvent, 0, len(raw))
	for _, r := range raw {
		ev, err := envelope.ParseEvent(r)
		if err != nil {
			t.Fatalf("event %q: %v", r, err)
		}
		out = append(out, ev)
	}
	return out
}

// requestJSON sends an empty request to subj on nc and decodes the reply
// as a T, failing t when there is no reply or it is not one; the raw
// reply comes back too, for failure messages.
func requestJSON[T any](t testing.TB, nc *nats.Conn, subj string) (T, []byte) {
	t.Helper()
	var v T
	reply, err := nc.Request(subj, nil, 5*time.Second)
	if err != nil {
		t.Fatalf("request %s: %v", subj, err)
	}
	if err := json.Unmarshal(reply.Data, &v); err != nil {
		t.Fatalf("reply to %s %s: %v", subj, reply.Data, err)
	}
	return v, reply.Data
}

// wantPartialGather gathers every page of tool through c and checks that
// the gather says it is incomplete, holding items items and one missing
// page whose reason contains missing.
func wantPartialGather(t *testing.T, c *caller.Caller, tool string, items int, missing string) {
	t.Helper()
	resp, err := c.CallAll(context.Background(), tool, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Items        []json.RawMessage
		Complete     bool
		MissingPages []string `json:"missing_pages"`
	}
	if err := json.Unmarshal(resp.Data, &got); err != nil {
		t.Fatalf("gather %s: %v", resp.Data, err)
	}
	if got.Complete || len(got.Items) != items || len(got.MissingPages) != 1 || !strings.Contains(got.MissingPages[0], missing) {
		t.Fatalf("partial gather of %s: %s", tool, resp.Data)
	}
}

// waitToolStats waits until ok holds of w's counters of tool (what names
// that state for a timeout's message).
func waitToolStats(t testing.TB, w *worker.Worker, tool, what string, ok func(fleet.Counters) bool) {
	t.Helper()
	waitFor(t, what, func() bool {
		st, _ := w.ToolStats(tool)
		return ok(st)
	})
}

// publishCall publishes a call message of tool written by hand, as a
// client other than caller.Caller would: data is its metadata line and
// body, and its events go to reply.
func publishCall(t testing.TB, nc *nats.Conn, tool, reply, data string) {
	t.Helper()
	msg := nats.NewMsg(wire.Subjects{}.Call(tool))
	msg.Reply = reply
	msg.Data = []byte(data)
	if err := nc.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
}

// subscribed subscribes a channel holding up to size messages to subj on
// nc and flushes, so that the server holds the subscription before
// anything the test sends next.
func subscribed(t testing.TB, nc *nats.Conn, subj string, size int) chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, size)
	if _, err := nc.ChanSubscribe(subj, ch); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}
