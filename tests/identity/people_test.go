package identity

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/internal/wire"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/tasks"
	"github.com/toolmesh/toolmesh/worker"
)

// calloutMesh is deploy/identity/nats-server.conf as shipped, with
// `toolmesh authcallout` running deploy/identity/policy.yaml against a
// real OpenID provider, a worker and the task service.
type calloutMesh struct {
	srv       *server.Server
	url       string
	passwords map[string]string
	idp       *idp
	worker    *worker.Worker
}

func password(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "p" + hex.EncodeToString(b) // a letter first: the server parses $VAR values, and a leading digit may not load
}

func startCalloutMesh(t *testing.T, p *idp) *calloutMesh {
	t.Helper()
	m := &calloutMesh{passwords: map[string]string{}, idp: p}
	for _, u := range []string{"callout", "tools", "tasks"} {
		m.passwords[u] = password(t)
		t.Setenv("TOOLMESH_"+strings.ToUpper(u)+"_PASSWORD", m.passwords[u])
	}
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	t.Setenv("TOOLMESH_CALLOUT_ISSUER", pub)
	t.Setenv("TOOLMESH_TEST_CALLOUT_SEED", string(seed))
	t.Setenv("TOOLMESH_TASKS_STORE", t.TempDir())
	m.srv = testutil.StartServerFromConfig(t, "../../deploy/identity/nats-server.conf")
	m.url = m.srv.ClientURL()
	runUntilSaid(t, "answering", toolmeshBin, "authcallout", "--server", m.url, "--user", "callout", "--password", m.passwords["callout"],
		"--policy", "../../deploy/identity/policy.yaml", "--auth-issuer", p.issuer, "--auth-audience", audience,
		"--issuer-seed-env", "TOOLMESH_TEST_CALLOUT_SEED")
	m.worker = meshtest.NewWorker(t, m.dial(t, nats.UserInfo("tools", m.passwords["tools"])), worker.Config{})
	svc, err := tasks.New(context.Background(), m.dial(t, nats.UserInfo("tasks", m.passwords["tasks"])), tasks.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	return m
}

func (m *calloutMesh) dial(t *testing.T, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(m.url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// person is a caller connected as the person whose token it presents.
func (m *calloutMesh) person(t *testing.T, who string) (*caller.Caller, *nats.Conn) {
	t.Helper()
	nc := m.dial(t, nats.Token(m.idp.token(t, who)))
	return meshtest.NewCaller(t, nc, caller.Config{}), nc
}

// runUntilSaid starts a program and waits until its stderr says want; it
// returns what the line says after want.
func runUntilSaid(t *testing.T, want, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		t.Log(sc.Text())
		if _, after, ok := strings.Cut(sc.Text(), want); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return after
		}
	}
	t.Fatalf("%s ended before saying %q:\n%s", bin, want, strings.Join(seen, "\n"))
	return ""
}

// whoami answers with the identity the server stamped on the call.
func whoami(_ context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	return map[string]string{"identity": req.Identity}, nil
}

func peopleIDP(t *testing.T) *idp {
	return startIDP(t, "",
		principal{id: "alice", audience: []string{audience}},
		principal{id: "bob", audience: []string{audience}},
		principal{id: "eve", audience: []string{audience}}) // valid, but no policy rule
}

// Two people through one gateway: each lists and calls only the tools
// the policy grants them, the worker sees each as themselves, and a
// person the policy does not name is refused.
func TestGatewayPeopleActAsThemselves(t *testing.T) {
	p := peopleIDP(t)
	m := startCalloutMesh(t, p)
	for _, name := range []string{"alice.whoami", "bob.whoami"} {
		if err := m.worker.Register(envelope.ToolSpec{Name: name, Description: "Who is calling"}, worker.HandlerFunc(whoami)); err != nil {
			t.Fatal(err)
		}
	}
	addr := startGateway(t, "--server", m.url, "--auth-issuer", p.issuer, "--auth-audience", audience, "--auth-as-person")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct{ who, own, other, identity string }{
		{"alice", "alice.whoami", "bob.whoami", "ALICE/alice"},
		{"bob", "bob.whoami", "alice.whoami", "BOB/bob"},
	} {
		cs, err := connectMCP(ctx, addr, p.token(t, c.who))
		if err != nil {
			t.Fatalf("%s connects: %v", c.who, err)
		}
		defer cs.Close()
		var names []string
		testutil.WaitFor(t, c.who+"'s tools/list to hold "+c.own, func() bool {
			lr, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			names = names[:0]
			for _, tl := range lr.Tools {
				names = append(names, tl.Name)
			}
			return slices.Contains(names, c.own)
		})
		if !slices.Equal(names, []string{c.own}) {
			t.Fatalf("%s lists %v, want only %s", c.who, names, c.own)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.own, Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("%s calls %s: %+v, %v", c.who, c.own, res, err)
		}
		if got := identityOf(t, res); got != c.identity {
			t.Fatalf("the worker saw %q calling for %s, want %q", got, c.who, c.identity)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: c.other, Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Fatalf("%s called %s, which the policy does not grant: %+v", c.who, c.other, res)
		}
	}
	resp := post(t, addr, "Bearer "+p.token(t, "eve"))
	if resp.StatusCode != 403 {
		t.Fatalf("eve, whom no policy rule admits: %s, want 403", resp.Status)
	}
}

// identityOf reads whoami's answer from an MCP tool result.
func identityOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Identity string `json:"identity"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("whoami's result %s: %v", b, err)
	}
	return v.Identity
}

// Through auth callout, bob can neither cancel nor answer alice's call
// (the worker hears control messages only from the call's own identity)
// nor read, cancel or answer her task.
func TestCalloutPeopleCannotTouchEachOthersWork(t *testing.T) {
	p := peopleIDP(t)
	m := startCalloutMesh(t, p)
	if err := m.worker.Register(envelope.ToolSpec{Name: "alice.ask", Streaming: true}, worker.HandlerFunc(askName)); err != nil {
		t.Fatal(err)
	}
	bobStarted, bobEnded := make(chan struct{}, 1), make(chan error, 1)
	if err := m.worker.Register(envelope.ToolSpec{Name: "bob.park", Streaming: true}, worker.HandlerFunc(
		func(ctx context.Context, _ *worker.Request, _ worker.Emitter) (any, error) {
			bobStarted <- struct{}{}
			<-ctx.Done()
			bobEnded <- context.Cause(ctx)
			return nil, ctx.Err()
		})); err != nil {
		t.Fatal(err)
	}
	alice, _ := m.person(t, "alice")
	bob, bnc := m.person(t, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	as, err := alice.Stream(ctx, "alice.ask", nil, caller.Answering())
	if err != nil {
		t.Fatal(err)
	}
	q := nextQuestion(t, as)
	bs, err := bob.Stream(ctx, "bob.park", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-bobStarted
	forged, _ := json.Marshal(map[string]string{"name": "mallory"})
	for _, c := range []wire.Control{{Op: wire.OpAnswer, CallID: as.CallID(), QuestionID: q.ID, Action: envelope.ActionAccept, Content: forged},
		{Op: wire.OpCancel, CallID: as.CallID()}} {
		if err := bnc.Publish(wire.Subjects{}.Control(m.worker.ID()), c.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	// Bob's own call ends after his forged messages: the worker has read them.
	_ = bs.Close()
	<-bobEnded
	ans, err := caller.Accept(map[string]string{"name": "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := as.Answer(q.ID, ans); err != nil {
		t.Fatal(err)
	}
	resp, err := as.Response()
	if err != nil || !resp.Success || !strings.Contains(string(resp.Data), `"alice"`) {
		t.Fatalf("alice's call after bob's forged answer and cancel: %+v, %v", resp, err)
	}

	id, err := tasks.NewClient(alice).Submit(ctx, "alice.ask", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"read":   errOf(tasks.NewClient(bob).Get(ctx, id, false)),
		"cancel": errOf(tasks.NewClient(bob).Cancel(ctx, id)),
		"answer": errOf(tasks.NewClient(bob).Answer(ctx, id, "", caller.Decline())),
	} {
		var pr *envelope.Problem
		if !errors.As(err, &pr) || pr.Code != envelope.CodeTaskNotFound {
			t.Errorf("bob's %s of alice's task: %v, want task_not_found", what, err)
		}
	}
	if rec, err := tasks.NewClient(alice).Get(ctx, id, false); err != nil || rec.TaskID != id {
		t.Fatalf("alice reads her own task: %+v, %v", rec, err)
	}
	// The task service runs a task's tool itself: alice may not submit a
	// task of bob's tool, which her grant does not let her call.
	var pr *envelope.Problem
	if _, err := tasks.NewClient(alice).Submit(ctx, "bob.park", map[string]any{}); !errors.As(err, &pr) || pr.Code != envelope.CodeForbidden {
		t.Fatalf("alice's task of bob.park: %v, want forbidden", err)
	}
	if list, err := tasks.NewClient(alice).List(ctx, "", 0); err != nil || len(list) != 1 || list[0].TaskID != id {
		t.Fatalf("alice's tasks %+v, %v; want her one task", list, err)
	}
}

func errOf[T any](_ T, err error) error { return err }

// askName asks its caller for a name and returns it.
func askName(ctx context.Context, req *worker.Request, _ worker.Emitter) (any, error) {
	v, err := worker.AskAs[struct {
		Name string `json:"name"`
	}](ctx, req, "Your name?")
	if err != nil {
		return nil, err
	}
	return map[string]string{"name": v.Name}, nil
}

// nextQuestion reads s until its call asks a question.
func nextQuestion(t *testing.T, s *caller.Stream) caller.Question {
	t.Helper()
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("waiting for a question: %v", err)
		}
		if q, ok := caller.QuestionOf(ev); ok {
			return q
		}
	}
}

// `toolmesh call --token` with an OpenID token reaches, through auth
// callout, what the policy grants the person and nothing else; a token
// no rule admits does not connect.
func TestCalloutCommandReachesOnlyWhatTheMappingGrants(t *testing.T) {
	p := peopleIDP(t)
	m := startCalloutMesh(t, p)
	for _, name := range []string{"alice.whoami", "bob.whoami"} {
		if err := m.worker.Register(envelope.ToolSpec{Name: name}, worker.HandlerFunc(whoami)); err != nil {
			t.Fatal(err)
		}
	}
	call := func(who, tool string) (string, error) {
		out, err := exec.Command(toolmeshBin, "call", tool, "--args", "{}", "--server", m.url, "--token", p.token(t, who)).CombinedOutput()
		return string(out), err
	}
	out, err := call("bob", "bob.whoami")
	if err != nil || !strings.Contains(out, "BOB/bob") {
		t.Fatalf("bob calls bob.whoami: %v\n%s", err, out)
	}
	out, err = call("bob", "alice.whoami")
	if err == nil || !strings.Contains(out, "forbidden") {
		t.Fatalf("bob calls alice.whoami: %v\n%s", err, out)
	}
	out, err = call("eve", "bob.whoami")
	if err == nil || !strings.Contains(strings.ToLower(out), "authoriz") {
		t.Fatalf("eve (no policy rule) calls bob.whoami: %v\n%s", err, out)
	}
}
