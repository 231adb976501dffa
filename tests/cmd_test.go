package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
	"github.com/toolmesh/toolmesh/internal/testutil"
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
