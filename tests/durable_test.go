package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/embedcluster"
	"github.com/toolmesh/toolmesh/internal/embedserver"
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

// submitTask submits a task of tool with args through c and hands back
// its id, failing the test if the submit is refused.
func submitTask(ctx context.Context, t *testing.T, c *caller.Caller, tool string, args any, opts ...caller.Option) string {
	t.Helper()
	id, err := tasks.NewClient(c).Submit(ctx, tool, args, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return id
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
	id := submitTask(ctx, t, m.c, "count", map[string]int{"n": 300})
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
	id := submitTask(ctx, t, m.c, "echo", map[string]string{"message": "later"}, tasks.Unary())
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
	id := submitTask(ctx, t, m.c, "echo", map[string]string{"message": "x"})
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
	young := submitTask(ctx, t, m.c, "echo", map[string]string{"message": "x"})
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
		id := submitTask(ctx, t, m.c, "rm", deleteIn{Path: "/tmp/x"})
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
		id := submitTask(ctx, t, m.c, "rm", deleteIn{Path: "/tmp/x"}, tasks.Unary())
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

// layoutMesh is a task service, a caller, a worker connection and a
// JetStream view of the task stream, on either server.
type layoutMesh struct {
	c    *caller.Caller
	wnc  *nats.Conn
	logs jetstream.Stream
}

// layoutServers runs f on the embedded server and on the stock
// nats-server (the Debian 2.9 one CI installs), whose JetStream checks
// fewer publish expectations.
func layoutServers(t *testing.T, f func(t *testing.T, m layoutMesh)) {
	start := func(t *testing.T, url string) layoutMesh {
		startService(t, dialURL(t, url), tasks.Config{})
		_, logs := taskLog(context.Background(), t, dialURL(t, url))
		return layoutMesh{c: meshtest.NewCaller(t, dialURL(t, url), caller.Config{}), wnc: dialURL(t, url), logs: logs}
	}
	t.Run("embedded", func(t *testing.T) {
		srv := meshtest.StartServer(t, embedded.Config{StoreDir: t.TempDir()})
		f(t, start(t, srv.ClientURL()))
	})
	t.Run("stock nats-server", func(t *testing.T) {
		s := startStockServer(t, "-js", "-sd", t.TempDir())
		f(t, start(t, s.url))
	})
}

// taskEntry is one stored entry of a task, as the test reads it.
type taskEntry struct {
	subject string
	State   string          `json:"state"`
	Kind    string          `json:"kind"`
	Disp    int             `json:"dispatched"`
	Event   json.RawMessage `json:"event"`
}

// entriesOf reads every stored entry of task id, in order.
func entriesOf(t *testing.T, logs jetstream.Stream, id string) []taskEntry {
	t.Helper()
	ctx := context.Background()
	var out []taskEntry
	for seq := uint64(1); ; seq++ {
		m, err := logs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject("toolmesh.tasks.log.*."+id+".>"))
		if err != nil {
			return out
		}
		var e taskEntry
		if err := json.Unmarshal(m.Data, &e); err != nil {
			t.Fatal(err)
		}
		e.subject = m.Subject
		out = append(out, e)
		seq = m.Sequence
	}
}

// shape names a task's entries: submit, mark (dispatch), running,
// queued, event, terminal.
func shape(es []taskEntry) string {
	var parts []string
	for _, e := range es {
		switch {
		case !strings.HasSuffix(e.subject, ".e"):
			parts = append(parts, "submit")
		case e.Kind == "event" && e.State != "" && e.State != tasks.Running:
			parts = append(parts, "terminal")
		case e.Kind == "event":
			parts = append(parts, "event")
		case e.Disp > 0:
			parts = append(parts, "mark")
		default:
			parts = append(parts, e.State)
		}
	}
	return strings.Join(parts, ",")
}

// A unary task is its submit (its queue item too), a dispatch mark when it
// may not run twice, and its terminal carrying the final record: three
// writes, two when re-runnable; a running mark only when the attempt
// outlives a moment. On a task whose handler runs on, the record reads
// running — and only once the handler has started.
func TestDurableLayoutWritesPerTask(t *testing.T) {
	layoutServers(t, func(t *testing.T, m layoutMesh) {
		ctx := context.Background()
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		w := meshtest.NewWorker(t, m.wnc, worker.Config{})
		register(t, w, envelope.ToolSpec{Name: "echo"}, echo)
		register(t, w, envelope.ToolSpec{Name: "hold"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return map[string]bool{"held": true}, nil
		})
		for _, tc := range []struct {
			name string
			opts []caller.Option
			want []string
		}{
			{"once", nil, []string{"submit,mark,terminal", "submit,mark,running,terminal"}},
			{"re-runnable", []caller.Option{caller.WithIdempotencyKey("k1")}, []string{"submit,terminal", "submit,running,terminal"}},
		} {
			opts := append([]caller.Option{tasks.Unary()}, tc.opts...)
			rec, err := tasks.NewClient(m.c).Run(ctx, "echo", map[string]string{"message": tc.name}, opts...)
			if err != nil || rec.State != tasks.Succeeded {
				t.Fatalf("%s: %+v, %v", tc.name, rec, err)
			}
			if got := shape(entriesOf(t, m.logs, rec.TaskID)); got != tc.want[0] && got != tc.want[1] {
				t.Errorf("%s task's entries: %s, want %s", tc.name, got, strings.Join(tc.want, " or "))
			}
		}
		id := submitTask(ctx, t, m.c, "hold", map[string]int{}, tasks.Unary())
		<-entered
		waitFor(t, "the held task to read running", func() bool {
			rec, err := tasks.NewClient(m.c).Get(ctx, id, false)
			return err == nil && rec.State == tasks.Running
		})
		close(release)
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if rec, err := tasks.NewClient(m.c).Get(wctx, id, true); err != nil || rec.State != tasks.Succeeded {
			t.Fatalf("held task: %+v, %v", rec, err)
		}
		if got := shape(entriesOf(t, m.logs, id)); got != "submit,mark,running,terminal" {
			t.Errorf("held task's entries: %s", got)
		}
	})
}

// Cancels racing with runs, on both servers: every task ends with exactly
// one terminal in its log, and none that was cancelled while queued ran.
func TestDurableRunOrCancelExactlyOneWins(t *testing.T) {
	t.Parallel()
	layoutServers(t, func(t *testing.T, m layoutMesh) {
		const n = 40
		ctx := context.Background()
		var mu sync.Mutex
		ran := map[string]int{}
		w := meshtest.NewWorker(t, m.wnc, worker.Config{})
		register(t, w, envelope.ToolSpec{Name: "mark"}, func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
			mu.Lock()
			ran[string(req.Args)]++
			mu.Unlock()
			return req.Args, nil
		})
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			id := submitTask(ctx, t, m.c, "mark", map[string]int{"i": i}, tasks.Unary())
			ids[i] = id
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = tasks.NewClient(m.c).Cancel(ctx, id)
			}()
		}
		wg.Wait()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		outcomes := map[string]int{}
		defer func() { t.Logf("outcomes: %v", outcomes) }()
		for i, id := range ids {
			rec, err := tasks.NewClient(m.c).Get(wctx, id, true)
			if err != nil {
				t.Fatal(err)
			}
			terminals := strings.Count(shape(entriesOf(t, m.logs, id)), "terminal")
			if terminals != 1 {
				t.Errorf("task %d: %d terminals in its log", i, terminals)
			}
			ev, _ := rec.TerminalEvent()
			outcomes[rec.State+" "+ev.Message]++
			key := fmt.Sprintf(`{"i":%d}`, i)
			mu.Lock()
			runs := ran[key]
			mu.Unlock()
			switch {
			case runs > 1:
				t.Errorf("task %d ran %d times", i, runs)
			case strings.Contains(ev.Message, "while queued") && runs != 0:
				t.Errorf("task %d was cancelled while queued (%s) and ran", i, ev.Message)
			case rec.State == tasks.Succeeded && runs != 1:
				t.Errorf("task %d succeeded and ran %d times", i, runs)
			}
		}
	})
}

