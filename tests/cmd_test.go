package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
)

// toolmeshBin builds the command once per test run.
var toolmeshBin = builtOnce("../cmd/toolmesh", "toolmesh")

// builtOnce returns a helper that builds the Go program in dir (named
// name) the first time a test asks, and gives every test its path; the
// test that asks fails when the build did.
func builtOnce(dir, name string) func(t *testing.T) string {
	return onceBuilt(func() (string, error) { return testutil.BuildBinary(dir, name) })
}

// onceBuilt returns a helper that runs build the first time a test asks
// and gives every test the path it returned; the test that asks fails
// when the build did.
func onceBuilt(build func() (string, error)) func(t *testing.T) string {
	build = sync.OnceValues(build)
	return func(t *testing.T) string {
		t.Helper()
		path, err := build()
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// proc is a long-running toolmesh process (dev or worker).
type proc struct {
	cmd    *exec.Cmd
	lines  chan string // stdout and stderr lines
	stderr bytes.Buffer
}

// startProc runs the built toolmesh binary with args as a proc.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	return startExec(t, toolmeshBin(t), args...)
}

// startCLIWorker runs `toolmesh worker` (the built binary) on url and
// returns it once it is ready, with its worker id.
func startCLIWorker(t *testing.T, url, toolsFile string, extra ...string) (*proc, string) {
	t.Helper()
	p := startProc(t, append([]string{"worker", "--server", url, "--config", toolsFile}, extra...)...)
	m := p.waitLine(t, regexp.MustCompile(`worker ready.*worker_id=(\S+)`))
	return p, m[1]
}

// startExec runs any program as a proc whose output lines can be awaited.
func startExec(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), lines: make(chan string, 256)}
	stdout, _ := p.cmd.StdoutPipe()
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []io.Reader{stdout, stderr} {
		go func() {
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				select {
				case p.lines <- sc.Text():
				default:
				}
			}
		}()
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	return p
}

// waitLine returns the first output line matching re.
func (p *proc) waitLine(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	giveUp := time.After(60 * time.Second)
	for {
		select {
		case l := <-p.lines:
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-giveUp:
			t.Fatalf("no output line matched %s", re)
		}
	}
}

// stop sends sig and returns the exit code.
func (p *proc) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	_ = p.cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("process did not exit after the signal")
	}
	return p.cmd.ProcessState.ExitCode()
}

// startDev runs `toolmesh dev` on a free port and returns its URL.
func startDev(t *testing.T, extra ...string) (*proc, string) {
	t.Helper()
	p := startProc(t, append([]string{"dev", "--listen", "127.0.0.1:0"}, extra...)...)
	m := p.waitLine(t, regexp.MustCompile(`listening on (nats://\S+)`))
	return p, m[1]
}

type result struct {
	stdout, stderr string
	code           int
}

