package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
)

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
