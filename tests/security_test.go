package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
	"github.com/toolmesh/toolmesh/internal/fleet"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// secureMesh is a nats-server running deploy/secure/nats-server.conf as
// shipped (only the listen address is moved to a free port), with the
// passwords the config reads from the environment.
type secureMesh struct {
	srv       *server.Server
	passwords map[string]string // user → password
}

func startSecure(t *testing.T) *secureMesh {
	t.Helper()
	m := &secureMesh{passwords: secureEnv(t)}
	m.srv = testutil.StartServerFromConfig(t, "../deploy/secure/nats-server.conf")
	return m
}

// secureEnv sets what deploy/secure/nats-server.conf reads from the
// environment for t: a new password for each of its users (returned,
// user → password) and the task store's directory.
func secureEnv(t *testing.T) map[string]string {
	t.Helper()
	passwords := map[string]string{}
	for _, user := range []string{"alice", "bob", "tools", "files", "tasks"} {
		passwords[user] = configPassword(t)
		t.Setenv("TOOLMESH_"+strings.ToUpper(user)+"_PASSWORD", passwords[user])
	}
	t.Setenv("TOOLMESH_TASKS_STORE", t.TempDir())
	return passwords
}

// asyncErrs collects a connection's asynchronous errors (permissions
// violations arrive this way).
type asyncErrs struct {
	mu   sync.Mutex
	errs []error
	ch   chan error
}

func (a *asyncErrs) all() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]error(nil), a.errs...)
}

