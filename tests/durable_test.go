package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// durableMesh is a JetStream server with a task service and a caller.
type durableMesh struct {
	srv *embedded.Server
	svc *tasks.Service
	c   *caller.Caller
}

// startDurable starts a JetStream server, a task service configured by
// cfg and a caller; workers are the test's to start.
func startDurable(t testing.TB, cfg tasks.Config) *durableMesh {
	t.Helper()
	srv := meshtest.StartServer(t, embedded.Config{StoreDir: t.TempDir()})
	return &durableMesh{srv: srv, svc: startService(t, meshtest.Connect(t, srv), cfg),
		c: meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})}
}

// taskStream is the task service's stream under the default prefix.
const taskStream = "TOOLMESH_TASKS_toolmesh"

// taskLog is JetStream on nc and the task service's stream in it.
func taskLog(ctx context.Context, t testing.TB, nc *nats.Conn) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, taskStream)
	if err != nil {
		t.Fatal(err)
	}
	return js, st
}

// startService starts a task service on nc, closed when t ends.
func startService(t testing.TB, nc *nats.Conn, cfg tasks.Config) *tasks.Service {
	t.Helper()
	svc, err := tasks.New(context.Background(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	return svc
}

// countWorker starts a worker hosting echo and count on the mesh's server.
func (m *durableMesh) countWorker(t *testing.T) *worker.Worker {
	t.Helper()
	w := meshtest.NewWorker(t, meshtest.Connect(t, m.srv), worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "echo"}, echo)
	register(t, w, countSpec, count)
	return w
}

// attachAll attaches to a task and reads every event up to the terminal.
func attachAll(t *testing.T, c *caller.Caller, id string) ([]tasks.Event, tasks.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ts, err := tasks.NewClient(c).Attach(ctx, id, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	var evs []tasks.Event
	for {
		ev, err := ts.Next()
		if errors.Is(err, io.EOF) {
			return evs, ts.Record()
		}
		if err != nil {
			t.Fatalf("attach %s: %v", id, err)
		}
		evs = append(evs, ev)
	}
}

// wantNumbered checks that events are numbered 1..n without a hole or a
// repeat, and that only the last is terminal.
func wantNumbered(t *testing.T, evs []tasks.Event) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for i, ev := range evs {
		if ev.N != i+1 {
			t.Fatalf("event %d is numbered %d", i+1, ev.N)
		}
		if ev.Event.IsTerminal() != (i == len(evs)-1) {
			t.Fatalf("event %d (%s): terminal=%v", ev.N, ev.Event.Type, ev.Event.IsTerminal())
		}
	}
}

func TestDurableTaskAttachReplaysEveryEventInOrder(t *testing.T) {
	m := startDurable(t, tasks.Config{})
	m.countWorker(t)
	ctx := context.Background()
	id, err := tasks.NewClient(m.c).Submit(ctx, "count", map[string]int{"n": 300})
	if err != nil {
		t.Fatal(err)
	}
	evs, rec := attachAll(t, m.c, id)
	wantNumbered(t, evs)
	if evs[0].Event.Type != envelope.EventStart || fmt.Sprint(evs[0].Event.Metadata["attempt"]) != "1" {
		t.Errorf("first event %+v, want the start of attempt 1", evs[0].Event)
	}
	if got := string(evs[len(evs)-1].Event.Data); got != `{"count":300}` {
		t.Errorf("terminal data %s", got)
	}
	if rec.State != tasks.Succeeded || rec.Events != len(evs) {
		t.Errorf("record %+v, want succeeded with %d events", rec, len(evs))
	}
	// A second attachment, after the end, replays the same events.
	again, _ := attachAll(t, m.c, id)
	if len(again) != len(evs) {
		t.Errorf("second attach got %d events, first %d", len(again), len(evs))
	}
}

func TestDurableTaskWithNoWorkerRunsWhenOneStarts(t *testing.T) {
	m := startDurable(t, tasks.Config{})
	ctx := context.Background()
	id, err := tasks.NewClient(m.c).Submit(ctx, "echo", map[string]string{"message": "later"}, tasks.Unary())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := tasks.NewClient(m.c).Get(ctx, id, false)
	if err != nil || rec.State != tasks.Queued {
		t.Fatalf("before any worker: %+v, %v; want queued", rec, err)
	}
	m.countWorker(t)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	rec, err = tasks.NewClient(m.c).Get(wctx, id, true)
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := rec.TerminalEvent()
	if rec.State != tasks.Succeeded || !ok || string(ev.Data) != `{"message":"later"}` {
		t.Fatalf("record %+v", rec)
	}
}

func TestDurableIdempotencyKeyMakesOneTask(t *testing.T) {
	m := startDurable(t, tasks.Config{})
	var runs atomic.Int32
	w := meshtest.NewWorker(t, meshtest.Connect(t, m.srv), worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "charge"}, func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		runs.Add(1)
		return req.Args, nil
	})
	ctx := context.Background()
	first, err := tasks.NewClient(m.c).SubmitRecord(ctx, "charge", map[string]int{"cents": 5}, caller.WithIdempotencyKey("order-7"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := tasks.NewClient(m.c).SubmitRecord(ctx, "charge", map[string]int{"cents": 5}, caller.WithIdempotencyKey("order-7"))
	if err != nil {
		t.Fatal(err)
	}
	if first.TaskID != second.TaskID || first.Deduplicated || !second.Deduplicated {
		t.Fatalf("first %+v, second %+v: want one task, the second deduplicated", first, second)
	}
	other, err := tasks.NewClient(m.c).Submit(ctx, "charge", map[string]int{"cents": 5}, caller.WithIdempotencyKey("order-8"))
	if err != nil || other == first.TaskID {
		t.Fatalf("another key gave %q, %v", other, err)
	}
	for _, id := range []string{first.TaskID, other} {
		if rec, err := tasks.NewClient(m.c).Get(ctx, id, true); err != nil || rec.State != tasks.Succeeded {
			t.Fatalf("task %s: %+v, %v", id, rec, err)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the handler ran %d times for two keys, want 2", n)
	}
}

func TestDurableQueueIsBounded(t *testing.T) {
	m := startDurable(t, tasks.Config{MaxQueuedPerTool: 2})
	ctx := context.Background()
	for i := range 2 {
		if _, err := tasks.NewClient(m.c).Submit(ctx, "nobody.hosts", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := tasks.NewClient(m.c).Submit(ctx, "nobody.hosts", map[string]int{"i": 3})
	p := wantCode(t, err, envelope.CodeOverloaded)
	if p.RetryAfter == nil || *p.RetryAfter <= 0 {
		t.Errorf("overloaded without retry_after: %+v", p)
	}
	list, err := tasks.NewClient(m.c).List(ctx, "", 0)
	if err != nil || len(list) != 2 {
		t.Fatalf("ls: %d tasks, %v; want the 2 queued", len(list), err)
	}
}

func TestDurableCancelQueuedTaskNeverRuns(t *testing.T) {
	m := startDurable(t, tasks.Config{})
	ctx := context.Background()
	id, err := tasks.NewClient(m.c).Submit(ctx, "echo", map[string]string{"message": "x"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := tasks.NewClient(m.c).Cancel(ctx, id)
	if err != nil || rec.State != tasks.Cancelled {
		t.Fatalf("cancel: %+v, %v", rec, err)
	}
	var seen sync.Map
	w := meshtest.NewWorker(t, meshtest.Connect(t, m.srv), worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "echo"}, func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		seen.Store(string(req.Args), true)
		return req.Args, nil
	})
	evs, rec := attachAll(t, m.c, id)
	if len(evs) != 1 || evs[0].Event.Code != envelope.CodeCancelled || rec.State != tasks.Cancelled {
		t.Fatalf("events %+v, record %+v", evs, rec)
	}
	if _, err := tasks.NewClient(m.c).Run(ctx, "echo", map[string]string{"message": "y"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task queue to be empty", func() bool { return queueLen(t, m.srv) == 0 })
	if _, ran := seen.Load(`{"message":"x"}`); ran {
		t.Fatal("the cancelled task ran")
	}
	if _, ran := seen.Load(`{"message":"y"}`); !ran {
		t.Fatal("the later task did not run")
	}
}

// queueLen is how many tasks the task queue still holds: submit entries
// its dispatch consumer has not yet delivered, or delivered and not acked.
func queueLen(t *testing.T, srv *embedded.Server) uint64 {
	t.Helper()
	js, err := jetstream.New(meshtest.Connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(context.Background(), taskStream, "dispatch")
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.NumPending + uint64(info.NumAckPending)
}

func TestDurableExpiredTaskHasItsOwnProblem(t *testing.T) {
	m := startDurable(t, tasks.Config{Retention: time.Second})
	m.countWorker(t)
	ctx := context.Background()
	rec, err := tasks.NewClient(m.c).Run(ctx, "echo", map[string]string{"message": "short-lived"})
	if err != nil || rec.State != tasks.Succeeded {
		t.Fatalf("run: %+v, %v", rec, err)
	}
	var last error
	waitFor(t, "the task to expire", func() bool {
		_, last = tasks.NewClient(m.c).Get(ctx, rec.TaskID, false)
		return last != nil
	})
	wantCode(t, last, envelope.CodeTaskExpired)
	_, err = tasks.NewClient(m.c).Attach(ctx, rec.TaskID, 1)
	if err == nil {
		ts, _ := tasks.NewClient(m.c).Attach(ctx, rec.TaskID, 1)
		_, err = ts.Next()
	}
	wantCode(t, err, envelope.CodeTaskExpired)
	// An id of the same shape that is young answers task_not_found.
	young, err := tasks.NewClient(m.c).Submit(ctx, "echo", map[string]string{"message": "x"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tasks.NewClient(m.c).Get(ctx, young[:20]+"000000", false)
	wantCode(t, err, envelope.CodeTaskNotFound)
}

// A durable task whose tool asks waits in input_required with its
// question in the record; another process of the same identity (the
// built binary) answers it later and the handler gets the value; a
// decline given through the Go API reaches the handler too; a task that
// asks nothing refuses an answer.
func TestDurableTaskAsksAndAnotherProcessAnswers(t *testing.T) {
	m := startDurable(t, tasks.Config{})
	askingTool(t, meshtest.NewWorker(t, meshtest.Connect(t, m.srv), worker.Config{}))
	ctx := context.Background()
	waitAsking := func(t *testing.T, id string) caller.Question {
		var rec tasks.Record
		waitFor(t, "the task to wait for input", func() bool {
			r, err := tasks.NewClient(m.c).Get(ctx, id, false)
			rec = r
			return err == nil && r.State == tasks.InputRequired
		})
		q, ok := rec.OpenQuestion()
		if !ok || q.Message != "Delete /tmp/x?" || q.Tool != "rm" {
			t.Fatalf("record %+v: want the open question of rm", rec)
		}
		return q
	}
	t.Run("answered by another process", func(t *testing.T) {
		id, err := tasks.NewClient(m.c).Submit(ctx, "rm", deleteIn{Path: "/tmp/x"})
		if err != nil {
			t.Fatal(err)
		}
		waitAsking(t, id)
		r := runCmd(t, "", "tasks", "answer", id, "--answer", `{"confirm":true,"reason":"later"}`, "--server", m.srv.ClientURL())
		if r.code != 0 {
			t.Fatalf("tasks answer exited %d: %s", r.code, r.stderr)
		}
		evs, rec := attachAll(t, m.c, id)
		wantNumbered(t, evs)
		var types []string
		for _, ev := range evs {
			types = append(types, string(ev.Event.Type))
		}
		if got := strings.Join(types, ","); got != "start,question,answered,result" {
			t.Fatalf("events %s", got)
		}
		if got := string(evs[3].Event.Data); got != `{"deleted":true,"outcome":"answered","reason":"later"}` || rec.State != tasks.Succeeded {
			t.Fatalf("result %s, record %+v", got, rec)
		}
	})
	t.Run("declined through the Go API", func(t *testing.T) {
		id, err := tasks.NewClient(m.c).Submit(ctx, "rm", deleteIn{Path: "/tmp/x"}, tasks.Unary())
		if err != nil {
			t.Fatal(err)
		}
		q := waitAsking(t, id)
		other := meshtest.NewCaller(t, meshtest.Connect(t, m.srv), caller.Config{})
		if _, err := tasks.NewClient(other).Answer(ctx, id, q.ID, caller.Answer{Action: envelope.ActionAccept, Content: json.RawMessage(`{"confirm":"yes"}`)}); err == nil {
			t.Fatal("an answer the schema refuses was taken")
		}
		if _, err := tasks.NewClient(other).Answer(ctx, id, q.ID, caller.Decline()); err != nil {
			t.Fatal(err)
		}
		rec, err := tasks.NewClient(other).Get(ctx, id, true)
		ev, _ := rec.TerminalEvent()
		if err != nil || rec.State != tasks.Succeeded || string(ev.Data) != `{"deleted":false,"outcome":"declined"}` {
			t.Fatalf("record %+v, %v", rec, err)
		}
		_, err = tasks.NewClient(other).Answer(ctx, id, "", caller.Decline())
		wantCode(t, err, envelope.CodeInvalidInput)
	})
}