func runCmd(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolmeshBin(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	_ = cmd.Run()
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

var ulidRe = `[0-9A-HJKMNP-TV-Z]{26}`

func TestCommandDevCallAndStream(t *testing.T) {
	dev, url := startDev(t)
	r := runCmd(t, "", "call", "echo", "--server", url, "--args", `{"message":"hi"}`)
	if r.code != 0 || !regexp.MustCompile(`^\{"id":"`+ulidRe+`","success":true,"message":"hi"\}\n$`).MatchString(r.stdout) {
		t.Fatalf("call echo: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	// Args from stdin, and from a file.
	r = runCmd(t, `{"message":"from stdin"}`, "call", "echo", "--server", url)
	if r.code != 0 || !strings.Contains(r.stdout, `"message":"from stdin"`) {
		t.Fatalf("stdin args: %+v", r)
	}
	argsFile := filepath.Join(t.TempDir(), "args.json")
	_ = os.WriteFile(argsFile, []byte(`{"message":"from file"}`), 0o644)
	r = runCmd(t, "", "call", "echo", "--server", url, "--args", "@"+argsFile)
	if r.code != 0 || !strings.Contains(r.stdout, `"message":"from file"`) {
		t.Fatalf("file args: %+v", r)
	}

	r = runCmd(t, "", "call", "count", "--stream", "--server", url, "--args", `{"n":4,"interval_ms":1}`)
	if r.code != 0 {
		t.Fatalf("stream: %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var types []string
	next := 1
	for _, ev := range ndjson[envelope.ToolEvent](t, r.stdout) {
		types = append(types, string(ev.Type))
		if ev.Type == envelope.EventDelta {
			if string(ev.Data) != fmt.Sprintf(`{"i":%d}`, next) {
				t.Fatalf("delta %s where %d was due", ev.Data, next)
			}
			next++
		}
	}
	if types[0] != "start" || types[len(types)-1] != "result" || next != 5 || lines[len(lines)-1] != `{"type":"result","data":{"count":4}}` {
		t.Fatalf("events %v", types)
	}
	if code := dev.stop(t, os.Interrupt); code != 0 {
		t.Fatalf("dev exited %d after Ctrl-C", code)
	}
}

// Each failure has its own code, problem+json on a non-terminal stderr,
// and the one-line pretty form when asked.
func TestCommandErrors(t *testing.T) {
	_, url := startDev(t)
	cases := []struct {
		name string
		args []string
		code envelope.Code
	}{
		{"missing tool", []string{"call", "nope", "--server", url}, envelope.CodeToolNotFound},
		{"invalid args", []string{"call", "echo", "--server", url, "--args", `{"message":5}`}, envelope.CodeInvalidInput},
		{"malformed args", []string{"call", "echo", "--server", url, "--args", `{nope`}, envelope.CodeInvalidInput},
		{"timeout", []string{"call", "sleep", "--server", url, "--args", `{"seconds":60}`, "--timeout", "100ms"}, envelope.CodeTimeout},
		{"unreachable server", []string{"call", "echo", "--server", "nats://127.0.0.1:1"}, envelope.CodeConnectionLost},
		{"bad flag", []string{"call", "echo", "--bogus"}, envelope.CodeInvalidInput},
		{"unknown command", []string{"frobnicate"}, envelope.CodeInvalidInput},
		{"unreadable config", []string{"dev", "--listen", "127.0.0.1:0", "--config", "/nonexistent/tools.yaml"}, envelope.CodeInvalidConfig},
		{"worker without config", []string{"worker", "--server", url}, envelope.CodeInvalidConfig},
		{"describe missing", []string{"tools", "describe", "nope", "--server", url}, envelope.CodeToolNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, _ := codes.Lookup(c.code)
			r := runCmd(t, "", c.args...)
			if r.code != info.ExitCode {
				t.Fatalf("exit %d, want %d (%s); stderr %s", r.code, info.ExitCode, c.code, r.stderr)
			}
			var p envelope.Problem
			if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &p); err != nil {
				t.Fatalf("stderr is not one problem+json document: %q", r.stderr)
			}
			if p.Code != c.code || p.ExitCode != info.ExitCode || !strings.HasPrefix(p.Instance, "urn:uuid:") {
				t.Fatalf("problem %+v", p)
			}
			pretty := runCmd(t, "", append(c.args, "--format", "pretty")...)
			first, _, _ := strings.Cut(pretty.stderr, "\n")
			if pretty.code != info.ExitCode || !strings.HasPrefix(first, "Error: ") || json.Valid([]byte(strings.TrimSpace(pretty.stderr))) {
				t.Fatalf("pretty: exit %d stderr %q", pretty.code, pretty.stderr)
			}
		})
	}
}

func TestCommandToolsListAndDescribe(t *testing.T) {
	_, url := startDev(t)
	r := runCmd(t, "", "tools", "list", "--json", "--server", url)
	var cat struct {
		Tools []struct {
			Spec      envelope.ToolSpec
			Instances int
		}
		Complete bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &cat); err != nil || r.code != 0 {
		t.Fatalf("tools list --json: %v %+v", err, r)
	}
	var names []string
	for _, tl := range cat.Tools {
		names = append(names, tl.Spec.Name)
		if tl.Instances != 1 {
			t.Errorf("%s has %d instances", tl.Spec.Name, tl.Instances)
		}
	}
	if strings.Join(names, ",") != "count,echo,remove,sleep" || !cat.Complete {
		t.Fatalf("catalogue %s", r.stdout)
	}
	r = runCmd(t, "", "tools", "list", "--server", url)
	if !strings.HasPrefix(r.stdout, "NAME") || !strings.Contains(r.stdout, "count") {
		t.Fatalf("table %q", r.stdout)
	}
	r = runCmd(t, "", "tools", "describe", "echo", "--json", "--server", url)
	var spec envelope.ToolSpec
	if err := json.Unmarshal([]byte(r.stdout), &spec); err != nil || spec.Name != "echo" || len(spec.InputSchema) == 0 {
		t.Fatalf("describe: %v %q", err, r.stdout)
	}
}

// `toolmesh worker --config` joins a running mesh; SIGTERM drains it.
func TestCommandWorkerJoinsMesh(t *testing.T) {
	_, url := startDev(t)
	cfg := writeTools(t, `
tools:
  - name: shout
    description: Upper-cases its args
    binding:
      cli:
        cmd: sh
        args: ["-c", "printf '%s' \"$1\" | tr a-z A-Z", "sh"]
        args_template: "{params_json}"
`)
	w, _ := startCLIWorker(t, url, cfg)
	r := runCmd(t, "", "call", "shout", "--server", url, "--args", `{"w":"hey"}`)
	if r.code != 0 || !strings.Contains(r.stdout, `"W":"HEY"`) {
		t.Fatalf("call shout: %+v", r)
	}
	if code := w.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("worker exited %d after SIGTERM", code)
	}
	r = runCmd(t, "", "call", "shout", "--server", url)
	if r.code != 3 {
		t.Fatalf("after the worker left, want tool_not_found (3), got %d", r.code)
	}
}

// On a terminal, call shows deltas and progress on stderr as they arrive
// while stdout still gets only the Response.
func TestCommandCallOnTerminal(t *testing.T) {
	_, url := startDev(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	defer ptmx.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolmeshBin(t), "call", "count", "--server", url, "--args", `{"n":3,"interval_ms":20}`)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close() // the child holds its own copy; EOF on ptmx once it exits
	var screen bytes.Buffer
	_, _ = io.Copy(&screen, ptmx) // ends with EIO when the child closes the terminal
	if err := cmd.Wait(); err != nil {
		t.Fatalf("call on a terminal: %v; terminal showed %q", err, screen.String())
	}
	if !regexp.MustCompile(`^\{"id":"` + ulidRe + `","success":true,"count":3\}\n$`).MatchString(stdout.String()) {
		t.Errorf("stdout = %q, want only the Response", stdout.String())
	}
	shown := screen.String()
	last := -1
	for i := 1; i <= 3; i++ {
		at := strings.Index(shown, fmt.Sprintf(`{"i":%d}`, i))
		if at < 0 || at < last {
			t.Fatalf("delta %d missing or out of order on the terminal: %q", i, shown)
		}
		last = at
	}
	if !strings.Contains(shown, "count") || !strings.Contains(shown, "\r") {
		t.Errorf("no progress display on the terminal: %q", shown)
	}
	if strings.Contains(shown, `"success"`) {
		t.Errorf("the Response leaked onto the terminal: %q", shown)
	}
}

// stderrProblem parses the problem+json line at the end of stderr.
func stderrProblem(t *testing.T, stderr string) envelope.Problem {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var p envelope.Problem
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &p); err != nil {
		t.Fatalf("stderr does not end in a Problem: %v\n%s", err, stderr)
	}
	return p
}

// --version reports what `go version -m` reads from the same binary: the
// module version, the commit (when the build recorded one) and Go's version.
func TestCommandVersion(t *testing.T) {
	bin := toolmeshBin(t)
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	goVersion, modVersion, commit := "", "", "unknown"
	for i, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case i == 0 && len(f) == 2:
			goVersion = f[1]
		case len(f) >= 3 && f[0] == "mod":
			modVersion = f[2]
		case len(f) >= 2 && strings.HasPrefix(f[1], "vcs.revision="):
			commit = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	r := runCmd(t, "", "--version")
	want := fmt.Sprintf("toolmesh version %s commit %s", modVersion, commit)
	if r.code != 0 || !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, " "+goVersion+" ") || goVersion == "" {
		t.Fatalf("--version printed %q (exit %d), want it to start %q and name %s", r.stdout, r.code, want, goVersion)
	}
}

// Completion offers the mesh's tool names for call, and the fixed values
// of --format and --log-level; the shell scripts are generated.
func TestCommandCompletion(t *testing.T) {
	_, url := startDev(t)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "call", "--server", url, ""}, []string{"count\t", "echo\t", "remove\t", "sleep\t"}},
		{[]string{"__complete", "call", "--server", url, "ec"}, []string{"echo\t"}},
		{[]string{"__complete", "tools", "describe", "--server", url, "s"}, []string{"sleep\t"}},
		{[]string{"__complete", "call", "--format", ""}, []string{"json", "pretty"}},
		{[]string{"__complete", "tools", "list", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
	}
	for _, c := range cases {
		r := runCmd(t, "", c.args...)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if !strings.HasPrefix(l, ":") {
				got = append(got, l)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%q: got %q, want %d entries %q", c.args, got, len(c.want), c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("%q: entry %d is %q, want it to start %q", c.args, i, got[i], w)
			}
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if r := runCmd(t, "", "completion", shell); r.code != 0 || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("completion %s: exit %d, script %.100q", shell, r.code, r.stdout)
		}
	}
}