// A task whose tool no worker hosts records why it waits once, then
// writes nothing more however often it is tried, and runs when a worker
// of its tool appears.
func TestDurableTaskWaitingForAWorkerWritesNothingMore(t *testing.T) {
	m := startDurable(t, tasks.Config{})
	ctx := context.Background()
	id := submitTask(ctx, t, m.c, "echo", map[string]string{"message": "patient"}, tasks.Unary())
	js, logs := taskLog(ctx, t, meshtest.Connect(t, m.srv))
	cons, err := js.Consumer(ctx, taskStream, "dispatch")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task to say it waits for a worker", func() bool {
		rec, err := tasks.NewClient(m.c).Get(ctx, id, false)
		return err == nil && strings.Contains(rec.Waiting, "no worker hosts tool echo")
	})
	first := shape(entriesOf(t, logs, id))
	waitFor(t, "the task to be tried three more times", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.Delivered.Consumer >= 4
	})
	if got := shape(entriesOf(t, logs, id)); got != first || got != "submit,mark,queued" {
		t.Fatalf("entries after retries: %s (first %s), want submit,mark,queued throughout", got, first)
	}
	m.countWorker(t)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if rec, err := tasks.NewClient(m.c).Get(wctx, id, true); err != nil || rec.State != tasks.Succeeded {
		t.Fatalf("once a worker is up: %+v, %v", rec, err)
	}
}

