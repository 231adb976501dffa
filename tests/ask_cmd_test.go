package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestCommandCallAnswers: `toolmesh call` without a terminal answers a
// tool's question from --answer, in order, and without one ends with
// input_required (exit 18) saying what was asked; a declined approval
// (dev --approve-destructive) is declined (exit 20) and the tool never ran.
func TestCommandCallAnswers(t *testing.T) {
	_, url := startDev(t, "--approve", "remove")
	args := []string{"call", "remove", "--server", url, "--args", `{"path":"/tmp/x"}`}
	cases := []struct {
		name    string
		answers []string
		code    int
		stdout  string // a regexp
		stderr  string // a substring
	}{
		{"approved and confirmed", []string{`{"approve":true}`, `{"confirm":true}`}, 0, `"success":true,"removed":"/tmp/x"`, ""},
		{"approved, then kept", []string{`{"approve":true}`, `{"confirm":false}`}, 0, `"success":true,"kept":"/tmp/x"`, ""},
		{"approval declined", []string{"decline"}, 20, `"code":"declined"`, `did not approve running remove`},
		{"answers used up", []string{`{"approve":true}`}, 18, `"code":"input_required"`, `Delete /tmp/x?`},
		{"no answers", nil, 18, `"code":"input_required"`, `Approve running remove?`},
		{"answer not fitting the schema", []string{`{"approve":"yes"}`}, 2, `"code":"invalid_input"`, `/approve`},
		{"answer not JSON", []string{`yes`}, 2, ``, `--answer`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := append([]string(nil), args...)
			for _, ans := range c.answers {
				a = append(a, "--answer", ans)
			}
			r := runCmd(t, "", a...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", r.code, c.code, r.stdout, r.stderr)
			}
			if !regexp.MustCompile(c.stdout).MatchString(r.stdout) || !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("stdout %q (want %s), stderr %q (want %q)", r.stdout, c.stdout, r.stderr, c.stderr)
			}
		})
	}
}

// screen collects what a program writes to a pseudo-terminal.
type screen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf.Write(p)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the screen shows want.
func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	giveUp := time.After(60 * time.Second)
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.changed:
		case <-giveUp:
			t.Fatalf("the terminal never showed %q: %q", want, s.String())
		}
	}
}

// TestCommandCallAsksOnTerminal: on a terminal, `toolmesh call` shows the
// tool's question and a form built from its schema; typing the answer
// completes the call, and stdout gets only the Response.
func TestCommandCallAsksOnTerminal(t *testing.T) {
	tc := callRemoveOnTerminal(t)
	cmd, ptmx, sc, stdout, copied := tc.cmd, tc.ptmx, tc.screen, &tc.stdout, tc.copied
	sc.waitFor(t, "Delete /tmp/demo? (a demo: nothing is deleted)")
	sc.waitFor(t, "delete it?) [y/n]: ")
	if _, err := ptmx.Write([]byte("maybe\n")); err != nil {
		t.Fatal(err)
	}
	sc.waitFor(t, "y or n")
	if _, err := ptmx.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("call on a terminal: %v; terminal showed %q", err, sc.String())
	}
	<-copied
	if !regexp.MustCompile(`^\{"id":"` + ulidRe + `","success":true,"removed":"/tmp/demo"\}\n$`).MatchString(stdout.String()) {
		t.Errorf("stdout = %q, want only the Response", stdout.String())
	}
}