// A usage failure's suggested fix fits it: none points at violations
// that are not there.
func TestCommandFixesFitTheFailure(t *testing.T) {
	_, url := startDev(t)
	cases := []struct {
		name string
		args []string
		fix  string
	}{
		{"bad format value", []string{"call", "echo", "--format", "xml"}, "--format json|pretty"},
		{"bad log level", []string{"call", "echo", "--log-level", "loud"}, "--log-level debug|info|warn|error"},
		{"bad flag value", []string{"call", "echo", "--timeout", "soon"}, "toolmesh call --help"},
		{"bad tool name", []string{"call", "bad/name"}, "Tool names are"},
		{"bad tool name to describe", []string{"tools", "describe", "bad/name", "--server", url}, "Tool names are"},
		{"missing @file", []string{"call", "echo", "--args", "@/nonexistent/args.json"}, `"/nonexistent/args.json"`},
		{"stray argument", []string{"dev", "extra"}, "toolmesh dev --help"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.name != "bad format value" {
				args = append(args, "--format", "json")
			}
			r := runCmd(t, "", args...)
			if c.name == "bad format value" {
				// An invalid --format cannot choose the format: JSON it is.
				if !strings.Contains(r.stderr, c.fix) || strings.Contains(r.stderr, "violations") || r.code != 2 {
					t.Fatalf("exit %d stderr %s", r.code, r.stderr)
				}
				return
			}
			p := stderrProblem(t, r.stderr)
			if p.Code != envelope.CodeInvalidInput || p.SuggestedFix == nil || strings.Contains(p.SuggestedFix.Description, "violations") ||
				!strings.Contains(p.SuggestedFix.Description, c.fix) {
				t.Fatalf("code %s fix %+v, want one containing %q and no violations", p.Code, p.SuggestedFix, c.fix)
			}
		})
	}
}

