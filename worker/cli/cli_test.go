package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/argtemplate"
	"github.com/toolmesh/toolmesh/internal/codes"
	"github.com/toolmesh/toolmesh/internal/problembase"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/worker"
)

var argvecho, memhog, sandboxHelper string

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary serves as its own sandbox helper too
	bin, err := testutil.BuildBinary("./testdata/argvecho", "argvecho")
	if err != nil {
		panic(err)
	}
	argvecho = bin
	if memhog, err = testutil.BuildBinary("./testdata/memhog", "memhog"); err != nil {
		panic(err)
	}
	// A root worker's confined programs run as nobody, who must reach it.
	if err := os.Chmod(filepath.Dir(memhog), 0o755); err != nil {
		panic(err)
	}
	helper, err := testutil.BuildBinary("../../cmd/toolmesh-sandbox", sandbox.HelperName)
	if err != nil {
		panic(err)
	}
	sandboxHelper = helper
	// A root worker's confined programs run as nobody, who must reach the helper.
	if err := os.Chmod(filepath.Dir(helper), 0o755); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(filepath.Dir(bin))
	os.RemoveAll(filepath.Dir(memhog))
	os.RemoveAll(filepath.Dir(helper))
	os.Exit(code)
}

// recorder is an Emitter that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	deltas []json.RawMessage
	onEmit func(json.RawMessage)
}

func (r *recorder) Progress(float64, string) error { return nil }
func (r *recorder) Delta(v any) error {
	b, _ := json.Marshal(v)
	r.mu.Lock()
	r.deltas = append(r.deltas, b)
	r.mu.Unlock()
	if r.onEmit != nil {
		r.onEmit(b)
	}
	return nil
}