// startCluster starts three embedded JetStream servers in one cluster,
// at once: a clustered JetStream server is ready only with a quorum.
func startCluster(t *testing.T) map[string]*embedded.Server {
	t.Helper()
	var routes []string
	var listens []string
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listens = append(listens, l.Addr().String())
		routes = append(routes, "nats-route://"+l.Addr().String())
		_ = l.Close()
	}
	type started struct {
		name string
		s    *embedded.Server
		err  error
	}
	ch := make(chan started, 3)
	for i := range 3 {
		name := fmt.Sprintf("n%d", i+1)
		go func() {
			s, err := embedcluster.Start(context.Background(), embedserver.Config{Name: name, StoreDir: t.TempDir(),
				ReadyTimeout: time.Minute, Cluster: &embedserver.Cluster{Name: "tm", Listen: listens[i], Routes: routes}})
			ch <- started{name, s, err}
		}()
	}
	servers := map[string]*embedded.Server{}
	for range 3 {
		st := <-ch
		if st.err != nil {
			t.Fatal(st.err)
		}
		t.Cleanup(func() { _ = st.s.Shutdown(context.Background()) })
		servers[st.name] = st.s
	}
	return servers
}

// On a 3-node cluster with R3 streams, losing the server that leads the
// task log mid-task loses no task: the running one and one submitted
// while the cluster elects a new leader both complete.
func TestDurableClusterLeaderLossLosesNoTask(t *testing.T) {
	servers := startCluster(t)
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	all := strings.Join(urls, ",")
	dial := func() *nats.Conn {
		nc, err := nats.Connect(all, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	svcNC := dial()
	var svc *tasks.Service
	waitFor(t, "the JetStream cluster to take the R3 streams", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := tasks.New(ctx, svcNC, tasks.Config{Replicas: 3, Heartbeat: 200 * time.Millisecond})
		svc = s
		return err == nil
	})
	t.Cleanup(func() { svc.Close(context.Background()) })
	leader := logLeader(t, svcNC)

	release := make(chan struct{})
	w := meshtest.NewWorker(t, dial(), worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "hold", Streaming: true}, func(ctx context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
		if err := emit.Delta(map[string]string{"phase": "before"}); err != nil {
			return nil, err
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return req.Args, nil
	})
	c := meshtest.NewCaller(t, dial(), caller.Config{})
	ctx := context.Background()
	first := submitTask(ctx, t, c, "hold", map[string]int{"task": 1})
	waitFor(t, "the first task to run", func() bool {
		rec, err := tasks.NewClient(c).Get(ctx, first, false)
		return err == nil && rec.Events >= 2
	})
	_ = servers[leader].Shutdown(ctx)
	second := submitTask(ctx, t, c, "hold", map[string]int{"task": 2})
	close(release)
	for _, id := range []string{first, second} {
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		rec, err := tasks.NewClient(c).Get(wctx, id, true)
		cancel()
		if err != nil || rec.State != tasks.Succeeded {
			t.Fatalf("task %s after losing %s: %+v, %v", id, leader, rec, err)
		}
		evs, _ := attachAll(t, c, id)
		wantNumbered(t, evs)
	}
	if newLeader := logLeader(t, svcNC); newLeader == leader {
		t.Fatalf("the log is still led by the lost server %s", leader)
	}
}

// logLeader names the server that leads the task log.
func logLeader(t *testing.T, nc *nats.Conn) string {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var leader string
	waitFor(t, "the task log to have a leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, taskStream)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
			return false
		}
		leader = info.Cluster.Leader
		return true
	})
	return leader
}