// dial connects as user; violations are collected in the returned asyncErrs.
func (m *secureMesh) dial(t *testing.T, user string) (*nats.Conn, *asyncErrs) {
	t.Helper()
	ae := &asyncErrs{ch: make(chan error, 100)}
	nc, err := nats.Connect(m.srv.ClientURL(), nats.UserInfo(user, m.passwords[user]),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			ae.mu.Lock()
			ae.errs = append(ae.errs, err)
			ae.mu.Unlock()
			select {
			case ae.ch <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc, ae
}

// demoWorker is a worker of pool "demo" connected as the tools user.
// caller is a caller connected as user, closed when t ends.
func (m *secureMesh) caller(t *testing.T, user string) *caller.Caller {
	t.Helper()
	nc, _ := m.dial(t, user)
	return meshtest.NewCaller(t, nc, caller.Config{})
}

func (m *secureMesh) demoWorker(t *testing.T, cfg worker.Config) *worker.Worker {
	t.Helper()
	nc, _ := m.dial(t, "tools")
	cfg.Pool = "demo"
	return meshtest.NewWorker(t, nc, cfg)
}

// configPassword is a random password a nats-server configuration can
// take through a $VAR reference: it starts with a letter, because the
// server parses the variable's value and one starting with a digit (read
// as a number or a size) stops it from loading the configuration.
func configPassword(t testing.TB) string { return "p" + randomToken(t, 23) }

func randomToken(t testing.TB, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// wantDenied subscribes to subject on nc and asserts the server refuses it.
func wantDenied(t *testing.T, nc *nats.Conn, queue, subject string) {
	t.Helper()
	var err error
	if queue != "" {
		_, err = nc.QueueSubscribe(subject, queue, func(*nats.Msg) {})
	} else {
		_, err = nc.Subscribe(subject, func(*nats.Msg) {})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	op, denied, ok := wire.Violation(nc.LastError())
	if !ok || op != wire.OpSubscribe || denied != subject {
		t.Fatalf("subscribing %q was not refused (last error %v)", subject, nc.LastError())
	}
}

// parkTool blocks until its call's context ends; started receives each
// call's worker-side start.
func parkTool(started chan<- string, ended chan<- error) worker.HandlerFunc {
	return func(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		started <- req.CallID
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, ctx.Err()
	}
}

// Attack: bob subscribes to every inbox and to the worker side's subjects
// to read alice's results. Tenants live in separate accounts: bob's
// wildcard sees only his own account, and everything else is refused.
func TestSecureCallerCannotReadAnotherCallersInbox(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	bnc, _ := m.dial(t, "bob")
	sniff := subscribed(t, bnc, "_INBOX.>", 1000)
	for _, subj := range []string{"toolmesh.call.>", "toolmesh.ctl.>", "_R_.>", ">"} {
		wantDenied(t, bnc, "", subj)
	}
	alice := m.caller(t, "alice")
	secret := randomToken(t, 40)
	resp, err := alice.Call(context.Background(), "demo.echo", map[string]string{"message": secret})
	if err != nil || !resp.Success {
		t.Fatalf("alice's call: %v", err)
	}
	// Bob's own call: its reply reaches his sniffer too, and it was
	// published by the same worker after alice's, so anything of alice's
	// routed to bob would have arrived before it.
	bob := meshtest.NewCaller(t, bnc, caller.Config{})
	if _, err := bob.Call(context.Background(), "demo.echo", map[string]string{"message": "bob"}); err != nil {
		t.Fatal(err)
	}
	for {
		msg := <-sniff
		if strings.Contains(string(msg.Data), secret) || strings.Contains(msg.Subject, alice.ID()) {
			t.Fatalf("bob read alice's message on %s: %s", msg.Subject, msg.Data)
		}
		if strings.Contains(msg.Subject, bob.ID()) && strings.Contains(string(msg.Data), `"bob"`) {
			return // bob's own result: the sniffer works, and saw nothing of alice's
		}
	}
}

// Attack: bob learns alice's call id and worker id and sends cancel and
// credit for it on the worker's control subject. The worker binds control
// to the identity the server stamps, so neither touches alice's call.
func TestSecureCallerCannotCancelOrCreditAnotherCallersCall(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	bobStarted, bobEnded := make(chan string, 1), make(chan error, 1)
	register(t, w, envelope.ToolSpec{Name: "demo.park", Streaming: true}, parkTool(bobStarted, bobEnded))
	emitted := make(chan int, 1)
	register(t, w, envelope.ToolSpec{Name: "demo.flood", Streaming: true}, func(ctx context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
		n := 0
		defer func() { emitted <- n }()
		for n < 1000 { // bounded, so a broken isolation fails the test rather than hanging it
			if err := emit.Delta(map[string]int{"i": n}); err != nil {
				return nil, err
			}
			n++
		}
		return map[string]int{"n": n}, nil
	})
	bnc, _ := m.dial(t, "bob")
	alice := m.caller(t, "alice")
	bob := meshtest.NewCaller(t, bnc, caller.Config{})
	ctx := context.Background()

	// Alice's stream, window 2: the start event and one delta; reading the
	// start grants one more delta, then the handler waits for credit alice
	// never grants (she reads nothing more).
	as, err := alice.Stream(ctx, "demo.flood", nil, caller.WithWindow(2))
	if err != nil {
		t.Fatal(err)
	}
	start, err := as.Next()
	if err != nil || start.Type != envelope.EventStart {
		t.Fatalf("alice's first event %+v %v", start, err)
	}
	workerID, _ := start.Metadata["worker_id"].(string)

	// Bob's barrier call on the same worker.
	bs, err := bob.Stream(ctx, "demo.park", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-bobStarted
	if ev, err := bs.Next(); err != nil || ev.Type != envelope.EventStart {
		t.Fatalf("bob's first event %+v %v", ev, err)
	}
	ctl := wire.Subjects{}.Control(workerID)
	for _, c := range []wire.Control{
		{Op: wire.OpCredit, CallID: as.CallID(), N: math.MaxInt64},
		{Op: wire.OpCancel, CallID: as.CallID()},
		{Op: wire.OpAlive, CallerID: alice.ID()},
	} {
		if err := bnc.Publish(ctl, c.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	// Bob closes his own call: its cancel travels the same connection and
	// subject after the attack, so once his handler ends the worker has
	// handled every attack message (control is handled in order, at once).
	_ = bs.Close()
	if cause := <-bobEnded; cause == nil || !strings.Contains(cause.Error(), "cancelled by the caller") {
		t.Fatalf("bob's own cancel: %v", cause)
	}
	// Had the credit counted, the handler would already be past its
	// second delta (a credit hands the waiting handler its turn at once);
	// alice's own grant, sent before her close on her connection, allows
	// exactly the second. Alice now ends her call herself.
	_ = as.Close()
	if n := <-emitted; n != 2 {
		t.Errorf("alice's handler emitted %d deltas; bob's credit reached her call", n)
	}
	waitToolStats(t, w, "demo.flood", "alice's call to end as cancelled by herself", func(st fleet.Counters) bool {
		return st.Requests == 1 && strings.HasPrefix(st.LastError, "cancelled")
	})
}

// The cancel half on its own, ending in a result: alice's call survives
// bob's cancel and completes successfully.
func TestSecureCancelOfAnotherCallersCallIsIgnored(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	release := make(chan struct{})
	aliceStarted := make(chan struct{}, 1)
	register(t, w, envelope.ToolSpec{Name: "demo.gate", Streaming: true}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		aliceStarted <- struct{}{}
		select {
		case <-release:
			return map[string]bool{"ok": true}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	bobStarted, bobEnded := make(chan string, 1), make(chan error, 1)
	register(t, w, envelope.ToolSpec{Name: "demo.park", Streaming: true}, parkTool(bobStarted, bobEnded))
	bnc, _ := m.dial(t, "bob")
	alice := m.caller(t, "alice")
	bob := meshtest.NewCaller(t, bnc, caller.Config{})
	ctx := context.Background()
	as, err := alice.Stream(ctx, "demo.gate", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-aliceStarted
	bs, err := bob.Stream(ctx, "demo.park", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-bobStarted
	if _, err := bs.Next(); err != nil {
		t.Fatal(err)
	}
	// Once plainly, and once claiming to be alice in every spelling of the
	// identity header: the server replaces the exact name with its own
	// stamp, and the worker reads only that.
	forgedAlice := `{"acc":"ALICE","user":"alice"}`
	for _, h := range []nats.Header{nil, {
		wire.HeaderRequestInfo: {forgedAlice, forgedAlice},
		"nats-request-info":    {forgedAlice},
		"NATS-REQUEST-INFO":    {forgedAlice},
	}} {
		msg := &nats.Msg{Subject: wire.Subjects{}.Control(w.ID()), Header: h,
			Data: wire.Control{Op: wire.OpCancel, CallID: as.CallID()}.Encode()}
		if err := bnc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
	_ = bs.Close()
	<-bobEnded
	close(release)
	resp, err := as.Response()
	if err != nil || !resp.Success {
		t.Fatalf("alice's call after bob's cancel: %v", err)
	}
}

// Attack: alice sends a call whose reply subject is bob's inbox, hoping
// bob receives her forged result. Reply subjects exist only in the
// sender's account: the answer comes back to alice.
func TestSecureReplySubjectInjectionFails(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	release := make(chan struct{})
	register(t, w, envelope.ToolSpec{Name: "demo.slow"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		<-release
		return map[string]string{"message": "genuine"}, nil
	})
	anc, _ := m.dial(t, "alice")
	bob := m.caller(t, "bob")
	ctx := context.Background()
	bs, err := bob.Stream(ctx, "demo.slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	victim := "_INBOX." + bob.ID() + "." + bs.CallID()
	back := subscribed(t, anc, victim, 10)
	publishCall(t, anc, "demo.echo", victim, "tm2 mode=unary\n"+`{"args":{"message":"forged"}}`)
	if msg := <-back; !strings.Contains(string(msg.Data), "forged") {
		t.Fatalf("alice's own copy: %s", msg.Data)
	}
	close(release)
	resp, err := bs.Response()
	if err != nil || !resp.Success {
		t.Fatalf("bob's call: %v", err)
	}
	if v, _ := resp.Get("message"); string(v) != `"genuine"` {
		t.Fatalf("bob received %s, not his own result", v)
	}
}

// Attack: the worker identity tries to read every call, to steal calls of
// a tool it is not permitted, and to read control subjects beyond its own
// pool's. The server refuses each, and Register says so.
func TestSecureWorkerScopedToItsTools(t *testing.T) {
	m := startSecure(t)
	nc, _ := m.dial(t, "tools")
	for _, s := range []struct{ queue, subject string }{
		{"", "toolmesh.call.>"},
		{"toolmesh", "toolmesh.call.ops.deploy"},
		{"", "toolmesh.describe.>"},
		{"", "toolmesh.ctl.>"},
		{"", "toolmesh.ctl.*"},
		{"", "toolmesh.ctl.ops.01J0000000000000000000000"},
		{"", "_INBOX.>"},
		{"", "_R_.>"},
	} {
		wantDenied(t, nc, s.queue, s.subject)
	}
	// Nor can it publish anywhere but server-made reply subjects: no
	// forged results into inboxes, no forged control, no calls.
	for _, subj := range []string{"_INBOX.victim.call", "toolmesh.ctl.demo.01J0000000000000000000000", "toolmesh.call.demo.echo"} {
		if err := nc.Publish(subj, []byte(`{"type":"result","data":{"forged":true}}`)); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if op, denied, ok := wire.Violation(nc.LastError()); !ok || op != wire.OpPublish || denied != subj {
			t.Fatalf("publishing %q was not refused (last error %v)", subj, nc.LastError())
		}
	}
	// A worker outside its pool cannot even start: its control subject is refused.
	if _, err := worker.New(nc, worker.Config{Logger: meshtest.Quiet()}); err == nil {
		t.Fatal("a worker without the permitted pool started")
	} else if p := wantCode(t, err, envelope.CodeForbidden); !strings.Contains(p.Detail, "toolmesh.ctl.") {
		t.Fatalf("detail %q does not name the control subject", p.Detail)
	}
	w := m.demoWorker(t, worker.Config{})
	err := w.Register(envelope.ToolSpec{Name: "ops.deploy"}, worker.HandlerFunc(echo))
	if p := wantCode(t, err, envelope.CodeForbidden); !strings.Contains(p.Detail, `"toolmesh.call.ops.deploy"`) {
		t.Fatalf("detail %q does not name the subject", p.Detail)
	}
	if len(w.Specs()) != 0 {
		t.Fatalf("the refused tool was registered: %+v", w.Specs())
	}
	// What it is permitted still works, and a caller reaches it.
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	anc, _ := m.dial(t, "alice")
	if _, err := meshtest.NewCaller(t, anc, caller.Config{}).Call(context.Background(), "demo.echo", nil); err != nil {
		t.Fatal(err)
	}
}

// Attack: a tenant reads tool bindings (cmd, args, env secrets) through
// describe, the catalogue and $SRV.INFO. None carries them.
func TestSecureDiscoveryCarriesNoBindings(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	secret := randomToken(t, 40)
	// The program's path carries the secret too; it must exist, since the
	// tools-file loader refuses a cmd it cannot run.
	dir := t.TempDir()
	if err := os.Symlink("/bin/echo", filepath.Join(dir, "echo-"+secret)); err != nil {
		t.Fatal(err)
	}
	registerToolsFile(t, w, fmt.Sprintf(`
tools:
  - name: demo.secretive
    description: has a secret in its binding
    binding:
      cli:
        cmd: %[2]s/echo-%[1]s
        args: ["--key=%[1]s"]
        env: {API_KEY: "%[1]s"}
`, secret, dir), nil)
	anc, _ := m.dial(t, "alice")
	alice := meshtest.NewCaller(t, anc, caller.Config{})
	ctx := context.Background()
	var answers [][]byte
	for _, subj := range []string{"toolmesh.describe.demo.secretive", "toolmesh.catalog", "$SRV.INFO", "$SRV.INFO.toolmesh"} {
		msg, err := anc.Request(subj, nil, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subj, err)
		}
		answers = append(answers, msg.Data)
	}
	spec, err := alice.Catalog().Describe(ctx, "demo.secretive")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := alice.Catalog().List(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	answers = append(answers, mustJSON(spec), mustJSON(cat))
	for _, a := range answers {
		if bytes.Contains(a, []byte(secret[:8])) || bytes.Contains(a, []byte(`"binding"`)) || bytes.Contains(a, []byte("echo-")) {
			t.Errorf("discovery answer carries the binding: %s", a)
		}
	}
	if spec.Description == "" || bytes.Contains(mustJSON(spec), []byte(`"binding"`)) {
		t.Errorf("describe: %+v", spec)
	}
}

// Attack: alice calls a tool her tenant is not permitted (ops.*). The
// server refuses the publish asynchronously; the call fails with forbidden
// at once, long before its own (hour-long) budget.
func TestSecureDeniedPublishIsForbiddenAtOnce(t *testing.T) {
	m := startSecure(t)
	anc, ae := m.dial(t, "alice")
	alice := meshtest.NewCaller(t, anc, caller.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := alice.Call(ctx, "ops.deploy", nil)
	p := wantCode(t, err, envelope.CodeForbidden)
	if p.Transient() || !strings.Contains(p.Detail, "toolmesh.call.ops.deploy") {
		t.Fatalf("problem %+v", p)
	}
	// The connection's own error handler still saw the violation.
	if v := <-ae.ch; !errors.Is(v, nats.ErrPermissionViolation) {
		t.Fatalf("async error %v", v)
	}
}

// A plain `nats req`-style stream call (no caller id, so nobody proves the
// caller alive) whose inbox nobody reads ends within its bounded life.
func TestSecureUnleasedCallHasABoundedLife(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{Liveness: worker.Liveness{MaxUnleasedLife: 500 * time.Millisecond}})
	ended := make(chan error, 1)
	register(t, w, envelope.ToolSpec{Name: "demo.forever", Streaming: true}, func(ctx context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
		for ctx.Err() == nil {
			_ = emit.Delta("x") // blocks once the window is spent: nobody grants
		}
		ended <- ctx.Err()
		return nil, ctx.Err()
	})
	anc, _ := m.dial(t, "alice")
	publishCall(t, anc, "demo.forever", "_INBOX.nobody-reads-this.1", "tm2 mode=stream\n"+`{"args":{}}`)
	waitToolStats(t, w, "demo.forever", "the call's terminal recorded", func(st fleet.Counters) bool {
		return st.Errors == 1 && strings.HasPrefix(st.LastError, "timeout")
	})
	// The handler said how its context ended before it returned.
	if err := <-ended; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("handler ended with %v, want its bounded life's deadline", err)
	}
}

// A credit grant of MaxInt64 saturates; the stream runs to its end. The
// call is made by hand, as a client other than caller.Caller would, since
// the Caller itself refuses events beyond the window it granted.
func TestSecureHugeCreditDoesNotFreezeTheStream(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.count", Streaming: true, InputSchema: countSpec.InputSchema}, count)
	anc, _ := m.dial(t, "alice")
	events := subscribed(t, anc, "_INBOX.raw.>", 1000)
	publishCall(t, anc, "demo.count", "_INBOX.raw.1", "tm2 id=raw1 mode=stream window=4\n"+`{"args":{"n":200}}`)
	deltas := 0
	for m := range events {
		for _, ev := range replyEvents(t, m) {
			switch ev.Type {
			case envelope.EventStart:
				wid, _ := ev.Metadata["worker_id"].(string)
				huge := wire.Control{Op: wire.OpCredit, CallID: "raw1", N: math.MaxInt64}
				if err := anc.Publish(wire.Subjects{}.Control(wid), huge.Encode()); err != nil {
					t.Fatal(err)
				}
			case envelope.EventDelta:
				deltas++
			case envelope.EventProgress:
			case envelope.EventResult:
				if deltas != 200 || string(ev.Data) != `{"count":200}` {
					t.Fatalf("%d deltas, result %s", deltas, ev.Data)
				}
				return
			default:
				t.Fatalf("event %+v", ev)
			}
		}
	}
}

// Malformed call metadata is invalid_input, never silently ignored.
func TestSecureMalformedMetadataIsInvalidInput(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	anc, _ := m.dial(t, "alice")
	for _, h := range []struct{ name, value string }{
		{wire.MetaTimeout, "soon"},
		{wire.MetaTimeout, "-5"},
		{wire.MetaTimeout, "99999999999999999999"},
		{wire.MetaMode, "firehose"},
		{wire.MetaWindow, "lots"},
		{wire.MetaInterval, "1.5"},
		{wire.MetaID, "a.b.>"},
		{wire.MetaCaller, strings.Repeat("c", 200)},
		{wire.MetaIdempotency, strings.Repeat("k", 300)},
		{wire.MetaBearer, "bad%escape"},
	} {
		msg := nats.NewMsg(wire.Subjects{}.Call("demo.echo"))
		msg.Data = []byte("tm2 " + h.name + "=" + h.value + "\n" + `{"args":{}}`)
		reply, err := anc.RequestMsg(msg, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
		ev, err := envelope.ParseEvent(reply.Data)
		if err != nil {
			t.Fatal(err)
		}
		if p := ev.Problem(); p == nil || p.Code != envelope.CodeInvalidInput || p.Extensions["meta"] != h.name {
			t.Errorf("%s: %.20q answered %s", h.name, h.value, reply.Data)
		}
	}
}

// registerToolsFile loads a tools file into w.
func registerToolsFile(t *testing.T, w *worker.Worker, yaml string, log *slog.Logger) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := cli.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.RegisterFile(w, f, log); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// leakTools prints the bearer ($ATD_BEARER in TOK) so that the 4 KiB
// stderr tail (where "tail") or the 200-byte output excerpt (where
// "excerpt", json and ndjson) cuts through it: n bytes of padding put the
// cut at every offset of the token.
const leakTools = `
tools:
  - name: demo.leak
    binding:
      cli:
        cmd: sh
        args: ["-c", "n=$(printf %s \"$0\" | sed -n 's/.*\"n\":\\([0-9]*\\).*/\\1/p'); case \"$0\" in *tail*) printf %s \"$TOK\" >&2; head -c \"$n\" /dev/zero | tr '\\0' y >&2; exit 3;; esac; head -c \"$n\" /dev/zero | tr '\\0' x; printf %s \"$TOK\"; printf zzz"]
        args_template: "{params_json}"
        env: {TOK: "$ATD_BEARER"}
  - name: demo.leaklines
    binding:
      cli:
        cmd: sh
        args: ["-c", "n=$(printf %s \"$0\" | sed -n 's/.*\"n\":\\([0-9]*\\).*/\\1/p'); head -c \"$n\" /dev/zero | tr '\\0' x; printf '%s\\n' \"$TOK\""]
        args_template: "{params_json}"
        env: {TOK: "$ATD_BEARER"}
        output_format: ndjson
`

// A 40-character random bearer never leaves the worker, whole or as any
// 8-character piece: not in Problems, $SRV.STATS, exported spans (both
// sides) or the worker's debug logs — also when a tool prints it where the
// stderr tail or an output excerpt cuts it, at every offset.
func TestSecureBearerNeverLeaks(t *testing.T) {
	m := startSecure(t)
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	w := m.demoWorker(t, worker.Config{Logger: log, Tracing: worker.Tracing{TracerProvider: tp}})
	registerToolsFile(t, w, leakTools, log)
	register(t, w, envelope.ToolSpec{Name: "demo.goleak"}, func(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
		var a struct{ N int }
		_ = req.Bind(&a)
		if a.N < 0 {
			panic("the token is " + req.Bearer)
		}
		k := a.N % len(req.Bearer)
		return nil, envelope.Problemf(envelope.CodeToolFailed, "upstream refused token %s", req.Bearer).
			WithExtension("head", req.Bearer[:k]+"…").WithExtension("tail", "…"+req.Bearer[k:]).
			WithExtension("nested", map[string]any{"list": []any{req.Bearer[k/2 : k/2+20]}})
	})
	anc, _ := m.dial(t, "alice")
	alice := meshtest.NewCaller(t, anc, caller.Config{Logger: log, TracerProvider: tp})
	bearer := randomToken(t, 40)
	ctx := context.Background()

	var seen []string // every text that left the worker
	call := func(tool string, args map[string]any) {
		t.Helper()
		resp, err := alice.Call(ctx, tool, args, caller.WithBearer(bearer))
		if err == nil {
			t.Fatalf("%s %v succeeded: %+v", tool, args, resp)
		}
		seen = append(seen, string(mustJSON(resp)))
	}
	for n := 4050; n <= 4140; n++ {
		call("demo.leak", map[string]any{"where": "tail", "n": n})
	}
	for n := 155; n <= 205; n++ {
		call("demo.leak", map[string]any{"where": "excerpt", "n": n})
		call("demo.leaklines", map[string]any{"n": n})
	}
	for n := range 40 {
		call("demo.goleak", map[string]any{"n": n})
	}
	call("demo.goleak", map[string]any{"n": -1})
	for _, subj := range []string{"$SRV.STATS", "$SRV.STATS.toolmesh"} {
		msg, err := anc.Request(subj, nil, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, string(msg.Data))
	}
	for _, s := range spans.GetSpans() {
		seen = append(seen, fmt.Sprintf("%s %+v %+v %+v", s.Name, s.Status, s.Attributes, s.Events))
	}
	if len(spans.GetSpans()) == 0 {
		t.Fatal("no spans exported")
	}
	seen = append(seen, logs.String())
	if !strings.Contains(logs.String(), "panicked") {
		t.Fatal("the worker's log does not show the panic: is it wired?")
	}
	for i := 0; i+8 <= len(bearer); i++ {
		piece := bearer[i : i+8]
		for _, s := range seen {
			if j := strings.Index(s, piece); j >= 0 {
				t.Fatalf("bearer piece %q leaked: …%s…", piece, s[max(0, j-60):min(len(s), j+60)])
			}
		}
	}
	// The redaction is visible where it happened.
	if !strings.Contains(strings.Join(seen, "\n"), "[REDACTED]") {
		t.Error("no [REDACTED] mark anywhere: did the tools print the token at all?")
	}
}

// The built binary: wrong credentials are unauthorized (exit 7, not the
// transient connection_lost), and a password in the URL is never printed.
func TestSecureCommandWrongPasswordIsUnauthorized(t *testing.T) {
	m := startSecure(t)
	url := m.srv.ClientURL()
	unauthorized, _ := codes.Lookup(envelope.CodeUnauthorized)
	r := runCmd(t, "", "call", "demo.echo", "--server", url, "--user", "alice", "--password", "not-her-password", "--format", "json")
	if r.code != unauthorized.ExitCode || !strings.Contains(r.stderr, `"code":"unauthorized"`) || !strings.Contains(r.stderr, `"retry_after":null`) {
		t.Fatalf("wrong password: exit %d stderr %s", r.code, r.stderr)
	}
	withPassword := strings.Replace(url, "nats://", "nats://alice:Pa55-in-the-url@", 1)
	r = runCmd(t, "", "call", "demo.echo", "--server", withPassword, "--format", "json")
	if r.code != unauthorized.ExitCode || strings.Contains(r.stderr, "Pa55-in-the-url") {
		t.Fatalf("password in the URL: exit %d stderr %s", r.code, r.stderr)
	}
	// Nobody listening at all is still connection_lost, and still no password.
	r = runCmd(t, "", "call", "demo.echo", "--server", "nats://bob:Pa55-in-the-url@127.0.0.1:1", "--format", "json")
	if lost, _ := codes.Lookup(envelope.CodeConnectionLost); r.code != lost.ExitCode || strings.Contains(r.stderr, "Pa55-in-the-url") {
		t.Fatalf("unreachable server: exit %d stderr %s", r.code, r.stderr)
	}
}

// The built binary: a worker whose subscriptions the server refuses exits
// non-zero with a message naming the subject, instead of logging "worker
// ready" and serving nothing.
func TestSecureCommandWorkerDeniedSubscriptionExits(t *testing.T) {
	m := startSecure(t)
	tools := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(tools, []byte("tools:\n  - name: ops.report\n    binding: {cli: {cmd: \"true\"}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	forbidden, _ := codes.Lookup(envelope.CodeForbidden)
	args := []string{"worker", "--config", tools, "--server", m.srv.ClientURL(), "--user", "tools", "--password", m.passwords["tools"], "--format", "json"}
	r := runCmd(t, "", append(args, "--pool", "demo")...)
	if r.code != forbidden.ExitCode || !strings.Contains(r.stderr, `toolmesh.call.ops.report`) {
		t.Fatalf("tool outside the permitted namespace: exit %d stderr %s", r.code, r.stderr)
	}
	r = runCmd(t, "", args...) // no --pool: its control subject is not the pool's
	if r.code != forbidden.ExitCode || !strings.Contains(r.stderr, `toolmesh.ctl.`) {
		t.Fatalf("worker without its pool: exit %d stderr %s", r.code, r.stderr)
	}
}

// Caller liveness works across accounts: alice's liveness messages carry
// the same server-stamped identity as her call, so a call outliving many
// of the worker's liveness checks is not cancelled as caller-lost.
func TestSecureCallerLivenessCrossesTheImport(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	release := make(chan struct{})
	register(t, w, envelope.ToolSpec{Name: "demo.wait"}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		select {
		case <-release:
			return map[string]bool{"ok": true}, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	// Watch alice's liveness messages arrive on the pool's control subjects.
	sniffer, _ := m.dial(t, "tools")
	alive := subscribed(t, sniffer, "toolmesh.ctl.demo.>", 1000)
	anc, _ := m.dial(t, "alice")
	alice := meshtest.NewCaller(t, anc, caller.Config{Heartbeat: wire.MinHeartbeat})
	errc := make(chan error, 1)
	go func() { _, err := alice.Call(context.Background(), "demo.wait", nil); errc <- err }()
	// 3 silent intervals would end the call; wait for 4 intervals' worth of
	// liveness messages (sent every half interval) before releasing it.
	for seen := 0; seen < 8; {
		select {
		case msg := <-alive:
			if strings.Contains(string(msg.Data), `"alive"`) && wire.Identity(msg.Header) == "ALICE/alice" {
				seen++
			}
		case err := <-errc:
			t.Fatalf("alice's call ended while she was alive: %v", err)
		}
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatalf("alice's long call: %v", err)
	}
}

// Permissions violations the deploy/secure layout cannot provoke (its
// workers only ever answer on server-made reply subjects), on a server
// whose users are set up to provoke them: a worker refused the publish of
// a call's events stops that call's handler with forbidden; a caller
// refused its inbox fails New naming the subject.
func TestSecureViolationsReachTheCallsTheyConcern(t *testing.T) {
	url := testutil.StartServerWith(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "w", Password: "w", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Deny: []string{"_INBOX.walled.>"}}}},
			{Username: "c", Password: "c", Permissions: &server.Permissions{
				Subscribe: &server.SubjectPermission{Deny: []string{"_INBOX.refused.>"}}}},
		}
	})
	dial := func(user string) *nats.Conn {
		nc, err := nats.Connect(url, nats.UserInfo(user, user))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	w := meshtest.NewWorker(t, dial("w"), worker.Config{})
	causes := make(chan error, 1)
	register(t, w, envelope.ToolSpec{Name: "wait", Streaming: true}, func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	cnc := dial("c")
	if _, err := caller.New(cnc, caller.Config{InboxPrefix: "_INBOX.refused", Logger: meshtest.Quiet()}); err == nil {
		t.Fatal("a caller whose inbox is refused was created")
	} else if p := wantCode(t, err, envelope.CodeForbidden); !strings.Contains(p.Detail, "_INBOX.refused.") {
		t.Fatalf("detail %q does not name the inbox", p.Detail)
	}
	c := meshtest.NewCaller(t, cnc, caller.Config{InboxPrefix: "_INBOX.walled"})
	s, err := c.Stream(context.Background(), "wait", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The heartbeat naming the call before it starts (or its start event)
	// is refused; the worker ends the call forbidden — before its handler
	// starts, or by stopping the handler with that cause.
	waitToolStats(t, w, "wait", "the call recorded as forbidden", func(st fleet.Counters) bool {
		return strings.HasPrefix(st.LastError, "forbidden")
	})
	select {
	case cause := <-causes:
		if cause == nil || !strings.Contains(cause.Error(), "refused") {
			t.Fatalf("handler ended with %v", cause)
		}
	default: // the handler never started
	}
}

// Every call ends its server-made reply mapping: the server holds none
// once the calls are over, rather than one per call for minutes.
func TestSecureCallsReleaseTheirReplyMappings(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	register(t, w, envelope.ToolSpec{Name: "demo.count", Streaming: true, InputSchema: countSpec.InputSchema}, count)
	alice := m.caller(t, "alice")
	ctx := context.Background()
	for i := range 20 {
		if _, err := alice.Call(ctx, "demo.echo", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
		s, err := alice.Stream(ctx, "demo.count", map[string]int{"n": 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Response(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.Call(ctx, "demo.echo", map[string]any{"x": 1}, caller.WithTimeout(time.Hour)); err != nil {
		t.Fatal(err)
	}
	tools, err := m.srv.LookupAccount("TOOLS")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no reply mapping left in the TOOLS account", func() bool { return tools.NumPendingAllResponses() == 0 })
}

// Redaction copies: one Problem value returned by many concurrent calls
// with different bearers is never written to (the race detector would see
// it), and every caller still gets it.
func TestRedactionLeavesSharedProblemsAlone(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	shared := envelope.NewProblem(envelope.CodeToolFailed, "always the same failure").
		WithExtension("hint", "see the docs")
	register(t, f.w, envelope.ToolSpec{Name: "shared"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return nil, shared
	})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.c.Call(context.Background(), "shared", nil, caller.WithBearer(fmt.Sprintf("token-%02d-always-the-same", i)))
			var p *envelope.Problem
			if !errors.As(err, &p) || p.Detail != "always the same failure" {
				t.Errorf("call %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if shared.Detail != "always the same failure" || shared.Extensions["hint"] != "see the docs" {
		t.Fatalf("the shared Problem was changed: %+v", shared)
	}
}

// A tenant follows the live catalogue across the account boundary: the
// tools account's presence beacons and per-worker catalogue subjects are
// exported to it, so Watch sees a pooled worker's tools arrive, and go
// when the worker's connection dies without a goodbye.
func TestSecureTenantWatchesTheFleet(t *testing.T) {
	m := startSecure(t)
	alice := m.caller(t, "alice")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := watchChanges(ctx, alice) // closed, when the watch ends, for the want below to report
	wnc, _ := m.dial(t, "tools")
	w := meshtest.NewWorker(t, wnc, worker.Config{Pool: "demo", Liveness: worker.Liveness{Heartbeat: 100 * time.Millisecond}})
	register(t, w, envelope.ToolSpec{Name: "demo.echo"}, echo)
	want := func(kind catalog.ChangeKind) {
		t.Helper()
		giveUp := time.After(20 * time.Second) // a hang guard, not a timing assertion
		for {
			select {
			case ch, ok := <-changes:
				if !ok {
					t.Fatalf("the watch ended before demo.echo was %s", kind)
				}
				if ch.Tool.Spec.Name == "demo.echo" && ch.Kind == kind {
					return
				}
			case <-giveUp:
				t.Fatalf("alice's watch never saw demo.echo %s", kind)
			}
		}
	}
	want(catalog.ToolAdded)
	wnc.Close() // no goodbye: only the beacons' silence tells
	want(catalog.ToolRemoved)
}

// Attack: bob reads alice's failed call through $SRV.STATS, which every
// tenant may read. last_error names the code and title, never the detail
// that quotes alice's args.
func TestSecureStatsDoNotQuoteAnotherTenantsCall(t *testing.T) {
	m := startSecure(t)
	w := m.demoWorker(t, worker.Config{})
	register(t, w, envelope.ToolSpec{Name: "demo.strict"}, func(_ context.Context, r *worker.Request, _ worker.Emitter) (any, error) {
		return nil, envelope.NewProblem(envelope.CodeInvalidInput, "cannot use "+string(r.Args))
	})
	marker := randomToken(t, 24)
	anc, _ := m.dial(t, "alice")
	_, err := meshtest.NewCaller(t, anc, caller.Config{}).Call(context.Background(), "demo.strict", map[string]string{"secret": marker})
	if p := wantCode(t, err, envelope.CodeInvalidInput); !strings.Contains(p.Detail, marker) {
		t.Fatalf("alice's own Problem lost its detail: %q", p.Detail)
	}
	bnc, _ := m.dial(t, "bob")
	msg, err := bnc.Request("$SRV.STATS.toolmesh", nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(msg.Data), `"last_error":"invalid_input: Invalid input"`) || strings.Contains(string(msg.Data), marker[:8]) {
		t.Fatalf("bob's $SRV.STATS: %s", msg.Data)
	}
}
