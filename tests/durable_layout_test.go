package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
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
		id, err := tasks.NewClient(m.c).Submit(ctx, "hold", map[string]int{}, tasks.Unary())
		if err != nil {
			t.Fatal(err)
		}
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
			id, err := tasks.NewClient(m.c).Submit(ctx, "mark", map[string]int{"i": i}, tasks.Unary())
			if err != nil {
				t.Fatal(err)
			}
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
	id, err := tasks.NewClient(m.c).Submit(ctx, "echo", map[string]string{"message": "patient"}, tasks.Unary())
	if err != nil {
		t.Fatal(err)
	}
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