// `toolmesh dev` on a busy port or a malformed --listen fails at once with
// the reason (no readiness wait: the test only asserts the reason arrives).
func TestCommandDevListenFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cases := []struct{ listen, reason string }{
		{ln.Addr().String(), "address already in use"},
		{"localhost", "missing port in address"},
		{"127.0.0.1:99999", "invalid port"},
	}
	for _, c := range cases {
		r := runCmd(t, "", "dev", "--listen", c.listen, "--format", "json")
		p := stderrProblem(t, r.stderr)
		if r.code != 78 || p.Code != envelope.CodeInvalidConfig || !strings.Contains(p.Detail, c.reason) || !strings.Contains(p.Detail, c.listen) {
			t.Errorf("--listen %s: exit %d, %s: %s", c.listen, r.code, p.Code, p.Detail)
		}
	}
}

// startWithStdin starts the binary with the given stdin and collects stderr lines.
func startWithStdin(t *testing.T, stdin *os.File, args ...string) (*exec.Cmd, chan string, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(toolmeshBin(t), args...)
	cmd.Stdin = stdin
	out := &strings.Builder{}
	cmd.Stdout = out
	errPipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, lines, out
}

func waitStderrLine(t *testing.T, lines chan string, re *regexp.Regexp) {
	t.Helper()
	giveUp := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stderr ended before a line matched %s", re)
			}
			if re.MatchString(l) {
				return
			}
		case <-giveUp:
			t.Fatalf("no stderr line matched %s", re)
		}
	}
}

func waitCmdExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the command did not exit")
	}
	return cmd.ProcessState.ExitCode()
}

// `toolmesh call` reads stdin only when it is not a terminal and no --args
// was given; a signal interrupts a read from a pipe nobody closes.
func TestCommandCallStdinRules(t *testing.T) {
	_, url := startDev(t)
	open, w, err := os.Pipe() // a pipe that is never written or closed
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	defer w.Close()

	// --args given: the open pipe is not read.
	cmd, _, out := startWithStdin(t, open, "call", "echo", "--server", url, "--args", `{"message":"from flag"}`)
	if code := waitCmdExit(t, cmd); code != 0 || !strings.Contains(out.String(), `"message":"from flag"`) {
		t.Fatalf("with --args: exit %d stdout %s", code, out)
	}

	// stdin is a terminal: not read, args are {}.
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	cmd, _, out = startWithStdin(t, tty, "call", "count", "--server", url)
	if code := waitCmdExit(t, cmd); code != 0 || !strings.Contains(out.String(), `"success":true,"count":`) {
		t.Fatalf("stdin a terminal: exit %d stdout %s", code, out)
	}

	// No --args and a pipe nobody closes: the read blocks, Ctrl-C ends it.
	cmd, lines, _ := startWithStdin(t, open, "call", "echo", "--server", url, "--log-level", "debug", "--format", "json")
	waitStderrLine(t, lines, regexp.MustCompile(`reading args from stdin`))
	_ = cmd.Process.Signal(os.Interrupt)
	var rest []string
	code := waitCmdExit(t, cmd)
	for l := range lines {
		rest = append(rest, l)
	}
	if code != 130 || len(rest) == 0 || !strings.Contains(rest[len(rest)-1], `"code":"cancelled"`) {
		t.Fatalf("interrupted read: exit %d, stderr %q", code, rest)
	}
}

// A second Ctrl-C while `toolmesh dev` drains a call that would run for an
// hour stops it at once: the call is cancelled and dev exits 130.
func TestCommandSecondInterrupt(t *testing.T) {
	dev, url := startDev(t, "--drain-timeout", "1h")
	call := startProc(t, "call", "sleep", "--stream", "--server", url, "--args", `{"seconds":3600}`)
	call.waitLine(t, regexp.MustCompile(`"type":"start"`))
	_ = dev.cmd.Process.Signal(os.Interrupt)
	dev.waitLine(t, regexp.MustCompile(`draining`))
	if code := dev.stop(t, os.Interrupt); code != 130 {
		t.Fatalf("dev exited %d after the second interrupt, want 130 (cancelled)", code)
	}
	// The call ends too, never hangs: cancelled by the worker, or — when
	// the embedded server went first — its worker or connection lost.
	switch code := call.stop(t, syscall.Signal(0)); code {
	case 130, 14, 69: // cancelled, worker_lost, connection_lost
	default:
		t.Fatalf("the drained call exited %d, want 130, 14 or 69: %s", code, call.stderr.String())
	}
}