func handler(t *testing.T, b cliBinding, lim toolLimits) *toolHandler {
	t.Helper()
	h, err := newProbedHandler(fileTool{Spec: envelope.ToolSpec{Name: "t"}, Binding: &b, Limits: lim}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func call(t *testing.T, h *toolHandler, args string, mod ...func(*worker.Request)) (any, error, *recorder) {
	t.Helper()
	req := &worker.Request{Tool: "t", Args: json.RawMessage(args), Bearer: "tok-123"}
	for _, m := range mod {
		m(req)
	}
	rec := &recorder{}
	res, err := h.Handle(context.Background(), req, rec)
	return res, err, rec
}

func resultJSON(t *testing.T, res any) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantProblem(t *testing.T, err error, code envelope.Code) *envelope.Problem {
	t.Helper()
	var p *envelope.Problem
	if !errors.As(err, &p) {
		t.Fatalf("want %s problem, got %v", code, err)
	}
	if p.Code != code {
		t.Fatalf("want %s, got %s: %s", code, p.Code, p.Detail)
	}
	return p
}

func TestArgvTemplate(t *testing.T) {
	b := &cliBinding{Cmd: "prog", Args: []string{"api", "v1"}, ArgsTemplate: "--id={tool_id} {params_json} {dry_run} {page_all} {unknown} x{dry_run}y",
		DryRunFlag: "--dry-run", PageAllFlag: "--all"}
	cases := []struct {
		dry, all bool
		want     []string
	}{
		{false, false, []string{"prog", "api", "v1", "--id=t.x", `{"a":"b c"}`, "{unknown}", "xy"}},
		{true, true, []string{"prog", "api", "v1", "--id=t.x", `{"a":"b c"}`, "--dry-run", "--all", "{unknown}", "x--dry-runy"}},
	}
	for _, c := range cases {
		got := buildArgv(b, "t.x", []byte(`{"a":"b c"}`), c.dry, c.all)
		if fmt.Sprint(got) != fmt.Sprint(c.want) || len(got) != len(c.want) {
			t.Errorf("dry=%v all=%v:\n got %q\nwant %q", c.dry, c.all, got, c.want)
		}
	}
	// A substituted value containing a placeholder is not substituted again.
	got := buildArgv(&cliBinding{Cmd: "p", ArgsTemplate: "{params_json}"}, "t", []byte(`{"x":"{tool_id}"}`), false, false)
	if got[1] != `{"x":"{tool_id}"}` {
		t.Errorf("re-substituted: %q", got)
	}
	if got := buildArgv(&cliBinding{Cmd: "cat"}, "t", []byte(`{}`), false, false); len(got) != 1 {
		t.Errorf(`{"cmd":"cat"} alone: %q`, got)
	}
}

func TestEnv(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/h", "SECRET=s", "LANG=C"}
	env := childEnv(base, []string{"PATH", "HOME", "LANG", "TZ"}, map[string]string{"TOKEN": "$ATD_BEARER", "LIT": "$HOME", "HOME": "/override"}, "b3")
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	want := map[string]string{"PATH": "/bin", "HOME": "/override", "LANG": "C", "TOKEN": "b3", "LIT": "$HOME"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("env %v want %v", got, want)
	}
}

// injectionCorpus holds values a hostile caller might send to reach a
// shell or smuggle in options.
func injectionCorpus() []string {
	return []string{
		`; rm -rf / #`, `$(touch /tmp/pwned)`, "`id`", `"quoted" 'single'`, "line1\nline2\r\n", `--help`, `-rf`,
		`a b	c`, `\\server\share`, `${PATH}`, `| cat /etc/passwd`, `&& echo hi`, `>/dev/null 2>&1`, `*`, `~`,
		"unicode: é ✓ 日本 😀 \u202e", "\x01\x1f control", strings.Repeat("long ", 12000), `{"nested":"json"}`, ``,
		`{arg.v}`, `{params_json}`, `{tool_id}`, `--x={arg.v}`,
	}
}

// echoed is what argvecho reports.
type echoed struct {
	Argv  []string
	Stdin string
}

func echoCall(t *testing.T, h *toolHandler, args []byte) echoed {
	t.Helper()
	res, err, _ := call(t, h, string(args))
	if err != nil {
		t.Fatalf("args %.80s: %v", args, err)
	}
	var got echoed
	if err := json.Unmarshal(res.(json.RawMessage), &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// Every string of the corpus arrives byte-identical: as one argv slot
// through {params_json}, {arg.v}, a flag pair and an array element, and as
// the whole of stdin through stdin: arg.v and stdin: params_json.
func TestInjectionCorpus(t *testing.T) {
	type want func(v string, args []byte) echoed
	cases := []struct {
		name    string
		binding cliBinding
		want    want
	}{
		{"params_json", cliBinding{ArgsTemplate: "{params_json}"},
			func(_ string, args []byte) echoed { return echoed{Argv: []string{string(args)}} }},
		{"arg", cliBinding{ArgsTemplate: "{arg.v}"},
			func(v string, _ []byte) echoed { return echoed{Argv: []string{v}} }},
		{"prefixed arg", cliBinding{ArgsTemplate: "--value={arg.v}"},
			func(v string, _ []byte) echoed { return echoed{Argv: []string{"--value=" + v}} }},
		{"flag pair", cliBinding{ArgsTemplate: "-- {arg.v?-e} {arg.list?-e}"},
			func(v string, _ []byte) echoed { return echoed{Argv: []string{"--", "-e", v, "-e", v, "-e", "x"}} }},
		{"stdin arg", cliBinding{Stdin: "arg.v"},
			func(v string, _ []byte) echoed { return echoed{Argv: []string{}, Stdin: v} }},
		{"stdin params_json", cliBinding{Stdin: argtemplate.StdinParamsJSON},
			func(_ string, args []byte) echoed { return echoed{Argv: []string{}, Stdin: string(args)} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.binding
			b.Cmd = argvecho
			h := handler(t, b, toolLimits{})
			for i, v := range injectionCorpus() {
				args, _ := json.Marshal(map[string]any{"v": v, "list": []string{v, "x"}})
				got, want := echoCall(t, h, args), c.want(v, args)
				if fmt.Sprintf("%q|%q", got.Argv, got.Stdin) != fmt.Sprintf("%q|%q", want.Argv, want.Stdin) {
					t.Fatalf("case %d: got argv %.200q stdin %.200q\nwant argv %.200q stdin %.200q", i, got.Argv, got.Stdin, want.Argv, want.Stdin)
				}
			}
		})
	}
}

// The per-argument placeholders: absent args drop their token, arrays
// expand, objects are JSON, flag pairs appear only when set.
func TestArgPlaceholders(t *testing.T) {
	tpl := "{arg.s} -n={arg.n} {arg.b} {arg.list} --inc={arg.list} {arg.obj} {arg.missing} x{arg.null} {arg.i?-i} {arg.f?-f} {arg.m?-m} {arg.list?-e} {arg.none?-z} {arg.empty}"
	b := &cliBinding{Cmd: "p", ArgsTemplate: tpl}
	cases := []struct {
		args string
		want []string
	}{
		{`{"s":"a b","n":3.50,"b":false,"list":["x",1,null,{"k":1}],"obj":{"k": [1, 2]},"null":null,"i":true,"f":false,"m":10,"empty":""}`,
			[]string{"p", "a b", "-n=3.50", "false", "x", "1", `{"k":1}`, "--inc=x", "--inc=1", `--inc={"k":1}`, `{"k":[1,2]}`,
				"-i", "-m", "10", "-e", "x", "-e", "1", "-e", `{"k":1}`, ""}},
		{`{}`, []string{"p"}},
		{`{"list":[]}`, []string{"p"}},
	}
	for _, c := range cases {
		if got := buildArgv(b, "t", []byte(c.args), false, false); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.want) {
			t.Errorf("args %s:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
}

func TestBearerReachesEnvOnly(t *testing.T) {
	h := handler(t, cliBinding{Cmd: argvecho, Env: map[string]string{"API_TOKEN": "$ATD_BEARER", "PLAIN": "$ATD_BEARER_NOT"}}, toolLimits{})
	res, err, _ := call(t, h, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Argv []string
		Env  map[string]string
	}
	_ = json.Unmarshal(res.(json.RawMessage), &got)
	if got.Env["API_TOKEN"] != "tok-123" || got.Env["PLAIN"] != "$ATD_BEARER_NOT" {
		t.Errorf("env %v", got.Env)
	}
	if _, leaked := got.Env["TOOLMESH_TEST_SECRET"]; leaked {
		t.Error("non-inherited variable leaked")
	}
}

// A program that prints its token cannot leak it into a Problem or the stderr it reports.
func TestBearerRedactedFromReports(t *testing.T) {
	h := handler(t, cliBinding{Cmd: "sh", Args: []string{"-c", `echo "token=$T" >&2; echo "not json $T"`}, Env: map[string]string{"T": "$ATD_BEARER"}}, toolLimits{})
	_, err, _ := call(t, h, `{}`)
	p := wantProblem(t, err, envelope.CodeToolFailed)
	b, _ := json.Marshal(p)
	if strings.Contains(string(b), "tok-123") || !strings.Contains(string(b), "[REDACTED]") {
		t.Fatalf("problem %s", b)
	}
	lines := handler(t, cliBinding{Cmd: "sh", Args: []string{"-c", `echo "token=$T" >&2`}, Env: map[string]string{"T": "$ATD_BEARER"}, OutputFormat: outputLines}, toolLimits{})
	res, err, _ := call(t, lines, `{}`)
	if err != nil || strings.Contains(resultJSON(t, res), "tok-123") {
		t.Fatalf("%v %s", err, resultJSON(t, res))
	}
}

// The binding format's MUSTs: dry run and paging are refused, and the program is never started.
func TestRefusalsNeverStartTheProgram(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	h := handler(t, cliBinding{Cmd: "sh", Args: []string{"-c", "touch " + marker}}, toolLimits{})
	_, err, _ := call(t, h, `{}`, func(r *worker.Request) { r.DryRun = true })
	wantProblem(t, err, envelope.CodeDryRunUnsupported)
	_, err, _ = call(t, h, `{}`, func(r *worker.Request) { r.Page = &envelope.Page{All: true} })
	wantProblem(t, err, envelope.CodePaginationUnsupported)
	_, err, _ = call(t, h, `{}`, func(r *worker.Request) { r.Page = &envelope.Page{Cursor: "c2"} })
	wantProblem(t, err, envelope.CodePaginationUnsupported)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the program was started")
	}
	// With the flags bound, both are passed.
	h = handler(t, cliBinding{Cmd: argvecho, ArgsTemplate: "{dry_run} {page_all}", DryRunFlag: "-n", PageAllFlag: "--all"}, toolLimits{})
	res, err, _ := call(t, h, `{}`, func(r *worker.Request) { r.DryRun = true; r.Page = &envelope.Page{All: true} })
	if err != nil || !strings.Contains(resultJSON(t, res), `"argv":["-n","--all"]`) {
		t.Fatalf("%v %s", err, resultJSON(t, res))
	}
}

func TestExitCodes(t *testing.T) {
	// The program exits with the digits of its params; exit 0 never consults the map.
	h := handler(t, cliBinding{Cmd: "sh", ArgsTemplate: "{params_json}",
		ExitCodeMap: map[int]string{3: "auth_required", 4: "unauthorized", 5: argtemplate.ExitOKEmpty},
		Args:        []string{"-c", `code=$(printf %s "$1" | tr -dc 0-9); echo "failing with $code" >&2; [ "$code" = 0 ] && echo '{"ok":true}'; exit "$code"`, "sh"}}, toolLimits{})
	res, err, _ := call(t, h, `{"c":0}`)
	if err != nil || resultJSON(t, res) != `{"ok":true}` {
		t.Fatalf("exit 0: %v %v", err, res)
	}
	res, err, _ = call(t, h, `{"c":5}`)
	if err != nil || resultJSON(t, res) != `null` {
		t.Fatalf("exit 5 mapped to ok_empty: want an empty (null) result, got %v %v", err, res)
	}
	generic, _ := codes.Lookup(envelope.CodeToolFailed)
	unauth, _ := codes.Lookup(envelope.CodeUnauthorized)
	cases := []struct {
		args             string
		code             envelope.Code
		info             codes.Info
		exit             int
		domainCodeInWire bool
	}{
		{`{"c":3}`, "auth_required", generic, 3, true},           // a domain code: generic type, code kept
		{`{"c":4}`, envelope.CodeUnauthorized, unauth, 4, false}, // a registry code: its own Problem
		{`{"c":7}`, envelope.CodeToolFailed, generic, 7, false},  // unmapped
	}
	for _, c := range cases {
		_, err, _ = call(t, h, c.args)
		p := wantProblem(t, err, c.code)
		if p.Title != c.info.Title || p.Status != c.info.Status || p.ExitCode != c.info.ExitCode ||
			p.Type != (problembase.Registry{}).TypeURI(envelope.Code(c.info.Code)) {
			t.Errorf("exit %d: problem %s %q %d exit %d, want the registry entry of %s", c.exit, p.Type, p.Title, p.Status, p.ExitCode, c.info.Code)
		}
		wire, _ := json.Marshal(p)
		if !strings.Contains(string(wire), fmt.Sprintf(`"program_exit_code":%d`, c.exit)) ||
			!strings.Contains(p.Extensions["stderr_tail"].(string), fmt.Sprintf("failing with %d", c.exit)) {
			t.Errorf("exit %d: wire problem lacks the exit code or stderr tail: %s", c.exit, wire)
		}
		if got := strings.Contains(string(wire), `"domain_code":"auth_required"`); got != c.domainCodeInWire {
			t.Errorf("exit %d: domain_code in wire = %v, want %v: %s", c.exit, got, c.domainCodeInWire, wire)
		}
	}
}

func TestCatAlone(t *testing.T) {
	// {"cmd":"cat"} alone: no args, stdin closed, empty output is not valid JSON.
	var b cliBinding
	if err := json.Unmarshal([]byte(`{"cmd":"cat"}`), &b); err != nil {
		t.Fatal(err)
	}
	h := handler(t, b, toolLimits{})
	_, err, _ := call(t, h, `{}`)
	p := wantProblem(t, err, envelope.CodeToolFailed)
	if !strings.Contains(p.Detail, "printed nothing") {
		t.Errorf("detail %q", p.Detail)
	}
	h = handler(t, cliBinding{Cmd: "printf", Args: []string{"not json"}}, toolLimits{})
	_, err, _ = call(t, h, `{}`)
	if p := wantProblem(t, err, envelope.CodeToolFailed); !strings.Contains(p.Detail, "not json") {
		t.Errorf("detail should quote stdout: %q", p.Detail)
	}
}

// Unary calls get the whole output in the result; streamed calls get it
// once, as deltas, and a result that counts them instead of repeating them.
func TestOutputFormats(t *testing.T) {
	nd := handler(t, cliBinding{Cmd: "printf", Args: []string{`{"a":1}\n\n{"b":2}\n`}, OutputFormat: outputNDJSON}, toolLimits{})
	lines := handler(t, cliBinding{Cmd: "sh", Args: []string{"-c", `printf 'one\ntwo\nthree'; echo warn >&2`}, OutputFormat: outputLines}, toolLimits{})
	streaming := func(r *worker.Request) { r.Streaming = true }
	cases := []struct {
		name       string
		h          *toolHandler
		mod        []func(*worker.Request)
		result     string
		deltas     int
		firstDelta string
	}{
		{"ndjson unary", nd, nil, `[{"a":1},{"b":2}]`, 0, ""},
		{"ndjson stream", nd, []func(*worker.Request){streaming}, `{"items_streamed":2}`, 2, `{"a":1}`},
		{"lines unary", lines, nil, `{"lines":["one","two","three"],"stderr":"warn\n"}`, 0, ""},
		{"lines stream", lines, []func(*worker.Request){streaming}, `{"lines_streamed":3,"stderr":"warn\n"}`, 3, `{"line":"one"}`},
	}
	for _, tc := range cases {
		res, err, rec := call(t, tc.h, `{}`, tc.mod...)
		if err != nil || resultJSON(t, res) != tc.result || len(rec.deltas) != tc.deltas || (tc.deltas > 0 && string(rec.deltas[0]) != tc.firstDelta) {
			t.Errorf("%s: %v %s %d deltas", tc.name, err, resultJSON(t, res), len(rec.deltas))
		}
	}
	bad := handler(t, cliBinding{Cmd: "printf", Args: []string{`{"a":1}\nnope\n`}, OutputFormat: outputNDJSON}, toolLimits{})
	_, err, _ := call(t, bad, `{}`)
	if p := wantProblem(t, err, envelope.CodeToolFailed); !strings.Contains(p.Detail, "line 2") {
		t.Errorf("detail %q", p.Detail)
	}
}

// A program printing without end is stopped at the cap and the call says so.
func TestOutputCap(t *testing.T) {
	lim := toolLimits{MaxOutputBytes: 64 << 10, KillGrace: 100 * time.Millisecond}
	lines := handler(t, cliBinding{Cmd: "sh", Args: []string{"-c", "yes aaaaaaaaaaaaaaa"}, OutputFormat: outputLines}, lim)
	res, err, _ := call(t, lines, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	m := res.(map[string]any)
	if m["complete"] != false || len(m["scope_warnings"].([]string)) != 1 || len(m["lines"].([]string)) == 0 {
		t.Fatalf("capped lines result: complete=%v warnings=%v", m["complete"], m["scope_warnings"])
	}
	// 1 GB of output in json format: the program is stopped, the call fails honestly.
	js := handler(t, cliBinding{Cmd: "head", Args: []string{"-c", "1000000000", "/dev/zero"}}, lim)
	_, err, _ = call(t, js, `{}`)
	wantProblem(t, err, envelope.CodePayloadTooLarge)
}

// runAndCancel starts h, waits until the program wrote its grandchild's
// pid into pidfile, cancels, and returns that pid and h's error.
func runAndCancel(t *testing.T, h *toolHandler, pidfile string) (int, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := h.Handle(ctx, &worker.Request{Tool: "t", Args: json.RawMessage(`{}`)}, &recorder{})
		errc <- err
	}()
	pid := testutil.WaitPID(t, pidfile)
	cancel()
	return pid, <-errc
}

func TestCancelKillsProcessGroup(t *testing.T) {
	cancelUntilDead(t, "the grandchild", func(pidfile string) string { return "sleep 1000 & echo $! > " + pidfile + "; wait" }, 5*time.Second)
}

func TestIgnoredSigtermGetsSigkill(t *testing.T) {
	cancelUntilDead(t, "the process ignoring SIGTERM", func(pidfile string) string {
		return `trap "" TERM; sleep 1000 & echo $! > ` + pidfile + `; wait; wait`
	}, 100*time.Millisecond)
}

// cancelUntilDead runs `sh -c script(pidfile)`, whose grandchild (who)
// writes its pid to pidfile, with grace as its kill grace; cancels the
// call once the pid is there, wants the handler to return the
// cancellation, and waits for the grandchild to die. Signals are
// delivered asynchronously: a survivor (sleep 1000) would never get
// there.
func cancelUntilDead(t *testing.T, who string, script func(pidfile string) string, grace time.Duration) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pid")
	h := handler(t, cliBinding{Cmd: "sh", Args: []string{"-c", script(pidfile)}}, toolLimits{KillGrace: grace})
	pid, err := runAndCancel(t, h, pidfile)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("handler returned %v", err)
	}
	waitFor(t, who+" to die", func() bool { return !testutil.ProcAlive(pid) })
}

// A grandchild left behind by a program that exits normally is swept too,
// and does not stall the call by holding stdout open.
func TestGrandchildSweptOnNormalExit(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	h := handler(t, cliBinding{Cmd: "sh", Args: []string{"-c", "sleep 1000 & echo $! > " + pidfile + `; echo '{"ok":1}'`}}, toolLimits{})
	res, err, _ := call(t, h, `{}`)
	if err != nil || resultJSON(t, res) != `{"ok":1}` {
		t.Fatalf("%v %v", err, res)
	}
	b, _ := os.ReadFile(pidfile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatal("no grandchild pid")
	}
	waitFor(t, "the grandchild to die", func() bool { return !testutil.ProcAlive(pid) })
}

// Runs beyond max_concurrent wait for a slot; one whose budget ends while
// waiting never starts its program.
func TestMaxConcurrentRuns(t *testing.T) {
	dir := t.TempDir()
	gate, started := filepath.Join(dir, "gate"), filepath.Join(dir, "started")
	h := handler(t, cliBinding{Cmd: "sh", Args: []string{"-c", `echo x >> ` + started + `; while [ ! -e ` + gate + ` ]; do sleep 0.01; done; echo '{}'`}},
		toolLimits{MaxConcurrent: 1})
	first := make(chan error, 1)
	go func() { _, err, _ := call(t, h, `{}`); first <- err }()
	waitFor(t, "the first run to start", func() bool { _, err := os.Stat(started); return err == nil })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := h.Handle(ctx, &worker.Request{Tool: "t", Args: json.RawMessage(`{}`)}, &recorder{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second run: %v", err)
	}
	_ = os.WriteFile(gate, nil, 0o644)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(started); strings.Count(string(b), "x") != 1 {
		t.Fatalf("the program started %d times, want 1", strings.Count(string(b), "x"))
	}
}

func TestToolTimeout(t *testing.T) {
	h := handler(t, cliBinding{Cmd: "sleep", Args: []string{"1000"}}, toolLimits{Timeout: 50 * time.Millisecond, KillGrace: 50 * time.Millisecond})
	_, err, _ := call(t, h, `{}`)
	wantProblem(t, err, envelope.CodeTimeout)
}

// A program that cannot run fails at load, naming the tool and the field;
// one that disappears after load fails the call, not the worker.
func TestMissingProgram(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "notexec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"/nonexistent/program", "toolmesh-no-such-program", notExec} {
		b := cliBinding{Cmd: cmd}
		_, err := newProbedHandler(fileTool{Spec: envelope.ToolSpec{Name: "files.x"}, Binding: &b}, nil, nil)
		p := wantProblem(t, err, envelope.CodeInvalidConfig)
		if !strings.Contains(p.Detail, "tool files.x: field binding.cli.cmd") || !strings.Contains(p.Detail, cmd) {
			t.Errorf("cmd %s: detail %q does not name the tool, the field and the program", cmd, p.Detail)
		}
	}
	gone := filepath.Join(dir, "gone")
	if err := os.WriteFile(gone, []byte("#!/bin/sh\necho '{}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	withStdin := handler(t, cliBinding{Cmd: gone, Stdin: argtemplate.StdinParamsJSON}, toolLimits{})
	h := handler(t, cliBinding{Cmd: gone}, toolLimits{})
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*toolHandler{h, withStdin} {
		_, err, _ := call(t, h, `{}`)
		if p := wantProblem(t, err, envelope.CodeToolFailed); !strings.Contains(p.Detail, "cannot start") {
			t.Errorf("detail %q", p.Detail)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) { testutil.WaitFor(t, what, cond) }

// A program that never reads its stdin neither blocks the call nor fails
// it, however much input it was given (more than a pipe buffer here).
func TestStdinNotRead(t *testing.T) {
	h := handler(t, cliBinding{Cmd: "true", Stdin: "arg.v", OutputFormat: outputLines}, toolLimits{})
	args, _ := json.Marshal(map[string]string{"v": strings.Repeat("x", 1<<20)})
	res, err, _ := call(t, h, string(args))
	if err != nil || resultJSON(t, res) != `{"lines":[],"stderr":""}` {
		t.Fatalf("%v %v", err, res)
	}
}
