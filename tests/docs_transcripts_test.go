package tests

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A console block in README.md or docs/*.md is preceded by one marker:
//
//	<!-- transcript: check -->   run against a fresh `toolmesh dev`, compared
//	<!-- transcript: dev -->     the banner of `toolmesh dev`, compared
//	<!-- transcript: skip WHY --> not run; WHY says why it cannot be
//
// In an expected line "…" matches any text, a ULID any ULID, and a line
// that is only "…" any number of lines.
var transcriptMarker = regexp.MustCompile(`^<!-- transcript: (check|dev|skip) ?(.*?) ?-->$`)

// consoleBlock is one ```console block and the marker before it.
type consoleBlock struct {
	file   string
	line   int // of the opening fence
	kind   string
	reason string
	lines  []string
}

// TestDocsTranscripts keeps the console transcripts of the README and the
// guides true: every block whose command is deterministic is run with the
// built binary and must print what the block shows.
func TestDocsTranscripts(t *testing.T) {
	blocks := consoleBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("no ```console block in README.md or docs/*.md")
	}
	for _, b := range blocks {
		t.Run(filepath.Base(b.file)+":"+strconv.Itoa(b.line), func(t *testing.T) {
			switch b.kind {
			case "check":
				checkTranscript(t, b)
			case "dev":
				checkDevBanner(t, b)
			case "skip":
				if b.reason == "" {
					t.Fatal("a skipped transcript must say why")
				}
				t.Skip(b.reason)
			default:
				t.Fatal("a console block needs a <!-- transcript: check|dev|skip WHY --> marker on the line before it")
			}
		})
	}
}

// consoleBlocks reads every ```console block of README.md and docs/*.md
// (not the problem pages) with its marker.
func consoleBlocks(t *testing.T) []consoleBlock {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []consoleBlock
	for _, f := range append([]string{filepath.Join("..", "README.md")}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```console" {
				continue
			}
			cb := consoleBlock{file: f, line: i + 1}
			if i > 0 {
				if m := transcriptMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
					cb.kind, cb.reason = m[1], m[2]
				}
			}
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				cb.lines = append(cb.lines, lines[i])
			}
			out = append(out, cb)
		}
	}
	return out
}

// step is one command of a transcript and the output it shows.
type step struct {
	cmd  string
	want []string
}

func steps(lines []string) []step {
	var out []step
	for _, l := range lines {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			out = append(out, step{cmd: c})
		} else if len(out) > 0 {
			out[len(out)-1].want = append(out[len(out)-1].want, l)
		}
	}
	return out
}

// checkTranscript runs the block's commands in one shell against a dev
// mesh of its own, with the built toolmesh first on PATH, and compares
// each command's output (stdout and stderr as one stream, as a terminal
// shows them) with the block.
func checkTranscript(t *testing.T, b consoleBlock) {
	st := steps(b.lines)
	if len(st) == 0 {
		t.Fatal("a checked transcript has no $ command")
	}
	var script strings.Builder
	for i, s := range st {
		if strings.Contains(s.cmd, "jq ") {
			if _, err := exec.LookPath("jq"); err != nil {
				t.Skip("the transcript pipes into jq, which this machine lacks")
			}
		}
		// (exit N) hands the previous command's status on past the
		// separator's printf, so `echo $?` shows it.
		script.WriteString("printf '\\n\\036" + strconv.Itoa(i) + "\\n'; (exit ${st:-0})\n" + s.cmd + "\nst=$?\n")
	}
	_, url := startDev(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script.String())
	cmd.Env = append(os.Environ(), "NATS_URL="+url,
		"PATH="+filepath.Dir(toolmeshBin(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out // one pipe: the order the program wrote
	_ = cmd.Run()
	got := regexp.MustCompile(`\n\x1e\d+\n`).Split(out.String(), -1)
	if len(got) != len(st)+1 {
		t.Fatalf("%s:%d: the script ran %d of %d commands:\n%s", b.file, b.line, len(got)-1, len(st), out.String())
	}
	for i, s := range st {
		have := outputLines(got[i+1])
		if !matchLines(s.want, have) {
			t.Errorf("%s:%d: $ %s\nthe block shows:\n%s\nthe binary printed:\n%s", b.file, b.line, s.cmd,
				strings.Join(s.want, "\n"), strings.Join(have, "\n"))
		}
	}
}

// checkDevBanner starts `toolmesh dev` on a free port and compares its
// banner with the block's, the test's address standing for the default
// one (off the default address the banner adds a line naming it).
func checkDevBanner(t *testing.T, b consoleBlock) {
	st := steps(b.lines)
	if len(st) != 1 || st[0].cmd != "toolmesh dev" {
		t.Fatalf("a dev transcript is `$ toolmesh dev` and its banner, not %q", b.lines)
	}
	cmd := exec.Command(toolmeshBin(t), "dev", "--listen", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	banner := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if sc.Text() == "Ctrl-C drains and stops." {
				break
			}
		}
		banner <- lines
	}()
	var have []string
	select {
	case have = <-banner:
	case <-time.After(60 * time.Second):
		t.Fatal("toolmesh dev printed no banner")
	}
	url := regexp.MustCompile(`nats://127\.0\.0\.1:\d+`)
	var norm []string
	for _, l := range have {
		if strings.HasPrefix(strings.TrimSpace(l), "(with --server ") {
			continue
		}
		norm = append(norm, url.ReplaceAllString(l, "nats://127.0.0.1:4222"))
	}
	if !matchLines(st[0].want, norm) {
		t.Errorf("%s:%d: the block shows:\n%s\ntoolmesh dev printed:\n%s", b.file, b.line,
			strings.Join(st[0].want, "\n"), strings.Join(have, "\n"))
	}
}

// outputLines splits a command's output into lines, trailing blanks off.
func outputLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return lines
}

// matchLines reports whether have matches want line by line, "…" lines
// standing for any number of lines.
func matchLines(want, have []string) bool {
	if len(want) == 0 {
		return len(have) == 0
	}
	if strings.TrimSpace(want[0]) == "…" {
		for k := 0; k <= len(have); k++ {
			if matchLines(want[1:], have[k:]) {
				return true
			}
		}
		return false
	}
	return len(have) > 0 && lineMatcher(want[0]).MatchString(have[0]) && matchLines(want[1:], have[1:])
}

var transcriptULID = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)

// lineMatcher turns an expected line into a regular expression: "…" is
// any text, a ULID any ULID, the rest literal.
func lineMatcher(want string) *regexp.Regexp {
	want = strings.TrimRight(want, " \t")
	var re strings.Builder
	re.WriteString("^")
	for i, part := range strings.Split(want, "…") {
		if i > 0 {
			re.WriteString(".*")
		}
		last := 0
		for _, m := range transcriptULID.FindAllStringIndex(part, -1) {
			re.WriteString(regexp.QuoteMeta(part[last:m[0]]) + `[0-9A-HJKMNP-TV-Z]{26}`)
			last = m[1]
		}
		re.WriteString(regexp.QuoteMeta(part[last:]))
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String())
}
