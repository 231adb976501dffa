// Package testutil holds helpers shared by the project's tests.
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// BuildBinary builds the Go main package at pkg (a path relative to the
// calling test's directory) into a new temporary directory and returns the
// binary's path.
func BuildBinary(pkg, name string) (string, error) {
	dir, err := os.MkdirTemp("", name)
	if err != nil {
		return "", err
	}
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