// runCmdEnv runs the binary with extra environment variables.
func runCmdEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolmeshBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// Credentials come from NATS_USER/NATS_PASSWORD, NATS_TOKEN and NATS_CREDS,
// so no secret needs to sit in argv or a URL; the wrong secret is refused.
func TestCommandEnvCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	configureOperator, creds := testutil.NewOperator(t, dir, "user")
	cases := []struct {
		name      string
		configure func(*server.Options)
		good, bad []string
	}{
		{"user and password", func(o *server.Options) { o.Username, o.Password = "ann", "s3cret-pw" },
			[]string{"NATS_USER=ann", "NATS_PASSWORD=s3cret-pw"}, []string{"NATS_USER=ann", "NATS_PASSWORD=wrong"}},
		{"token", func(o *server.Options) { o.Authorization = "s3cret-token" },
			[]string{"NATS_TOKEN=s3cret-token"}, []string{"NATS_TOKEN=wrong"}},
		{"credentials file", configureOperator,
			[]string{"NATS_CREDS=" + creds}, []string{"NATS_CREDS=" + filepath.Join(dir, "missing.creds")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := testutil.StartServerWith(t, c.configure)
			args := []string{"tools", "list", "--json", "--server", url, "--format", "json"}
			if r := runCmdEnv(t, c.good, args...); r.code != 0 || !strings.Contains(r.stdout, `"tools"`) {
				t.Fatalf("with %q: exit %d stdout %s stderr %s", c.good, r.code, r.stdout, r.stderr)
			}
			for _, env := range [][]string{c.bad, nil} {
				r := runCmdEnv(t, env, args...)
				if r.code == 0 {
					t.Fatalf("with %q: connected, want a refusal", env)
				}
				for _, secret := range []string{"s3cret-pw", "s3cret-token"} {
					if strings.Contains(r.stderr, secret) {
						t.Fatalf("the secret leaked into stderr: %s", r.stderr)
					}
				}
			}
		})
	}
}

// A worker logs losing its server and finding it again.
func TestCommandLogsReconnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := func() *embedded.Server {
		srv, err := embedded.Start(context.Background(), embedded.Config{Listen: addr})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start()
	path := writeTools(t, "tools: [{name: t, binding: {cli: {cmd: cat}}}]")
	w, _ := startCLIWorker(t, srv.ClientURL(), path)
	_ = srv.Shutdown(context.Background())
	w.waitLine(t, regexp.MustCompile(`NATS connection lost; reconnecting`))
	srv = start()
	defer func() { _ = srv.Shutdown(context.Background()) }()
	w.waitLine(t, regexp.MustCompile(`NATS connection re-established.*server=nats://`+regexp.QuoteMeta(addr)))
}

// Defects once found in what the toolmesh command reports, each checked
// against the built binary and a real `toolmesh dev` mesh.

// An echo result with a member named success (or id) is a successful
// call: it arrives whole under "result" and the command exits 0.
func TestCommandResultCollision(t *testing.T) {
	_, url := startDev(t)
	for _, args := range []string{`{"message":"m","success":"yes"}`, `{"message":"m","id":"mine"}`} {
		r := runCmd(t, "", "call", "echo", "--server", url, "--args", args)
		var resp struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &resp) != nil || !resp.Success || string(resp.Result) != args {
			t.Errorf("echo %s: want exit 0 and the result whole: %+v", args, r)
		}
	}
}

// `toolmesh version` prints what --version prints, and the MCP gateway's
// serverInfo.version is the binary's version, not the literal "toolmesh".
func TestCommandVersionEverywhere(t *testing.T) {
	flag, sub := runCmd(t, "", "--version"), runCmd(t, "", "version")
	if sub.code != 0 || sub.stdout != flag.stdout || !strings.HasPrefix(sub.stdout, "toolmesh version ") {
		t.Fatalf("version printed %+v, --version %+v", sub, flag)
	}
	modVersion := strings.Fields(sub.stdout)[2] // toolmesh version <module version> commit …
	_, url := startDev(t)
	mc := connectMCP(t, &mcp.CommandTransport{Command: exec.Command(toolmeshBin(t), "mcp", "--server", url)}, protocolVersions[0])
	info := mc.cs.InitializeResult().ServerInfo
	if info == nil || info.Version == "toolmesh" || !strings.HasPrefix(info.Version, modVersion) {
		t.Fatalf("serverInfo %+v, want a version starting %q", info, modVersion)
	}
}