// TestCommandCallQuestionStopsTheSpinner: on a terminal, the progress
// display stops while a question waits for its answer, so the prompt line
// stays as the form wrote it instead of being redrawn as "⠼ remove [1s]…".
func TestCommandCallQuestionStopsTheSpinner(t *testing.T) {
	tc := callRemoveOnTerminal(t)
	cmd, ptmx, sc, stdout, copied := tc.cmd, tc.ptmx, tc.screen, &tc.stdout, tc.copied
	const prompt = "delete it?) [y/n]: "
	sc.waitFor(t, prompt)
	// An observation window, not a synchronisation: a display that kept
	// running would redraw several times in it (it ticks every 100ms).
	<-time.After(time.Second)
	shown := sc.String()
	if after := shown[strings.LastIndex(shown, prompt)+len(prompt):]; after != "" {
		t.Errorf("the terminal was written to while the question waited: %q", after)
	}
	if _, err := ptmx.Write([]byte("n\n")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("call on a terminal: %v; terminal showed %q", err, sc.String())
	}
	<-copied
	var promptLine string
	for _, l := range renderLines(sc.String()) {
		if strings.Contains(l, prompt) {
			promptLine = l
		}
	}
	if !strings.HasSuffix(promptLine, prompt+"n") || strings.ContainsAny(promptLine, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") {
		t.Errorf("the prompt line reads %q; want the form's prompt and the typed answer", promptLine)
	}
	if !strings.Contains(stdout.String(), `"kept":"/tmp/demo"`) {
		t.Errorf("stdout = %q, want the Response of a kept file", stdout.String())
	}
}

// terminalCall is `toolmesh call remove` running on a pseudo-terminal
// against a fresh dev mesh: the terminal's side, what it has shown, the
// call's stdout, and copied, closed once the terminal has no more to show.
type terminalCall struct {
	cmd    *exec.Cmd
	ptmx   *os.File
	screen *screen
	stdout bytes.Buffer
	copied chan struct{}
}

// callRemoveOnTerminal starts the demo tool remove, which asks before it
// deletes, with stdin and stderr on a terminal; the test skips where no
// pseudo-terminal can be opened.
func callRemoveOnTerminal(t *testing.T) *terminalCall {
	t.Helper()
	_, url := startDev(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	t.Cleanup(func() { _ = ptmx.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	tc := &terminalCall{ptmx: ptmx, screen: &screen{changed: make(chan struct{}, 1)}, copied: make(chan struct{})}
	tc.cmd = exec.CommandContext(ctx, toolmeshBin(t), "call", "remove", "--server", url, "--args", `{"path":"/tmp/demo"}`)
	tc.cmd.Stdin, tc.cmd.Stdout, tc.cmd.Stderr = tty, &tc.stdout, tty
	if err := tc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close()
	go func() {
		defer close(tc.copied)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			_, _ = tc.screen.Write(buf[:n])
			if err != nil {
				return // EIO once the child closes the terminal
			}
		}
	}()
	return tc
}

// renderLines is what a terminal shows of out: a carriage return goes
// back to the line's start and later text overwrites, ESC[2K and ESC[K
// clear the line (this display's only control sequences).
func renderLines(out string) []string {
	var lines []string
	var line []rune
	col := 0
	put := func(r rune) {
		if col < len(line) {
			line[col] = r
		} else {
			line = append(line, r)
		}
		col++
	}
	rs := []rune(out)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == '\n':
			lines = append(lines, string(line))
			line, col = nil, 0
		case r == '\r':
			col = 0
		case r == 0x1b && i+1 < len(rs) && rs[i+1] == '[':
			j := i + 2
			for j < len(rs) && (rs[j] < '@' || rs[j] > '~') {
				j++
			}
			if j < len(rs) && rs[j] == 'K' {
				line = line[:min(col, len(line))]
				if strings.HasPrefix(string(rs[i+2:j]), "2") {
					line, col = nil, 0
				}
			}
			i = j
		default:
			put(r)
		}
	}
	return append(lines, string(line))
}

// An answer that does not fit the question's schema says so in English.
func TestCommandAnswerMismatchWording(t *testing.T) {
	_, url := startDev(t)
	r := runCmd(t, "", "call", "remove", "--server", url, "--args", `{"path":"/tmp/x"}`, "--answer", `{"confirm":"yes"}`)
	if r.code != 2 || !strings.Contains(r.stderr, "answer does not match the schema") {
		t.Errorf("exit %d, stderr %s; want invalid_input saying the answer does not match the schema", r.code, r.stderr)
	}
}
