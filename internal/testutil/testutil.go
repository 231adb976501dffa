package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WaitFor polls cond until it holds, failing the test after a generous
// bound. Tests use it to wait for observable state, never for a guessed
// duration.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	giveUp := time.After(20 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-giveUp:
			t.Fatalf("gave up waiting for %s", what)
		case <-tick.C:
		}
	}
}

// WaitPID waits until a program has written a pid and its newline to
// pidfile (the shell's `echo $! > pidfile`), and returns that pid.
func WaitPID(t testing.TB, pidfile string) int {
	t.Helper()
	var pid int
	WaitFor(t, "a pid in "+pidfile, func() bool {
		b, err := os.ReadFile(pidfile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	return pid
}

// BuildBinary builds the Go main package at pkg (a path relative to the
// calling test's directory) into a new temporary directory and returns the
// binary's path.
func BuildBinary(pkg, name string) (string, error) {
	dir, err := os.MkdirTemp("", name)
	if err != nil {
		return "", err
	}
	return BuildInto(dir, pkg, name)
}

// BuildInto builds the Go main package at pkg into dir/name, beside what
// dir holds (a program that finds its helper next to itself), and
// returns the binary's path.
func BuildInto(dir, pkg, name string) (string, error) {
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// ProcAlive reports whether pid runs: it exists and is not a zombie, as
// /proc says (Linux; elsewhere it reports false). Orphan tests use it to
// see that a process tree is gone.
func ProcAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// ProcPids are the pids /proc lists (Linux; elsewhere none).
func ProcPids(t testing.TB) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ProcCmdline is pid's command line as /proc says, its arguments joined
// by spaces ("" for a process that is gone).
func ProcCmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// Golden compares got with testdata/name, first rewriting the file with
// got when update is set (each package's -update flag).
func Golden(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, append(bytes.TrimSpace(got), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

// OpenDir is a new directory anyone may read and enter, removed when the
// test ends: a root test's confined programs run as nobody, and
// t.TempDir's parent is not theirs to enter.
func OpenDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