// A CLI tool that maps its exit code to invalid_input keeps its own fix
// through `toolmesh call` (not the command's usage fix, and no pointer to
// violations it does not have), and pretty mode prints the stderr tail
// the Problem carries.
func TestCommandKeepsTheToolsFixAndShowsStderr(t *testing.T) {
	_, url := startDev(t)
	tools := filepath.Join(t.TempDir(), "tools.yaml")
	yaml := `tools:
  - name: picky
    binding: {cli: {cmd: sh, args: ["-c", "echo 'picky: --level must be 1-3' >&2; exit 3"], exit_code_map: {3: invalid_input}}}
`
	if err := os.WriteFile(tools, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc(t, "worker", "--config", tools, "--server", url)
	var r result
	testutil.WaitFor(t, "picky on the mesh", func() bool {
		r = runCmd(t, "", "call", "picky", "--server", url, "--format", "json")
		return r.code != 3 // tool_not_found until the worker has joined
	})
	p := stderrProblem(t, r.stderr)
	want := envelope.NewProblem(envelope.CodeInvalidInput, "").SuggestedFix.Description
	if p.Code != envelope.CodeInvalidInput || p.SuggestedFix == nil || p.SuggestedFix.Description != want {
		t.Fatalf("the tool's invalid_input reached the user as %s with fix %+v, want the fix it was sent with (%q)", p.Code, p.SuggestedFix, want)
	}
	r = runCmd(t, "", "call", "picky", "--server", url, "--format", "pretty")
	if !strings.Contains(r.stderr, "stderr (tail):\n    picky: --level must be 1-3\n") || strings.Contains(r.stderr, "violations") {
		t.Fatalf("pretty stderr %q: want the program's stderr tail under its heading", r.stderr)
	}
}

// catalogue is what `toolmesh tools list --format json` prints.
type catalogue struct {
	Tools []struct {
		Spec struct{ Name string } `json:"spec"`
	} `json:"tools"`
	Workers  int  `json:"workers"`
	Complete bool `json:"complete"`
}

func listTools(t *testing.T, url string) catalogue {
	t.Helper()
	r := runCmd(t, "", "tools", "list", "--server", url, "--json")
	var c catalogue
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &c) != nil {
		t.Fatalf("tools list: %+v", r)
	}
	return c
}

// A worker whose tools file fails to load after it has joined the mesh (an
// MCP server's command not on PATH: exit 78) leaves nothing behind: the catalogue stays
// complete with the one worker that serves. A tools file that only bridges
// MCP servers starts no empty worker of its own.
func TestCommandWorkerLeavesNoPhantom(t *testing.T) {
	_, url := startDev(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	yaml := "tools:\n  - name: fine\n    binding: {cli: {cmd: \"true\"}}\n  - namespace: gone\n    binding:\n      mcp: {command: no-such-program-on-path-21}\n"
	if err := os.WriteFile(bad, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCmd(t, "", "worker", "--config", bad, "--server", url); r.code != 78 {
		t.Fatalf("worker with a missing program: %+v, want exit 78", r)
	}
	if c := listTools(t, url); c.Workers != 1 || !c.Complete {
		t.Fatalf("after the failed worker: %d workers, complete %v; want the dev worker alone, complete", c.Workers, c.Complete)
	}

	bridgeOnly := filepath.Join(dir, "bridge.yaml")
	yaml = fmt.Sprintf("tools:\n  - namespace: fake\n    binding:\n      mcp: {command: %q}\n", mcpServerBin(t))
	if err := os.WriteFile(bridgeOnly, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc(t, "worker", "--config", bridgeOnly, "--server", url)
	var c catalogue
	testutil.WaitFor(t, "the bridged tools in the catalogue", func() bool {
		c = listTools(t, url)
		return c.Complete && len(c.Tools) > 4
	})
	if c.Workers != 2 {
		t.Fatalf("dev and a bridge-only tools file: %d workers, want 2 (the dev worker and the bridge's)", c.Workers)
	}
}
